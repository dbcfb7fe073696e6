/**
 * The whole state a follower of the ledger loads (LedgerChanges, ../changes.ts),
 * in batches, each a read of its own so the event loop is free between them.
 */
import type { Database, Key } from 'lmdb'
import type { PinChange } from '../changes.js'
import { sameKey } from './batches.js'
import { readSummary, type StoredSummary } from './stored.js'
import type { OwnerKey, PinTables } from './tables.js'

/** PinLedger.referencedBatches */
export async function * referencedBatches (t: PinTables, batch: number): AsyncGenerator<string[]> {
  yield * keyBatches(t.blockRefs, batch, (key) => key)
}

/** PinLedger.livePinBatches */
export async function * livePinBatches (t: PinTables, batch: number): AsyncGenerator<PinChange[]> {
  let after: OwnerKey | undefined
  for (;;) {
    const out: PinChange[] = []
    let last: OwnerKey | undefined
    for (const { key, value } of t.byOwner.getRange(after === undefined ? { limit: batch } : { start: after, limit: batch + 1 })) {
      if (after !== undefined && sameKey(key, after)) continue
      last = key
      const p = livePinOf(key[2], value)
      if (p != null) out.push(p)
    }
    if (last === undefined) return
    after = last
    yield out
  }
}

/** the keys of `db`, `batch` a time */
async function * keyBatches<K extends Key, T> (db: Database<unknown, K>, batch: number, map: (key: K) => T): AsyncGenerator<T[]> {
  let after: K | undefined
  for (;;) {
    const out: T[] = []
    let last: K | undefined
    for (const key of db.getKeys(after === undefined ? { limit: batch } : { start: after, limit: batch + 1 })) {
      if (after !== undefined && sameKey(key, after)) continue
      last = key
      out.push(map(key))
    }
    if (last === undefined) return
    after = last
    yield out
  }
}

/** a summary not removed as a PinChange */
function livePinOf (requestid: string, stored: StoredSummary): PinChange | undefined {
  // an older layout's map, read in place (readSummary copies it whole)
  if (!Array.isArray(stored)) return stored.removed ? undefined : { root: stored.cid, requestid, status: stored.status, until: stored.until, removed: false }
  const s = readSummary(requestid, stored)
  return s.removed ? undefined : { root: s.cid, requestid, status: s.status, until: s.until, removed: false }
}
