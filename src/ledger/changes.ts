/**
 * What a committed write changed, as a ledger tells its followers (what
 * serves blocks from memory, src/service/serving/servable-blocks.ts). Each
 * change is the state a write left, never a difference, so applying one twice
 * or on top of a load that already read it leaves the same state.
 */
import type { PinState } from './records.js'

/** a pin as a write left it: what decides whether its root may be served */
export interface PinChange {
  /** the root's CID, v1 (the CID index's key) */
  root: string
  requestid: string
  status: PinState
  /** pinned_until, ms since the epoch (NaN when it is not a date) */
  until: number
  removed: boolean
}

/** what one committed transaction changed */
export interface CommittedChanges {
  /** block CIDs (v1) referenced now that no pin referenced before the transaction */
  referenced: string[]
  /** block CIDs (v1) no pin references any more */
  released: string[]
  /** pins written, in the order written (a pin written twice: the last is how it stays) */
  pins: PinChange[]
}

/** what a follower of the ledger reads: the changes as they commit, and the whole state in batches */
export interface LedgerChanges {
  /**
   * Calls `fn` with what each write transaction changed once it has
   * committed, in commit order; never for one that aborted. Until the
   * returned function is called.
   */
  watchCommitted(fn: (c: CommittedChanges) => void): () => void
  /**
   * Calls `fn` when changes other processes committed may have been missed
   * (the feed from them was cut and is back): a follower reads the whole
   * state again. A ledger no other process writes never calls it.
   */
  watchLost(fn: () => void): () => void
  /** every referenced block CID (v1), `batch` a time, each batch read afresh: watchCommitted's changes applied after settle what moved meanwhile */
  referencedBatches(batch: number): AsyncIterable<string[]>
  /** every pin not removed as a PinChange, `batch` a time, read as referencedBatches reads */
  livePinBatches(batch: number): AsyncIterable<PinChange[]>
}
