/**
 * The ledger's "no" to ServePolicy's two questions (is this block part of a
 * pin's DAG, is a live pinned pin rooted at it), remembered until the ledger
 * next commits a change that could turn it into a "yes".
 *
 * Most of what is asked names nothing pinned here: an unpaid 402's size
 * probe for a CID not held, a gateway request for one, a peer's bitswap want.
 * On LMDB each question is a read of the memory-mapped file, and the first
 * read of a turn of the event loop renews lmdb's read transaction (a native
 * call and a timer): perf put the two reads at ~7% of the unknown-CID 402
 * (~13 µs of ~190). A "no" asked again is now a Map lookup.
 *
 * Only the "no" is kept, and only for the present: a block becomes
 * referenced and a pin becomes pinned only through a committed write, and
 * every committed write that references blocks or writes a pin is told by
 * the ledger's change feed (PinLedger.watchCommitted) as its promise
 * resolves, after lmdb has renewed its read transaction for it. That
 * empties the memo, so an answer is never older than what the ledger said
 * at the last such commit. A "yes" is never kept (a pin's life ends with
 * time, without a write; a block stops being referenced by a write this
 * memo does not need to see). `hasLivePin` asked about another moment than
 * now is not kept either.
 *
 * Bounded: at most `max` CIDs (the oldest dropped first), ~100 bytes each.
 */
import type { CID } from 'multiformats/cid'
import type { CommittedChanges } from '../../ledger/changes.js'
import { codecAndMultihash } from './cid-set.js'
import type { ServableIndex } from './servable-blocks.js'

/** a CID's answers known to be "no": bit 1 not a referenced block, bit 2 no live pinned root */
const NOT_PINNED_BLOCK = 1
const NO_LIVE_PIN = 2

export class UnservedMemo implements ServableIndex {
  private readonly no = new Map<string, number>()
  private readonly unwatch: () => void
  /** the last CID asked and its key (isPinnedBlock then hasLivePin ask about the same object) */
  private lastCid: CID | undefined
  private lastKey = ''

  constructor (
    private readonly ledger: ServableIndex,
    changes: { watchCommitted: (fn: (c: CommittedChanges) => void) => () => void },
    private readonly max = 4096
  ) {
    this.unwatch = changes.watchCommitted((c) => {
      if (c.referenced.length > 0 || c.pins.length > 0) this.no.clear()
    })
  }

  isPinnedBlock (cid: CID): boolean {
    return this.ask(cid, NOT_PINNED_BLOCK, () => this.ledger.isPinnedBlock(cid))
  }

  hasLivePin (cid: CID, now?: Date): boolean {
    if (now != null) return this.ledger.hasLivePin(cid, now)
    return this.ask(cid, NO_LIVE_PIN, () => this.ledger.hasLivePin(cid))
  }

  /** CIDs with a "no" remembered */
  get size (): number {
    return this.no.size
  }

  /** Stops following the ledger; the memo is emptied. */
  close (): void {
    this.unwatch()
    this.no.clear()
  }

  private ask (cid: CID, bit: number, read: () => boolean): boolean {
    const key = this.keyOf(cid)
    const known = this.no.get(key) ?? 0
    if ((known & bit) !== 0) return false
    if (read()) return true
    if (known === 0 && this.no.size >= this.max) this.no.delete(this.no.keys().next().value as string)
    this.no.set(key, known | bit)
    return false
  }

  private keyOf (cid: CID): string {
    if (cid !== this.lastCid) {
      this.lastKey = codecAndMultihash(cid)
      this.lastCid = cid
    }
    return this.lastKey
  }
}
