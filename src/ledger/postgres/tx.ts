/**
 * Write transactions and what they changed. A write takes a pooled client,
 * runs BEGIN, its statements, COMMIT; a failure rolls it back and is thrown
 * as the contract's error. What the transaction changed is collected in one
 * TxChanges while it runs, and told to this process's watchers after COMMIT,
 * in commit order, never for one rolled back (ChangeFeed).
 *
 * Commit order: a transaction takes its place as it sends COMMIT. Two that
 * write the same rows (a pin, a block's reference count, a provide key)
 * cannot do so out of order: the second waits on the first's row locks until
 * it has committed. Ones that write different rows commute. Other
 * processes sharing the database are told through ./remote-feed.ts: the
 * changes are a row of `changes` written in the transaction, and a
 * notification naming it that PostgreSQL delivers once it commits, in commit
 * order.
 */
import type pg from 'pg'
import type { CommittedChanges, PinChange } from '../changes.js'

/** what one write transaction changed, collected while it runs */
export class TxChanges {
  /** block (v1) → referenced after the transaction's last write of it */
  readonly refs = new Map<string, boolean>()
  readonly pins: PinChange[] = []
  /** pins removed or taken down */
  readonly removed: string[] = []
  /** a pin waiting for the fetcher was written */
  queued = false
  /** blocks let go of, and their estimated bytes, per release */
  readonly released: Array<[number, number]> = []
  /** a provide key became due at once */
  newKeys = false
  /** the operator's denials changed */
  denials = false

  /** whether another process has anything to learn from it */
  get any (): boolean {
    return this.refs.size > 0 || this.pins.length > 0 || this.removed.length > 0 || this.queued || this.released.length > 0 || this.newKeys || this.denials
  }

  /** as the `changes` row carries it to other processes */
  toBody (): ChangesBody {
    return { refs: [...this.refs], pins: this.pins, removed: this.removed, queued: this.queued, released: this.released, newKeys: this.newKeys, denials: this.denials }
  }

  static fromBody (b: ChangesBody): TxChanges {
    const c = new TxChanges()
    for (const [k, held] of b.refs) c.refs.set(k, held)
    c.pins.push(...b.pins)
    c.removed.push(...b.removed)
    c.queued = b.queued
    c.released.push(...b.released)
    c.newKeys = b.newKeys
    c.denials = b.denials
    return c
  }
}

/** TxChanges as JSON */
export interface ChangesBody {
  refs: Array<[string, boolean]>
  pins: PinChange[]
  removed: string[]
  queued: boolean
  released: Array<[number, number]>
  newKeys: boolean
  denials: boolean
}

export interface Watchers {
  committed: Set<(c: CommittedChanges) => void>
  removed: Set<(requestid: string) => void>
  queued: Set<() => void>
  released: Set<(blocks: number, bytes: number) => void>
  newKeys: Set<() => void>
  /** the operator's denials changed (here or in another process) */
  denials: Set<() => void>
  /** changes made in other processes may have been missed (their feed was cut): followers read everything again */
  lost: Set<() => void>
  /** told inside the transaction, before it commits (gc's protection) */
  newRefs: Set<(keys: string[]) => void>
}

/** Adds `fn` to `set`; the returned function takes it out. */
export function watch<F> (set: Set<F>, fn: F): () => void {
  set.add(fn)
  return () => { set.delete(fn) }
}

/** A write transaction's client: its statements, and the first error that failed one (the transaction's error from then on). */
export class Tx {
  private failure: unknown
  readonly changes = new TxChanges()

  constructor (readonly client: pg.ClientBase, readonly watchers: Watchers) {}

  /**
   * Runs a statement in the transaction. `onUnique`: the contract's error
   * for a unique violation (SQLSTATE 23505) of the constraint it names.
   */
  async q<R extends pg.QueryResultRow = any> (sql: string, params: unknown[] = [], onUnique?: (constraint: string) => Error | undefined): Promise<pg.QueryResult<R>> {
    if (this.failure !== undefined) throw this.failure
    try {
      return await this.client.query<R>(sql, params)
    } catch (err) {
      const e = err as { code?: string, constraint?: string }
      const mapped = e.code === '23505' && onUnique != null ? onUnique(e.constraint ?? '') ?? err : err
      this.failure = mapped
      throw mapped
    }
  }

  /** Fails the transaction with `err` (a check a write made): it will not commit. */
  fail (err: unknown): never {
    this.failure ??= err
    throw err
  }

  /** the error that failed one of its statements or checks, if any */
  get failed (): unknown {
    return this.failure
  }
}

/** Tells each transaction's changes once it has committed, in commit order. */
export class ChangeFeed {
  private nextSeq = 0
  private toTell = 0
  private readonly settled = new Map<number, { changes: TxChanges | null, told: () => void }>()

  constructor (private readonly w: Watchers) {}

  /** the next place in commit order: taken as COMMIT is sent */
  place (): number {
    return this.nextSeq++
  }

  /** The transaction at `seq` committed (its changes) or did not (null); resolves once it, and all before it, are told. */
  async settle (seq: number, changes: TxChanges | null): Promise<void> {
    await new Promise<void>((resolve) => {
      this.settled.set(seq, { changes, told: resolve })
      while (this.settled.has(this.toTell)) {
        const s = this.settled.get(this.toTell) as { changes: TxChanges | null, told: () => void }
        this.settled.delete(this.toTell++)
        if (s.changes != null) this.tell(s.changes)
        s.told()
      }
    })
  }

  /** what another process committed, told as it arrives (./remote-feed.ts) */
  tellRemote (c: TxChanges): void {
    this.tell(c)
  }

  private tell (c: TxChanges): void {
    const w = this.w
    // a watcher's fault is its own: the write has committed, and the others are still told
    const each = <F extends (...a: any[]) => void>(set: Set<F>, ...args: Parameters<F>): void => {
      for (const fn of set) {
        try { fn(...args) } catch (err) { queueMicrotask(() => { throw err }) }
      }
    }
    if (c.refs.size > 0 || c.pins.length > 0) {
      const referenced: string[] = []
      const released: string[] = []
      for (const [k, held] of c.refs) (held ? referenced : released).push(k)
      each(w.committed, { referenced, released, pins: c.pins })
    }
    for (const id of c.removed) each(w.removed, id)
    for (const [blocks, bytes] of c.released) each(w.released, blocks, bytes)
    if (c.queued) each(w.queued)
    if (c.newKeys) each(w.newKeys)
    if (c.denials) each(w.denials)
  }

  /** followers of the changes may have missed some */
  tellLost (): void {
    for (const fn of this.w.lost) {
      try { fn() } catch (err) { queueMicrotask(() => { throw err }) }
    }
  }
}

/** SQLSTATEs after which the same transaction run again may succeed */
const RETRYABLE = new Set(['40P01', '40001'])

export function retryable (err: unknown): boolean {
  return RETRYABLE.has((err as { code?: string })?.code ?? '')
}
