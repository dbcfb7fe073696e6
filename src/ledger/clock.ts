/**
 * A strictly increasing microsecond clock, so every pin's `created` is unique
 * and ordered (Kubo pages with before=<created of the oldest seen>).
 */
let last = 0

export function nextCreated (now: number = Date.now()): { us: number, iso: string } {
  let us = now * 1000
  if (us <= last) us = last + 1
  last = us
  return { us, iso: isoMicros(us) }
}

export function isoMicros (us: number): string {
  const ms = Math.floor(us / 1000)
  const base = new Date(ms).toISOString() // 2026-11-22T03:20:38.955Z
  return `${base.slice(0, 23)}${String(us % 1000).padStart(3, '0')}Z`
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
