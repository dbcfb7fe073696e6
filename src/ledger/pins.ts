/**
 * The pins, their payments and block references: what every ledger behind
 * pind keeps, as one async contract (the LMDB one: ./lmdb/; a networked one
 * implements the same). Writes that must go together are one transaction
 * (../ledger.ts, LedgerTransaction); each method here is one on its own.
 */
import type { CID } from 'multiformats/cid'
import type { LedgerChanges } from './changes.js'
import type { PinQuery } from './query.js'
import type { OwnerUsage, PaymentRecord, PinRecord, PinState } from './records.js'
import type { SettlingRecord } from './settlements.js'

export interface PinLedger extends LedgerChanges {
  /** how long an expired pin keeps its blocks, in ms */
  readonly graceMs: number
  /** Is the pin live (not removed, not failed, before pinned_until plus the grace)? A function of the record alone. */
  isLive(pin: PinRecord, now?: Date): boolean

  /**
   * A `created` for a new pin: after every one this ledger handed out, to
   * any front end sharing it, by a whole millisecond at least (clients that
   * page with before=<created> parsed to milliseconds page exactly).
   */
  nextCreated(): Promise<{ us: number, iso: string }>
  get(requestid: string): Promise<PinRecord | undefined>
  /** whether a pin with this requestid was ever recorded (archived ones too) */
  known(requestid: string): Promise<boolean>
  /** the requestids of the pins not removed (any status) whose root is this CID (v0 and v1 alike): an operator's takedown by CID */
  requestidsOfCid(cid: string | CID): Promise<string[]>
  /** the requestids of live pins (any status but failed) whose root is this CID */
  livePinsOf(cid: string | CID, now?: Date): Promise<string[]>
  /**
   * GET /pins: the pins of `owner` (every owner: undefined) matching `q`
   * (./query.ts), newest first: the first `q.limit` of them, and how many
   * match in all.
   */
  list(owner: string | undefined, q: PinQuery, now?: Date): Promise<{ count: number, results: PinRecord[] }>
  /** how many pins are in each status, and how many were removed */
  countByStatus(now?: Date): Promise<Record<PinState | 'removed', number>>
  /** what one owner has here and has paid (GET /usage): read in the owner's own index ranges, never the whole ledger */
  usage(owner: string, now?: Date): Promise<OwnerUsage>

  /** the payment with this id (`payer:nonce`); one that moved to the archive with its pin may be absent */
  payment(id: string): Promise<PaymentRecord | undefined>
  /**
   * whether this payment was used: recorded, or marked used when its pin was
   * archived, until no authorization signed before that pin's removal can
   * still be valid (archiveDue's cutoff: past it the chain refuses the
   * authorization itself)
   */
  paymentUsed(id: string): Promise<boolean>
  /** whether a payment with this id is recorded (not counting archived marks) */
  knownPayment(id: string): Promise<boolean>
  /** the settlement note written before a payment is settled (./settlements.ts) */
  markSettling(rec: SettlingRecord): Promise<void>
  /** the settlement's outcome could not be told: reconciliation reads the note at its next pass */
  markSettleUncertain(paymentId: string, at: string): Promise<void>
  clearSettling(paymentId: string): Promise<void>

  /**
   * Records a pin with the payment that bought it and its blocks' references
   * (and removes the payment's settlement note). PaymentReusedError when the
   * payment is recorded already; a replacement's predecessor is released as
   * its chain says (the replaced pin holds its blocks until this one settles).
   */
  create(pin: PinRecord, payment?: PaymentRecord, blocks?: Array<string | CID>): Promise<void>
  /** Changes a pin (status, sizes, removal); a pin an operator took down stays as it is. */
  update(requestid: string, change: (pin: PinRecord) => PinRecord): Promise<PinRecord | undefined>
  remove(requestid: string, why: NonNullable<PinRecord['removed']>['why'], at?: Date): Promise<PinRecord | undefined>
  /** an operator's takedown: the pin is removed and may not be fetched or pinned again */
  takeDown(requestid: string, reason: string, at?: Date): Promise<PinRecord | undefined>
  /** Extends a pin by `months` paid with `payment`; PinGoneError when it is gone, PaymentReusedError when the payment is used. */
  renew(requestid: string, months: number, payment: PaymentRecord | undefined, until: (pin: PinRecord) => Date): Promise<PinRecord>

