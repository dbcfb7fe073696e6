/**
 * Value parsers for settings. Each takes a raw value (a string from a flag or
 * the environment, or a JSON value from the config file) and returns the typed
 * value or throws a ConfigValueError whose message says what is expected.
 */
export class ConfigValueError extends Error {
  override name = 'ConfigValueError'
}

export type Parser<T> = (raw: unknown) => T

export const str: Parser<string> = (raw) => {
  if (typeof raw !== 'string' || raw.trim() === '') throw new ConfigValueError('expected a non-empty string')
  return raw.trim()
}

export function int (min: number, max: number): Parser<number> {
  return (raw) => {
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new ConfigValueError(`expected an integer from ${min} to ${max}`)
    return n
  }
}

/** Non-negative integer amounts (atomic units) as bigint. */
export function atomic (max: bigint = 10n ** 30n): Parser<bigint> {
  return (raw) => {
    const s = typeof raw === 'number' && Number.isSafeInteger(raw) ? String(raw) : typeof raw === 'string' ? raw.trim() : ''
    if (!/^\d+$/.test(s)) throw new ConfigValueError('expected a whole number of atomic units (e.g. 100000 = 0.10 USDC)')
    const v = BigInt(s)
    if (v > max) throw new ConfigValueError(`expected at most ${max}`)
    return v
  }
}

export function oneOf<T extends string> (values: readonly T[]): Parser<T> {
  return (raw) => {
    if (typeof raw !== 'string' || !values.includes(raw.trim() as T)) throw new ConfigValueError(`expected one of ${values.join(', ')}`)
    return raw.trim() as T
  }
}

export const bool: Parser<boolean> = (raw) => {
  if (typeof raw === 'boolean') return raw
  if (typeof raw === 'string') {
    const s = raw.trim().toLowerCase()
    if (['1', 'true', 'yes', 'on'].includes(s)) return true
    if (['0', 'false', 'no', 'off'].includes(s)) return false
  }
  throw new ConfigValueError('expected true or false')
}

/** A list: a JSON array in the config file, comma-separated in flags and the environment. */
export function list<T> (item: Parser<T>): Parser<T[]> {
  return (raw) => {
    const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',').map(s => s.trim()).filter(s => s !== '') : null
    if (items == null) throw new ConfigValueError('expected a list (comma-separated, or a JSON array in the config file)')
    return items.map((v, i) => {
      try { return item(v) } catch (err) { throw new ConfigValueError(`item ${i + 1}: ${(err as Error).message}`) }
    })
  }
}

export const httpUrl: Parser<string> = (raw) => {
  const s = str(raw)
  let u: URL
  try { u = new URL(s) } catch { throw new ConfigValueError('expected an http(s) URL') }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConfigValueError('expected an http(s) URL')
  return s.replace(/\/+$/, '')
}

export const address: Parser<`0x${string}`> = (raw) => {
  const s = str(raw)
  if (!/^0x[0-9a-fA-F]{40}$/.test(s)) throw new ConfigValueError('expected a 0x-prefixed 20-byte hex address')
  return s as `0x${string}`
}

export const privateKeyHex: Parser<`0x${string}`> = (raw) => {
  const s = str(raw)
  const hex = s.startsWith('0x') ? s : `0x${s}`
  if (!/^0x[0-9a-fA-F]{64}$/.test(hex)) throw new ConfigValueError('expected a 32-byte hex private key')
  return hex as `0x${string}`
}

export const caip2: Parser<string> = (raw) => {
  const s = str(raw)
  if (!/^eip155:\d+$/.test(s)) throw new ConfigValueError('expected a CAIP-2 EVM network id such as eip155:167000')
  return s
}

/** Durations: a number of seconds, or a number with a unit s, m, h, d (e.g. 30d). Returns seconds. */
export function duration (minSeconds: number, maxSeconds: number): Parser<number> {
  return (raw) => {
    const s = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : ''
    const m = /^(\d+)(s|m|h|d)?$/.exec(s)
    if (m == null) throw new ConfigValueError('expected a duration such as 90, 90s, 15m, 12h or 30d')
    const secs = Number(m[1]) * ({ s: 1, m: 60, h: 3600, d: 86400 }[m[2] as 's' | 'm' | 'h' | 'd' ?? 's'] ?? 1)
    if (!Number.isSafeInteger(secs) || secs < minSeconds || secs > maxSeconds) throw new ConfigValueError(`expected a duration from ${minSeconds}s to ${maxSeconds}s`)
    return secs
  }
}
