/**
 * What several serves sharing one ledger coordinate through it: which front
 * ends are alive (each beats, `pind status` lists them), and leases, so that
 * work meant to run once (the expiry sweep, the archive, reconciliation, gc,
 * a region of the provide sweep) runs on one front end at a time and moves to
 * another when its holder stops beating. A ledger one serve owns (LMDB)
 * keeps the same promises for the processes that open it in turn.
 *
 * Times are the ledger's: a store shared by several machines measures a
 * lease against its own clock, so the front ends' clocks need not agree.
 */

/** a front end as it registered itself */
export interface FrontEndRecord {
  /** its libp2p peer id: one per data dir */
  id: string
  /** the URL it serves HTTP at (as it listens) */
  url: string
  version: string
  /** where its blocks are (BlockBackend.describe()) */
  blockstore: string
  /** the embedded facilitator's settler address, when it settles itself */
  settler?: string
  /** when it started (UTC) */
  startedAt: string
  /** its last beat (UTC, the ledger's clock) */
  seenAt: string
  /** when it stopped cleanly (UTC), if it has not beaten since: expected back (a restart), forgotten if it is not */
  leftAt?: string
}

export interface FrontEnds {
  /** registers this front end, or refreshes its record and its beat */
  beat(fe: Omit<FrontEndRecord, 'seenAt'>): Promise<void>
  /** marks it stopped (a clean stop: `leftAt`, until it beats again) */
  leave(id: string): Promise<void>
  /** removes it (one that stopped beating for good: ./background/front-end-takeover.ts) */
  forget(id: string): Promise<void>
  /** the front ends that beat within `withinMs` (every recorded one: undefined), stopped ones too, most recently seen first */
  list(withinMs?: number): Promise<FrontEndRecord[]>
}

export interface LeaseRecord {
  name: string
  holder: string
  /** when it lapses unless renewed (UTC, the ledger's clock) */
  until: string
}

export interface Leases {
  /**
   * Takes the lease `name` for `holder` for `ttlMs`, or renews it when
   * `holder` holds it: true. False while another holder's lease has not
   * lapsed; nothing changes then.
   */
  take(name: string, holder: string, ttlMs: number): Promise<boolean>
  /** gives it up if `holder` holds it (another front end may take it at once) */
  release(name: string, holder: string): Promise<void>
  /** the leases not lapsed */
  held(): Promise<LeaseRecord[]>
}

/**
 * Blocks a front end is writing to the block store its ledger's other front
 * ends share, before a pin references them (a commit, an upload with a
 * ticket). Another front end's gc sweeps that store: it decides and deletes
 * each batch with the fence closed, skipping every marked block, and no mark
 * is made while the fence is closed. So a block is never deleted between the
 * moment a front end decides to write it (or finds it stored already) and
 * the ledger record that makes it live. A ledger one process owns (LMDB)
 * has none: the commit lock in memory does this there.
 */
export interface BlockFence {
  /**
   * Marks these blocks (by stored name) for at most `ttlMs`, or until
   * unmarked: resolves once every sweep will see the mark, having waited
   * while the fence was closed. Returns the mark's ticket.
   */
  mark(names: readonly string[], ttlMs: number, owner?: string): Promise<string>
  /** takes a mark away (a lapsed one is ignored by sweeps anyway) */
  unmark(ticket: string): Promise<void>
  /**
   * Takes away every mark `owner` made (a front end starting again: nothing
   * of its own is being written, whatever its last run was killed in the
   * middle of); resolves to how many blocks were marked.
   */
  unmarkOwner(owner: string): Promise<number>
  /** runs `fn` with the fence closed, telling it which of `names` are marked (marks not lapsed) */
  closed<T>(names: readonly string[], fn: (marked: ReadonlySet<string>) => Promise<T>): Promise<T>
}
