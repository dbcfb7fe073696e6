/**
 * "May this block be served?" from memory: whether a block is referenced by
 * a pin (isPinnedBlock) and whether a live pinned pin has it as its root
 * (hasLivePin), the two ledger questions ServePolicy asks for every bitswap
 * want and gateway request, answered synchronously with what the ledger would
 * answer, and without asking it.
 *
 * Loaded from the ledger at start (load(): its referenced blocks and its
 * pins not removed, in batches, the event loop free between them), then kept
 * current by the ledger's committed changes (PinLedger.watchCommitted). The
 * changes are states, not differences (src/ledger/changes.ts), so
 * those committed while the load reads are held and applied after it,
 * whatever the load saw of them; the answers start only then.
 *
 * Staleness: with the in-process LMDB ledger an answer reflects every
 * committed write whose promise has resolved: the changes are told
 * synchronously, in commit order, as each transaction's commit resolves, and
 * an aborted transaction tells nothing. A remote ledger's change feed would
 * add its delivery delay; `reloadEveryMs` then reloads the whole state in the
 * background every so often (changes told meanwhile applied to both), which
 * bounds what a lost change can cost to that period. Off by default. A
 * ledger that knows it may have missed changes (its feed from other
 * processes was cut) says so (watchLost), and the whole state is read again.
 *
 * Memory (measured): a block 44-88 bytes in typed arrays, as full as the
 * table is (./cid-set.ts: 69 at 1M blocks, where a Set of the ledger's CID
 * strings takes ~100); a pinned pin ~200 bytes of objects (its root,
 * requestid and pinned_until).
 */
import type { CID } from 'multiformats/cid'
import type { CommittedChanges, PinChange } from '../../ledger/changes.js'
import { CidSet, codecAndMultihash } from './cid-set.js'

/** records read between two turns of the event loop while loading (~10-30 ms of work each on a busy machine) */
const LOAD_BATCH = 2_000

/** the two questions ServePolicy asks */
export interface ServableIndex {
  isPinnedBlock: (cid: CID) => boolean
  hasLivePin: (cid: CID, now?: Date) => boolean
}

/** what the state is loaded and kept from (PinLedger has it) */
export interface ServableSource {
  /** how long after pinned_until a pin still counts as live */
  readonly graceMs: number
  watchCommitted: (fn: (c: CommittedChanges) => void) => () => void
  /** told when changes committed elsewhere may have been missed: the whole state is read again */
  watchLost?: (fn: () => void) => () => void
  /** resolves once every write transaction begun before it has committed */
  committed: () => Promise<void>
  referencedBatches: (batch: number) => AsyncIterable<string[]>
  livePinBatches: (batch: number) => AsyncIterable<PinChange[]>
}

export interface ServableOptions {
  /** reload the whole state this often (ms), the backstop for a change feed that may lose a change; 0: never. @default 0 */
  reloadEveryMs?: number
}

/** a pinned pin not removed: its requestid and pinned_until; more pins of the same root chained */
class RootPin {
  constructor (readonly id: string, public until: number, public next: RootPin | undefined) {}
}

/** what the answers come from */
class State {
  readonly blocks = new CidSet()
  /** pinned pins not removed, by their root's codec and multihash */
  readonly roots = new Map<string, RootPin>()

  apply (c: CommittedChanges): void {
    for (const k of c.referenced) this.blocks.addKey(k)
    for (const k of c.released) this.blocks.deleteKey(k)
    for (const p of c.pins) this.pin(p)
  }

  /** a pin as written: held when pinned and not removed, dropped otherwise */
  pin (p: PinChange): void {
    const held = p.status === 'pinned' && !p.removed
    if (!held && this.roots.size === 0) return
    const key = rootKey(p.root)
    const first = this.roots.get(key)
    let prev: RootPin | undefined
    for (let e = first; e != null; prev = e, e = e.next) {
      if (e.id !== p.requestid) continue
      if (held) { e.until = p.until; return }
      if (prev == null) {
        if (e.next == null) this.roots.delete(key)
        else this.roots.set(key, e.next)
      } else {
        prev.next = e.next
      }
      return
    }
    if (held) this.roots.set(key, new RootPin(p.requestid, p.until, first))
  }
}

