/**
 * A strictly increasing clock for pins' `created`, so every value is unique
 * and ordered (Kubo pages with before=<created of the oldest seen>). Values
 * step by at least one whole millisecond: clients that parse `created` into a
 * millisecond Date (the generated JS client does) still page exactly.
 * Stored in microseconds so the precision can grow without a migration.
 */
let last = 0
/** while set: a ledger upgrade still reads the highest `created` its pins hold (seedClock follows) */
let seeding: Promise<void> | undefined

/**
 * Until `seeded` settles, clockReady() waits for it: a ledger upgrade that
 * runs while serve serves (PinLedger.upgradeLater) reads the highest
 * `created` of every pin first, and no pin may be created before it has.
 */
export function holdClock (seeded: Promise<void>): void {
  const held: Promise<void> = seeded.catch(() => {}).finally(() => { if (seeding === held) seeding = undefined })
  seeding = held
}

/** Resolves once nextCreated() hands out values after every pin's in the ledger (at once, unless an upgrade still reads them). */
export async function clockReady (): Promise<void> {
  if (seeding != null) await seeding
}

export function nextCreated (now: number = Date.now()): { us: number, iso: string } {
  let us = now * 1000
  if (us <= last) us = last + 1000
  last = us
  return { us, iso: isoMicros(us) }
}

export function isoMicros (us: number): string {
  const ms = Math.floor(us / 1000)
  const base = new Date(ms).toISOString() // 2026-11-22T03:20:38.955Z
  return us % 1000 === 0 ? base : `${base.slice(0, 23)}${String(us % 1000).padStart(3, '0')}Z`
}

/** Parses an RFC 3339 timestamp into microseconds since the epoch (up to 6 fractional digits). */
export function parseMicros (s: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/i.exec(s)
  if (m == null) return undefined
  const ms = Date.parse(`${m[1]}${m[3]}`)
  if (Number.isNaN(ms)) return undefined
  // Date.parse rolls impossible dates over (2026-02-31 → March 3): refuse them
  const [y, mo, d, h, mi, se] = (m[1] as string).split(/[-T:]/).map(Number) as [number, number, number, number, number, number]
  const check = new Date(Date.UTC(y, mo - 1, d, h, mi, se))
  if (check.getUTCFullYear() !== y || check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d || h > 23 || mi > 59 || se > 59) return undefined
  const frac = (m[2] ?? '').padEnd(6, '0').slice(0, 6)
  return ms * 1000 + Number(frac)
}

/** Adds calendar months in UTC (clamping the day, e.g. Jan 31 + 1 month = Feb 28/29). */
export function addMonths (from: Date, months: number): Date {
  const d = new Date(from.getTime())
  const day = d.getUTCDate()
  d.setUTCDate(1)
  d.setUTCMonth(d.getUTCMonth() + months)
  const lastDay = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate()
  d.setUTCDate(Math.min(day, lastDay))
  return d
}

/** Never hand out a time at or before one already in the ledger (clock steps back across a restart). */
export function seedClock (maxUsInLedger: number): void {
  if (maxUsInLedger > last) last = maxUsInLedger
}
