/**
 * Request terms shared by paid writes: the pin duration header and the
 * dates it yields.
 */
import { InvalidInputError } from '../errors.js'

export const DURATION_HEADER = 'x-pin-duration-months'

export function parseMonths (raw: string | string[] | undefined, maxMonths: number): number {
  if (raw == null) return 1
  if (Array.isArray(raw)) throw new InvalidInputError('send X-Pin-Duration-Months once')
  const s = raw.trim()
  if (!/^\d{1,3}$/.test(s) || Number(s) < 1 || Number(s) > maxMonths) {
    throw new InvalidInputError(`X-Pin-Duration-Months must be a whole number of months from 1 to ${maxMonths}; got "${s.slice(0, 20)}"`)
  }
  return Number(s)
}
