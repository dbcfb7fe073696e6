/**
 * The owner's counts of pins not removed (ownerCounts, ownerBuckets,
 * ownerExpiry: ./pins.ts), kept in the transaction of every write of a pin
 * (./pin-store.ts putPin), and GET /pins' count read from them (ownerCount).
 */
import type { Database, Key } from 'lmdb'
import type { PinState } from '../records.js'
import { readSummary } from './stored.js'
import { statesByOwner, type OwnerPinState, type OwnerState } from './summaries.js'
import type { OwnerKey, PinTables } from './tables.js'

/** the span of creation times (µs) each of ownerBuckets' counts covers: 2^32 µs, ~72 minutes */
export const BUCKET_US = 2 ** 32
/** the meta fact holding, while the index:owner-counts upgrade runs, the last owner whose counts it has built (ownerCountsKept) */
export const OWNER_COUNTS_AFTER = 'index:owner-counts:after'

export class OwnerCounts {
  /** whether every owner's counts are kept (the index:owner-counts upgrade has run; read from the ledger until it is true) */
  countsBuilt = false

  /** `graceMs`: how long after pinned_until a pin still counts as live (PinLedger.graceMs) */
  constructor (private readonly t: PinTables, private readonly graceMs: number) {}

  /** the owner index's entry at `key` as status and pinned_until: undefined when there is none or it is of a removed pin */
  liveStateAt (key: OwnerKey): OwnerState | undefined {
    const state = this.t.byOwnerStates.get(key)
    if (state === undefined || state === 'removed') return undefined
    if (state !== 'undecoded') return state
    const stored = this.t.byOwner.get(key)
    const summary = stored !== undefined ? readSummary(key[2], stored) : undefined
    return summary != null && !summary.removed ? { status: summary.status, until: summary.until } : undefined
  }

  /**
   * Are this owner's counts kept (ownerCounts, ownerExpiry)? Every owner's
   * once the index:owner-counts upgrade has run (a new ledger: from the
   * start); while it runs, those of the owners it has done (it goes in
   * owner order). The others are left to it: it counts them afresh.
   */
  ownerCountsKept (owner: string): boolean {
    if (this.countsReady()) return true
    const after = this.t.env.fact(OWNER_COUNTS_AFTER)
    return typeof after === 'string' && Buffer.compare(Buffer.from(owner), Buffer.from(after)) <= 0
  }

  /** has the index:owner-counts upgrade run (every owner's counts kept)? */
  countsReady (): boolean {
    if (!this.countsBuilt && this.t.env.upgraded('index:owner-counts')) this.countsBuilt = true
    return this.countsBuilt
  }

  /** moves a pin of `owner` from one state (undefined: none, or removed) to another in its counts (inside the transaction that writes it) */
  recount (owner: string, requestid: string, createdUs: number, was: OwnerState | undefined, now: OwnerState | undefined): void {
    if (was?.status === now?.status && (was?.until === now?.until || (Number.isNaN(was?.until) && Number.isNaN(now?.until)))) return
    const bucket = Math.floor(createdUs / BUCKET_US)
    if (was != null) {
      this.addCount(this.t.ownerCounts, [owner, was.status], -1)
      this.addCount(this.t.ownerBuckets, [owner, was.status, bucket], -1)
      if (Number.isFinite(was.until)) this.t.ownerExpiry.remove([owner, was.until, requestid])
    }
    if (now != null) {
      this.addCount(this.t.ownerCounts, [owner, now.status], 1)
      this.addCount(this.t.ownerBuckets, [owner, now.status, bucket], 1)
      // a pinned_until that is not a date never passes (listPins' stateMatches): nothing to take off
      if (Number.isFinite(now.until)) this.t.ownerExpiry.put([owner, now.until, requestid], [now.status, createdUs])
    }
  }

  private addCount<K extends Key> (db: Database<number, K>, key: K, by: number): void {
    const n = (db.get(key) ?? 0) + by
    if (n > 0) db.put(key, n)
    else db.remove(key)
  }

  /** PinLedger.ownerCount (which says how the count is kept) */
  ownerCount (owner: string, statuses: ReadonlySet<PinState>, now: number, beforeUs?: number, afterUs?: number): number | undefined {
    if (!this.countsReady()) return undefined
    let n = 0
    if (beforeUs == null && afterUs == null) {
      for (const status of statuses) n += this.t.ownerCounts.get([owner, status]) ?? 0
      return n - this.expiredIn(owner, statuses, now, -Infinity, Infinity)
    }
    // created strictly between afterUs and beforeUs: the spans of ownerBuckets inside that, and the pins at either end read
    const lo = afterUs ?? -1
    const hi = beforeUs ?? Number.MAX_SAFE_INTEGER
    const first = Math.floor((lo + 1) / BUCKET_US) + 1
    const end = Math.floor((hi - 1) / BUCKET_US)
    // no whole span between the ends: the window is read as it is (undefined: listPins counts)
    if (end - first < 1) return undefined
    const fromUs = first * BUCKET_US
    const toUs = end * BUCKET_US
    const counted = (s: OwnerPinState): boolean => statuses.has(s.status) && (s.status === 'failed' || s.until + this.graceMs > now)
    for (const s of statesByOwner(this.t, owner, fromUs, lo)) if (counted(s)) n++
    for (const s of statesByOwner(this.t, owner, hi, toUs - 1)) if (counted(s)) n++
    for (const status of statuses) {
      for (const { value } of this.t.ownerBuckets.getRange({ start: [owner, status, first], end: [owner, status, end] })) n += value
    }
    return n - this.expiredIn(owner, statuses, now, fromUs, toUs)
  }

  /** how many of the owner's pins with these statuses created in [fromUs, toUs) are past their pinned_until and the grace at `now` (failed ones never are) */
  private expiredIn (owner: string, statuses: ReadonlySet<PinState>, now: number, fromUs: number, toUs: number): number {
    let n = 0
    for (const { key, value: [status, createdUs] } of this.t.ownerExpiry.getRange({ start: [owner] })) {
      if (key[0] !== owner || key[1] + this.graceMs > now) break
      if (status !== 'failed' && statuses.has(status) && createdUs >= fromUs && createdUs < toUs) n++
    }
    return n
  }
}
