/**
 * The request headers of paid writes: how long to pin (X-Pin-Duration-Months)
 * and the sizes a client declares (X-Upload-Size, X-Pin-Size,
 * Content-Length), parsed into plain numbers for the service. Their values
 * are the zod schemas of WriteHeaders: the OpenAPI parameters DurationMonths,
 * UploadSize and PinSize are derived from them (src/http/openapi.ts adds the
 * limits the settings set: the most months, the largest upload).
 */
import type { IncomingMessage } from 'node:http'
import { z } from 'zod/v4'
import { InvalidInputError } from '../kernel/errors.js'

export const DURATION_HEADER = 'x-pin-duration-months'
export const UPLOAD_SIZE_HEADER = 'x-upload-size'
export const PIN_SIZE_HEADER = 'x-pin-size'

/** months to pin, from 1 (the most is a setting: parseMonths' `maxMonths`) */
const Months = z.int().min(1)
/** a count of bytes */
const ByteCount = z.int().min(0)

/** the headers of paid writes, by name as sent, with their values once decoded */
export const WriteHeaders = z.object({
  'X-Pin-Duration-Months': Months.default(1).meta({ description: 'How many months to pin (or to add, for a renewal); default 1' }),
  'X-Upload-Size': ByteCount.meta({ description: 'The file\'s size in bytes: the 402 is quoted on it (else on Content-Length), and the paid upload may carry at most that many file bytes' }),
  'X-Pin-Size': ByteCount.meta({ description: 'The size of the whole DAG in bytes: the quote uses it when larger than what the root block declares, or when the root cannot be read in time' })
})

/** the months of a write that does not say (the schema's default, read once: not a zod run per request) */
const DEFAULT_MONTHS: number = WriteHeaders.shape['X-Pin-Duration-Months'].parse(undefined)

export function parseMonths (raw: string | string[] | undefined, maxMonths: number): number {
  if (raw == null) return DEFAULT_MONTHS
  if (Array.isArray(raw)) throw new InvalidInputError('send X-Pin-Duration-Months once')
  const s = raw.trim()
  if (!/^\d{1,3}$/.test(s) || !Months.safeParse(Number(s)).success || Number(s) > maxMonths) {
    throw new InvalidInputError(`X-Pin-Duration-Months must be a whole number of months from 1 to ${maxMonths}; got "${s.slice(0, 20)}"`)
  }
  return Number(s)
}

/**
 * A byte count header, when sent. A malformed one is refused with `refusal`
 * when given, else treated as absent.
 */
export function byteCount (req: IncomingMessage, name: string, refusal?: string): number | undefined {
  const raw = req.headers[name]
  if (raw == null) return undefined
  const n = typeof raw === 'string' && /^\d{1,16}$/.test(raw.trim()) ? ByteCount.safeParse(Number(raw.trim())) : undefined
  if (n?.success !== true) {
    if (refusal != null) throw new InvalidInputError(refusal)
    return undefined
  }
  return n.data
}
