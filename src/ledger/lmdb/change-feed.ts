/**
 * What each committed write transaction of the pin ledger changed, told to
 * watchers after the commit, in commit order: the blocks that became
 * referenced or stopped being referenced, and the pins written. What serves
 * blocks from memory follows it (src/service/serving/servable-blocks.ts).
 *
 * A transaction that throws (or whose commit fails) tells nothing: what is
 * noted inside it is held apart until its promise settles. Notes are taken
 * only while someone watches (checked as each transaction's callback
 * begins), so a ledger nobody follows pays nothing.
 *
 * Each change is the state a write left, never a difference: a block is
 * referenced or not, a pin has this status, pinned_until and removal. So
 * applying a change twice, or on top of a load that already read it, leaves
 * the same state, which is what lets a follower load while writes go on
 * (ServableBlocks.load).
 */
import type { CommittedChanges, PinChange } from '../changes.js'
export type { CommittedChanges, PinChange } from '../changes.js'
import type { LedgerEnv } from './open.js'

/** the notes of one transaction, while it runs and until it commits */
interface Pending {
  /** block → referenced after the transaction's last write of it */
  refs: Map<string, boolean>
  pins: PinChange[]
}

export class ChangeFeed {
  private readonly watchers = new Set<(c: CommittedChanges) => void>()
  /** the notes of the transaction whose callback runs now (undefined: none runs, or nobody watches) */
  private current: Pending | undefined
  /** the next transaction's place in commit order (callbacks run in the order they commit) */
  private nextSeq = 0
  /** the next place to tell */
  private toTell = 0
  /** settled transactions not yet told, by place: their changes, or null (aborted, or nothing noted) */
  private readonly settled = new Map<number, Pending | null>()

  /** `fn` in one write transaction of `env`, its changes told once it commits (the ledger's env goes through here: around()) */
  private async run<T> (env: LedgerEnv, fn: () => T): Promise<T> {
    let seq: number | undefined
    let pending: Pending | undefined
    let result: T
    try {
      result = await env.transaction(() => {
        seq ??= this.nextSeq++
        // a callback run again starts its notes afresh
        pending = this.watchers.size > 0 ? { refs: new Map(), pins: [] } : undefined
        const outer = this.current
        this.current = pending
        try { return fn() } finally { this.current = outer }
      })
    } catch (err) {
      if (seq !== undefined) this.settle(seq, null)
      throw err
    }
    if (seq !== undefined) this.settle(seq, pending ?? null)
    return result
  }

  /** `env` with its transactions noted and told (every other member as `env` has it) */
  around (env: LedgerEnv): LedgerEnv {
    const wrapped = Object.create(env) as LedgerEnv
    wrapped.transaction = async (fn) => await this.run(env, fn)
    return wrapped
  }

  private settle (seq: number, pending: Pending | null): void {
    this.settled.set(seq, pending)
    while (this.settled.has(this.toTell)) {
      const p = this.settled.get(this.toTell) as Pending | null
      this.settled.delete(this.toTell++)
      if (p == null || (p.refs.size === 0 && p.pins.length === 0)) continue
      const referenced: string[] = []
      const released: string[] = []
      for (const [k, held] of p.refs) (held ? referenced : released).push(k)
      const c = { referenced, released, pins: p.pins }
      for (const w of this.watchers) {
        // a watcher's fault is its own: the write it was told of has committed, and the others are still told
        try { w(c) } catch (err) { queueMicrotask(() => { throw err }) }
      }
    }
  }

  /** Notes (inside a transaction) that `key` is now referenced (`held`) or no longer is. */
  ref (key: string, held: boolean): void {
    this.current?.refs.set(key, held)
  }

  /** whether a transaction's notes are being taken (the callers skip building what nobody reads) */
  get noting (): boolean {
    return this.current != null
  }

  /** Notes (inside a transaction) a pin as written. */
  pin (change: PinChange): void {
    this.current?.pins.push(change)
  }

  /** Calls `fn` with what each transaction changed, once it has committed, until the returned function is called. */
  watch (fn: (c: CommittedChanges) => void): () => void {
    this.watchers.add(fn)
    return () => { this.watchers.delete(fn) }
  }
}