export class ServableBlocks implements ServableIndex {
  private state: State | undefined
  /** changes told while a load reads: applied to its state once it has read everything */
  private held: CommittedChanges[] | undefined
  private readonly unwatch: () => void
  private readonly unwatchLost: () => void
  private reloading: Promise<void> | undefined
  private timer: NodeJS.Timeout | undefined

  constructor (private readonly source: ServableSource, private readonly opts: ServableOptions = {}) {
    this.unwatch = source.watchCommitted((c) => {
      this.state?.apply(c)
      this.held?.push(c)
    })
    // a load under way may have read before what was missed: a fresh one after it
    this.unwatchLost = source.watchLost?.(() => {
      void (async () => {
        await this.reloading?.catch(() => {})
        if (this.state != null) await this.reload()
      })().catch(() => {})
    }) ?? (() => {})
  }

  /** whether the state is loaded (until then nothing is servable) */
  get loaded (): boolean {
    return this.state != null
  }

  /** how many blocks are referenced */
  get blocks (): number {
    return this.state?.blocks.size ?? 0
  }

  /**
   * Reads the whole state from the ledger (the first call: before anything
   * is served), then keeps it current; with `reloadEveryMs`, reloads it on
   * that period.
   */
  async load (): Promise<void> {
    await this.reload()
    const every = this.opts.reloadEveryMs ?? 0
    if (every > 0 && this.timer == null) {
      this.timer = setInterval(() => { void this.reload().catch(() => {}) }, every)
      this.timer.unref()
    }
  }

  /** a fresh state read from the ledger, replacing the current one once complete */
  async reload (): Promise<void> {
    if (this.reloading != null) { await this.reloading; return }
    this.reloading = this.read().finally(() => { this.reloading = undefined })
    await this.reloading
  }

  private async read (): Promise<void> {
    const next = new State()
    this.held = []
    try {
      // changes are noted for transactions begun from now on: those begun before commit first, so the reads see them
      await this.source.committed()
      for await (const keys of this.source.referencedBatches(LOAD_BATCH)) {
        next.blocks.reserve(next.blocks.size + keys.length)
        for (const k of keys) next.blocks.addKey(k)
        await yieldLoop()
      }
      for await (const pins of this.source.livePinBatches(LOAD_BATCH)) {
        for (const p of pins) next.pin(p)
        await yieldLoop()
      }
      for (const c of this.held) next.apply(c)
      this.state = next
    } finally {
      this.held = undefined
    }
  }

  /** Is this block referenced by a pin (the ledger's isPinnedBlock)? */
  isPinnedBlock (cid: CID): boolean {
    return this.state?.blocks.has(cid) ?? false
  }

  /** Is a pinned pin not removed holding this CID as its root, live at `now` (pinned_until plus the grace; the ledger's hasLivePin)? */
  hasLivePin (cid: CID, now?: Date): boolean {
    const roots = this.state?.roots
    if (roots == null || roots.size === 0) return false
    const t = now?.getTime() ?? Date.now()
    for (let e = roots.get(rootKey(cid)); e != null; e = e.next) {
      if (e.until + this.source.graceMs > t) return true
    }
    return false
  }

  /** Stops following the ledger and reloading. */
  close (): void {
    this.unwatch()
    this.unwatchLost()
    if (this.timer != null) clearInterval(this.timer)
    this.timer = undefined
  }
}

/** a root as the ledger's CID index keys it: codec and multihash (v0 and v1 alike) */
const rootKey = codecAndMultihash

async function yieldLoop (): Promise<void> {
  await new Promise<void>(resolve => setImmediate(resolve))
}