  /** requestids of pins waiting for their DAG to be fetched (queued or pinning), oldest first, claimed or not */
  pendingFetches(): Promise<string[]>
  /**
   * Claims for `holder` up to `limit` pins waiting to be fetched, oldest
   * first: those whose next attempt is due by `dueBy` (fetch.nextAttemptAt,
   * default now) and that no lease holds (never claimed, released, or its
   * lease lapsed: the holder's own lapsed claims too). Each lease lasts
   * `leaseMs` on the ledger's clock. Holders claiming at once never get the
   * same pin, so front ends sharing the ledger fetch each pin once.
   */
  claimFetches(holder: string, limit: number, leaseMs: number, dueBy?: Date): Promise<string[]>
  /**
   * Extends to `leaseMs` from now the claims `holder` still has among
   * `requestids`, and returns those: a pin missing from the answer is no
   * longer this holder's to fetch (taken by another after its lease lapsed,
   * finished, failed, removed).
   */
  renewFetches(holder: string, requestids: string[], leaseMs: number): Promise<string[]>
  /** Ends `holder`'s claims on these pins (every claim it has: undefined), so any holder may claim them at once. */
  releaseFetches(holder: string, requestids?: string[]): Promise<void>
  /**
   * Pinned with its blocks, out of the queue (its claim ends: so it does on
   * failFetch, remove and takeDown). Only a pin still in the fetch queue:
   * of two front ends that both fetched it, the first to finish (or fail) it
   * wins, and the other's call changes nothing (undefined).
   */
  finishFetch(requestid: string, blocks: Array<string | CID>, dagSize: number, details: string): Promise<PinRecord | undefined>
  /** failed, out of the queue; as finishFetch, only a pin still in the fetch queue */
  failFetch(requestid: string, details: string): Promise<PinRecord | undefined>

  /** the block keys a pin references */
  blocksOf(requestid: string): Promise<string[]>
  /** how many pins reference this block */
  refCount(cid: string | CID): Promise<number>
  /** every block key some pin references (gc's mark) */
  referencedBlocks(): AsyncIterable<string>
  /** requestids of pins past pinned_until before `cutoff` and not removed */
  expiredBy(cutoff: Date): AsyncIterable<string>
  /** Releases block lists nothing holds any more (after an import); how many were released. */
  releaseUnheld(): Promise<number>

  /**
   * Moves removed pins, with their payments, to the archive once no request
   * can ask for them again; `between` runs between batches, `stop` ends the
   * pass early. How many pins moved.
   */
  archiveDue(cutoff: Date, between?: () => Promise<void>, stop?: () => boolean, batchSize?: number, moveBefore?: Date): Promise<number>
  /** keeps the archive from moving anything until the returned function is called (an import that merges) */
  holdArchive(): () => void

  /** Calls `fn` after a transaction that queued a fetch commits. Returns the unsubscribe. */
  watchQueued(fn: () => void): () => void
  /** Calls `fn` with each pin a committed transaction removed. */
  watchRemoved(fn: (requestid: string) => void): () => void
  /**
   * Calls `fn` with block keys as pins start referencing them, inside the
   * transaction (before it commits): gc's sweep protects them at once.
   */
  watchNewRefs(fn: (keys: string[]) => void): () => void
  /** Calls `fn` as pins let go of blocks no other pin references: how many, and their bytes as estimated from the pin's dag size. */
  watchReleased(fn: (blocks: number, bytes: number) => void): () => void
  /** resolves once every write begun before it has committed */
  committed(): Promise<void>
}
