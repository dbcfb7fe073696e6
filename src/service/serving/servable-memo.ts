/**
 * The ledger's answers to ServePolicy's two questions (is this block part of
 * a pin's DAG, is a live pinned pin rooted at it), remembered until the
 * ledger next commits a change.
 *
 * Most of what is asked names nothing pinned here: an unpaid 402's size
 * probe for a CID not held, a gateway request for one, a peer's bitswap want;
 * the rest asks again and again about the same few roots (a 402 for a CID
 * held here, a site's pages). On LMDB each question is a read of the
 * memory-mapped file, and the first read of a turn of the event loop renews
 * lmdb's read transaction (a native call and a timer): perf put the two reads
 * at ~7% of the unknown-CID 402 (~13 µs of ~190). Asked again, an answer is
 * now a Map lookup.
 *
 * What is kept, and until when:
 *   - "not a referenced block", "no live pinned root", and "a referenced
 *     block", until the ledger's change feed (PinLedger.watchCommitted) tells
 *     of a committed write that referenced or released blocks or wrote a
 *     pin: the only ways these answers change. The feed tells a commit as its
 *     promise resolves, after lmdb has renewed its read snapshot for it; the
 *     memo is then emptied, so an answer is never older than what the ledger
 *     said at the last such commit.
 *   - never "a live pinned root": a pin's life ends with time, without a
 *     write. Nor `hasLivePin` asked about another moment than now.
 *
 * Bounded: at most `max` CIDs (the oldest dropped first), ~100 bytes each.
 */
import type { CID } from 'multiformats/cid'
import type { CommittedChanges } from '../../ledger/changes.js'
import { codecAndMultihash } from './cid-set.js'
import type { ServableIndex } from './servable-blocks.js'

/** a CID's answers known: not a referenced block, no live pinned root, a referenced block */
const NOT_PINNED_BLOCK = 1
const NO_LIVE_PIN = 2
const PINNED_BLOCK = 4

export class ServableMemo implements ServableIndex {
  private readonly known = new Map<string, number>()
  private readonly unwatch: () => void
  /** the last CID asked and its key (isPinnedBlock then hasLivePin ask about the same object) */
  private lastCid: CID | undefined
  private lastKey = ''

  constructor (
    private readonly ledger: ServableIndex,
    changes: { watchCommitted: (fn: (c: CommittedChanges) => void) => () => void },
    private readonly max = 4096
  ) {
    // the feed tells only commits that changed blocks or pins
    this.unwatch = changes.watchCommitted(() => { this.known.clear() })
  }

  isPinnedBlock (cid: CID): boolean {
    const key = this.keyOf(cid)
    const known = this.known.get(key) ?? 0
    if ((known & PINNED_BLOCK) !== 0) return true
    if ((known & NOT_PINNED_BLOCK) !== 0) return false
    const yes = this.ledger.isPinnedBlock(cid)
    this.keep(key, known, yes ? PINNED_BLOCK : NOT_PINNED_BLOCK)
    return yes
  }

  hasLivePin (cid: CID, now?: Date): boolean {
    if (now != null) return this.ledger.hasLivePin(cid, now)
    const key = this.keyOf(cid)
    const known = this.known.get(key) ?? 0
    if ((known & NO_LIVE_PIN) !== 0) return false
    if (this.ledger.hasLivePin(cid)) return true
    this.keep(key, known, NO_LIVE_PIN)
    return false
  }

  /** CIDs with an answer remembered */
  get size (): number {
    return this.known.size
  }

  /** Stops following the ledger; the memo is emptied. */
  close (): void {
    this.unwatch()
    this.known.clear()
  }

  private keep (key: string, known: number, bit: number): void {
    if (known === 0 && this.known.size >= this.max) this.known.delete(this.known.keys().next().value as string)
    this.known.set(key, known | bit)
  }

  private keyOf (cid: CID): string {
    if (cid !== this.lastCid) {
      this.lastKey = codecAndMultihash(cid)
      this.lastCid = cid
    }
    return this.lastKey
  }
}
