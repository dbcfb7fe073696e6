/**
 * The request headers of paid writes: how long to pin (X-Pin-Duration-Months)
 * and the sizes a client declares (X-Upload-Size, X-Pin-Size,
 * Content-Length), parsed into plain numbers for the service.
 */
import type { IncomingMessage } from 'node:http'
import { InvalidInputError } from '../errors.js'

export const DURATION_HEADER = 'x-pin-duration-months'
export const UPLOAD_SIZE_HEADER = 'x-upload-size'
export const PIN_SIZE_HEADER = 'x-pin-size'

export function parseMonths (raw: string | string[] | undefined, maxMonths: number): number {
  if (raw == null) return 1
  if (Array.isArray(raw)) throw new InvalidInputError('send X-Pin-Duration-Months once')
  const s = raw.trim()
  if (!/^\d{1,3}$/.test(s) || Number(s) < 1 || Number(s) > maxMonths) {
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
  if (typeof raw !== 'string' || !/^\d{1,16}$/.test(raw.trim())) {
    if (refusal != null) throw new InvalidInputError(refusal)
    return undefined
  }
  return Number(raw.trim())
}
