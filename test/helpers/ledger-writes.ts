/**
 * Random writes of the LMDB pin ledger, for the tests that follow its committed changes
 * (ServableBlocks, ServableMemo): creates and replacements with blocks, fetches finished and
 * failed, removals, takedowns, renewals, updates, the expiry sweep at a random time, and an
 * import batch aborted after writing a pin with blocks.
 */
import type { PinLedger } from '../../src/ledger/lmdb/pins.js'
import type { PinRecord } from '../../src/ledger/records.js'
import { pinRecord } from './records.js'

const DAY = 86_400_000

export interface RandomWrites {
  /** one random write; its promise (rejects for the aborted ones) */
  write: () => Promise<unknown>
  /** the requestids written so far */
  ids: string[]
}

/** `keys`: the CIDs pins and blocks are drawn from; `times`: the moments the expiry sweep may run at */
export function randomPinWrites (ledger: PinLedger, rnd: () => number, keys: string[], o: { prefix: string, now: number, times: Date[] }): RandomWrites {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)] as T
  const ids: string[] = []
  let n = 0
  const blocksOf = (): string[] => Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => pick(keys))
  const until = (): string => new Date(o.now + pick([-DAY, 2 * DAY, 3 * DAY, 5 * DAY])).toISOString()
  const fresh = (extra: Partial<PinRecord> = {}): PinRecord => {
    const id = `${o.prefix}-${n++}`
    ids.push(id)
    return pinRecord(id, pick(keys), { status: pick(['pinned', 'queued', 'pinning', 'failed'] as const), owner: '0xa', pinnedUntil: until(), ...extra })
  }
  const write = (): Promise<unknown> => {
    const r = rnd()
    const id = ids.length > 0 ? pick(ids) : undefined
    if (id == null || r < 0.25) {
      const p = fresh()
      return ledger.create(p, undefined, p.status === 'pinned' ? blocksOf() : [])
    }
    if (r < 0.35) return ledger.create(fresh({ status: pick(['queued', 'pinned'] as const), replaces: id }), undefined, blocksOf())
    if (r < 0.45) return ledger.finishFetch(id, blocksOf(), 100, 'pinned')
    if (r < 0.5) return ledger.failFetch(id, 'too large')
    if (r < 0.6) return ledger.remove(id, pick(['unpinned', 'expired'] as const))
    if (r < 0.65) return ledger.takeDown(id, 'court order')
    if (r < 0.75) return ledger.renew(id, 1, undefined, () => new Date(until()))
    if (r < 0.8) return ledger.update(id, (p) => ({ ...p, status: pick(['pinned', 'queued'] as const), pinnedUntil: until() }))
    if (r < 0.9) {
      // the expiry sweep at a random time: every pin past its pinned_until then is removed
      const cutoff = pick(o.times)
      return (async () => { for (const e of [...ledger.expiredBy(cutoff)]) await ledger.remove(e, 'expired') })()
    }
    // aborted after writing a pin with blocks: its second pin exists already
    const p = fresh({ status: 'pinned' })
    return ledger.importBatch([{ pin: p, blocks: blocksOf() }, { pin: { ...p }, blocks: blocksOf() }], [])
  }
  return { write, ids }
}
