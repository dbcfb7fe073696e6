/**
 * Pins and payments in the ledger. Every write is one LMDB transaction that
 * updates the record and its indexes together:
 *   pins      requestid → PinRecord
 *   byOwner   [owner, createdUs, requestid] → PinSummary  (newest-first listing, filtered without reading records;
 *                                                           pins not removed only: every listing skips a removed pin)
 *   byCid     [cid, requestid] → 1                        (liveness of a CID, pins not removed only: the key is the entry;
 *                                                           older ledgers hold the owner)
 *   payments-binary  payer|nonce (52 bytes) → PaymentRecord  (x402 payments: idempotent retries, no double use)
 *   payments  paymentId → PaymentRecord                   (any other id, and records of older versions until the
 *                                                           compact:payment-keys upgrade moves them)
 *   pinBlocks requestid → block CIDs of the pin's DAG
 *   blockRefs block CID (v1) → number of pins holding it  (gateway policy, gc marking)
 *   fetchQueue requestid → createdUs                        (pins by CID still to fetch; survives restarts)
 *   byExpiry  [pinnedUntilMs, requestid] → requestid        (pins not yet removed, by expiry: the sweeper)
 *   ownerCounts  [owner, status] → number of the owner's pins not removed with that status  (GET /pins' count: ownerCount)
 *   ownerBuckets [owner, status, createdUs / 2^32] → n      (the same by creation, in spans of ~72 minutes: the count of GET /pins with
 *                                                           before/after)
 *   ownerExpiry  [owner, pinnedUntilMs, requestid] → [status, createdUs]  (the owner's pins not removed, by expiry: what ownerCount
 *                                                           takes off for the pins past their pinned_until that the sweeper has not removed yet)
 *   settling  paymentId → SettlingRecord                    (written before settlement, removed with the record it paid for;
 *                                                             leftovers are reconciled and closed through SettlementNotes)
 *   provide-* kadKey → what the DHT announces, and when       (ProvideKeys: held and released with the block references)
 *   pins-removed [removedMs, requestid] → 1, or the payment's moved mark  (removed pins the archiver has still to
 *                                                           move, then, until their payment expires, the marks to forget)
 *   payments-moved  moved mark of a payment id → 1          (the payment of a pin moved to the archive while a payment
 *                                                           signed before the removal may still be valid: still used)
 * The ledger decides what is live; helia's pin refcounts are not used.
 * A pin's block list is held while the pin is not removed, and a replaced
 * pin's while its chain of replacements still queued ends in a live one:
 * every chain of replacements, removals, expiries and failures releases
 * exactly what it holds (releaseReplaced, holdsRefs).
 *
 * PinLedger is the face of it; the work is in the modules beside this one,
 * over the same databases (./tables.ts): the records (./pin-store.ts) and
 * their writes (./pin-writes.ts), the owner index's listings
 * (./summaries.ts) and counts (./owner-counts.ts), the block references and
 * chains of replacements (./block-refs.ts), payments and settlement notes
 * (./payments.ts), the fetch queue (./fetch-queue.ts), the archiver's moves
 * (./archive-moves.ts) and the upgrades (./upgrades.ts, ./batches.ts).
 */
import type { Database } from 'lmdb'
import type { CID } from 'multiformats/cid'
import type { LedgerEnv } from './open.js'
import { ProvideKeys } from './provide-keys.js'
import { Listings } from './listings.js'
import { isLive, type OwnerUsage, type PaymentRecord, type PinRecord, type PinState } from '../records.js'
import type { SettlingRecord } from '../settlements.js'
import type { LedgerSnapshot } from './snapshot.js'
import type { StoredPayment, StoredPin } from './stored.js'
import { paymentIdOfKey, paymentKey, readPayment } from './stored.js'
import { ARCHIVE_BATCH, ArchiveMoves, withArchive } from './archive-moves.js'
import { COMPACT_BATCH, noTick, UpgradeBatches, type Tick, type UpgradeProgress } from './batches.js'
import { BlockRefs } from './block-refs.js'
import { FetchQueue } from './fetch-queue.js'
import { OwnerCounts } from './owner-counts.js'
import { ledgerPayments, PaymentNotes, paymentUsed } from './payments.js'
import { PinStore } from './pin-store.js'
import { PinWrites } from './pin-writes.js'
import { allSummaries, statesByOwner, summariesByOwner, type ListedSummary, type OwnerPinState, type PinSummary } from './summaries.js'
import { cidKey, openPinTables, type PinTables } from './tables.js'
import { LATER_BATCH, Upgrades } from './upgrades.js'
import type { CommittedChanges, PinChange } from './change-feed.js'
import { livePinBatches, referencedBatches } from './servable-reads.js'

export type { UpgradeProgress } from './batches.js'
export { PaymentReusedError, PinGoneError } from './errors.js'
export { summaryOf, type ListedSummary, type LiveSummary, type OwnerPinState, type PinSummary, type RemovedSummary } from './summaries.js'

const MAX_REQUESTID_LENGTH = 128

/**
 * The methods that hand a write or a walk to a module return its promise as
 * it is (not async themselves): no promise more, and no tick later, than the
 * method that did the work here before.
 */
export class PinLedger {
  /** the databases, shared with the modules below */
  private readonly t: PinTables
  /** records as ./stored.ts stores them (t.pins, t.paymentsBinary: the same handles) */
  private readonly pins: Database<StoredPin, string>
  private readonly paymentsBinary: Database<StoredPayment, Buffer>
  private readonly store: PinStore
  private readonly writes: PinWrites
  private readonly counts: OwnerCounts
  private readonly refs: BlockRefs
  private readonly queue: FetchQueue
  private readonly notes: PaymentNotes
  private readonly moves: ArchiveMoves
  private readonly batches: UpgradeBatches
  private readonly upgrades: Upgrades

  /** how long after pinned_until a pin still counts as live (until the sweeper marks it expired) */
  readonly graceMs: number
  /** the DHT provide schedule: the roots and blocks pins hold, kept in step with the block references */
  readonly provides: ProvideKeys
  /** GET /pins listings that scanned the owner index, kept until the next transaction ends (./listings.ts) */
  readonly listings: Listings

  constructor (private readonly env: LedgerEnv, opts: { graceMs?: number } = {}) {
    this.graceMs = opts.graceMs ?? 0
    const t = this.t = openPinTables(env)
    this.pins = t.pins
    this.paymentsBinary = t.paymentsBinary
    this.provides = new ProvideKeys(env)
    this.listings = new Listings(() => env.transactionsEnded())
    this.counts = new OwnerCounts(t, this.graceMs)
    this.store = new PinStore(t, this.counts)
    this.refs = new BlockRefs(t, this.store, this.provides)
    this.queue = new FetchQueue(t, this.store, this.refs)
    this.writes = new PinWrites(t, this.store, this.refs, this.queue)
    this.notes = new PaymentNotes(t, this.store)
    this.moves = new ArchiveMoves(t, this.store)
    this.batches = new UpgradeBatches(t.env)
    this.upgrades = new Upgrades({ t, store: this.store, counts: this.counts, batches: this.batches, provides: this.provides, releaseUnheld: (tick, resume) => this.releaseUnheldIn(tick, resume) })
  }

  /** LedgerChanges.watchCommitted (./change-feed.ts) */
  watchCommitted (fn: (c: CommittedChanges) => void): () => void {
    return this.t.changes.watch(fn)
  }

  /** LedgerChanges.referencedBatches */
  referencedBatches (batch = 10_000): AsyncGenerator<string[]> {
    return referencedBatches(this.t, batch)
  }

  /** LedgerChanges.livePinBatches */
  livePinBatches (batch = 10_000): AsyncGenerator<PinChange[]> {
    return livePinBatches(this.t, batch)
  }

  /**
   * How many of the owner's pins GET /pins counts with these statuses and
   * no other filter: undefined until the index:owner-counts upgrade has run
   * (listPins then counts by reading the owner's index).
   *
   * The count is kept, not read: ownerCounts holds the owner's pins not
   * removed by status, changed in the transaction of every write of a pin
   * (putPin: create, replace, update, remove, expiry, takedown, import;
   * the archiver moves only removed pins, which count nowhere). A pin past
   * its pinned_until (and the grace) stops counting, unless failed, with no
   * write: ownerExpiry, the owner's pins by pinned_until, gives the ones
   * past it that the sweeper has not removed yet, and they are taken off.
   * So a request reads one count per status and the owner's few expired
   * pins, whatever the number of its pins. With `beforeUs`/`afterUs`
   * (created strictly between them: paging), ownerBuckets gives the counts
   * of the whole spans of ~72 minutes of creation inside the window, and the
   * pins at its two ends, in spans cut by it, are read (stateMatches' rule
   * here too): what it reads grows with the owner's pins per 72 minutes and
   * the window's number of spans, not with its pins.
   */
  ownerCount (owner: string, statuses: ReadonlySet<PinState>, now: number, beforeUs?: number, afterUs?: number): number | undefined {
    return this.counts.ownerCount(owner, statuses, now, beforeUs, afterUs)
  }

  /** the upgrade steps of ./upgrades.ts, here for the tests that reach them (compact.test.ts, payment-keys.test.ts) */
  private compactRecords (batch = COMPACT_BATCH, tick = noTick): Promise<void> {
    return this.upgrades.compactRecords(batch, tick)
  }

  private movePaymentKeys (batch = COMPACT_BATCH, tick = noTick): Promise<void> {
    return this.upgrades.movePaymentKeys(batch, tick)
  }

  /**
   * Builds indexes added after a ledger was created, and repairs what older
   * versions left (idempotent; a no-op once done): upgradeBeforeServing's
   * steps, then upgradeLater's. `onProgress` hears of each step that runs
   * when it begins and then every PROGRESS_EVERY records it reads (also from
   * inside a step's transaction: it must not write).
   */
  upgrade (onProgress: (p: UpgradeProgress) => void = () => {}): Promise<void> {
    return this.upgrades.upgrade(onProgress)
  }

  /**
   * The upgrade's steps that what serve answers depends on (the owner and
   * expiry indexes, the repaired block references, the provide schedule):
   * serve runs them before it starts anything else.
   */
  upgradeBeforeServing (onProgress: (p: UpgradeProgress) => void = () => {}): Promise<void> {
    return this.upgrades.upgradeBeforeServing(onProgress)
  }

  /**
   * The upgrade's steps that serve may run while it serves (upgradeBeforeServing
   * says which run first): records rewritten in the layout this pind writes
   * (every reader reads both), the index of removed pins (the archiver moves
   * what it lists so far), and the highest `created` of every pin, read first
   * (until it is read, clockReady() holds the new pins' clock: ./clock.ts).
   * Each step writes in batches (`batch` records a transaction), the event loop free between them; haltUpgrade()
   * stops it after the batch under way (resolves false then: the next start goes
   * on with what is left; the steps are idempotent). Resolves true once all are done.
   */
  upgradeLater (onProgress: (p: UpgradeProgress) => void = () => {}, batch = LATER_BATCH): Promise<boolean> {
    return this.upgrades.upgradeLater(onProgress, batch)
  }

  /** Stops upgradeLater after the batch under way (serve stopping). */
  haltUpgrade (): void {
    this.batches.halt()
  }

  isLive (pin: PinRecord, now: Date = new Date()): boolean {
    return isLive(pin, now, this.graceMs)
  }

  /** `at`: as the snapshot holds it, the archive's pins included (export); without it, the ledger's only (serve's reads never open the archive) */
  get (requestid: string, at?: LedgerSnapshot): PinRecord | undefined {
    // requestids are UUIDs; a far longer string cannot be one (and would not fit an LMDB key)
    if (requestid.length > MAX_REQUESTID_LENGTH) return undefined
    return this.store.getPin(requestid, at) ?? (at?.archive?.pins?.get(requestid, at.archive.read))
  }

  /**
   * A read snapshot of the whole ledger (pins, payments, upload tickets…):
   * the reads given it see the ledger of this instant until its release(),
   * whatever is written meanwhile (./snapshot.ts: what holding one costs).
   */
  snapshot (): LedgerSnapshot {
    const at = this.env.readSnapshot()
    // the archive's after the ledger's: a record moved in between is in both (readers take the ledger's), never in neither
    try {
      at.archive = this.env.archive.lease({ snapshot: true })
    } catch (err) {
      at.release()
      throw err
    }
    return at
  }

  /**
   * One archiver pass: the removals at or before `cutoff` (past which no
   * payment signed before them is valid: serve passes the payment timeout
   * ago, src/service/background/archiver.ts) move to the archive whole and their marks
   * are forgotten; then those after it and at or before `moveBefore` (serve:
   * now) move with their payments marked used (archiveBatch). Without
   * `moveBefore`, only the first. Each batch goes on from where the last
   * stopped, so removed pins that must stay are not scanned again and again;
   * the second part goes on from where this process's last pass left it
   * (what it skipped, or what came in behind it, moves whole at the
   * cutoff). `between` runs after each batch (serve yields the event loop
   * there). Returns how many pins moved. (./archive-moves.ts: why the
   * archive is opened for each batch, not held across the pass.)
   */
  archiveDue (cutoff: Date, between: () => Promise<void> = async () => {}, stop: () => boolean = () => false, batchSize = ARCHIVE_BATCH, moveBefore: Date = cutoff): Promise<number> {
    return this.moves.archiveDue(cutoff, between, stop, batchSize, moveBefore)
  }

  /** Is there a pin with this requestid, here or in the archive (import's duplicate check; holdArchive around many)? */
  known (requestid: string): boolean {
    if (requestid.length > MAX_REQUESTID_LENGTH) return false
    return this.t.pins.doesExist(requestid) || this.env.archive.get('pins', requestid) != null
  }

  /** Is there a payment with this id, here or in the archive (import's duplicate check)? */
  knownPayment (id: string): boolean {
    return this.paymentUsed(id) || this.env.archive.get('payments', id) != null
  }

  /** Holds the archive open until the returned release (many known() calls: one opening, not one each), and archiveDue moves nothing meanwhile. */
  holdArchive (): () => void {
    const lease = this.env.archive.lease()
    const unhold = this.moves.hold()
    return () => { lease.release(); unhold() }
  }

  /**
   * The ledger's record of a payment. Undefined also for one whose pin was
   * removed and moved to the archive (its record went with it): whether a
   * payment was used is paymentUsed's to say.
   */
  payment (id: string): PaymentRecord | undefined {
    return this.store.getPayment(id)
  }

  /**
   * Was this payment used: recorded here, or the payment of a removed pin
   * moved to the archive while a payment signed before the removal may still
   * be valid (no archive is opened: this runs for every paid request).
   */
  paymentUsed (id: string): boolean {
    return paymentUsed(this.t, id)
  }

  /**
   * Writes a new pin, its indexes, the references to its blocks and (when
   * paid) its payment record in one transaction. A pin that still has to be
   * fetched goes into the fetch queue. A replacement (`pin.replaces`) marks
   * the old pin removed in the same transaction; the old pin's blocks stay
   * referenced until the replacement is pinned, fails or is removed. Replacing
   * a replacement still queued hands on what that one held (releaseReplaced).
   * `within` writes another record in the same transaction (tickets.ts: the
   * claim of an upload ticket); whatever it throws aborts the whole write.
   */
  create (pin: PinRecord, payment?: PaymentRecord, blocks: Array<string | CID> = [], within?: () => void): Promise<void> {
    return this.writes.create(pin, payment, blocks, within)
  }

  /**
   * Records a settled payment that bought something other than a pin (an
   * upload ticket, tickets.ts), with `within` writing what it bought, and
   * removes its settlement note: one transaction. PaymentReusedError when the
   * payment is recorded already.
   */
  recordPayment (payment: PaymentRecord, within: () => void): Promise<void> {
    return this.notes.recordPayment(payment, within)
  }

  /**
   * Notes, durably, that a payment is about to be settled. The record it pays
   * for removes the note in its own transaction, so a note that outlives its
   * request means the process died between settling and recording: the payer
   * may have paid for nothing. Serve reconciles such notes against the chain,
   * and the operator closes the paid ones (src/service/payments/settlement-reconcile.ts).
   */
  markSettling (rec: SettlingRecord): Promise<void> {
    return this.notes.markSettling(rec)
  }

  /**
   * The settlement failed, but the payment may have gone through all the same: the note stays,
   * marked with when its request gave up, so reconciliation need not wait for it to finish.
   */
  markSettleUncertain (paymentId: string, at: string): Promise<void> {
    return this.notes.markSettleUncertain(paymentId, at)
  }

  /** The settlement did not happen (refused): forget the note. */
  clearSettling (paymentId: string): Promise<void> {
    return this.notes.clearSettling(paymentId)
  }

  /** requestids of pins waiting to be fetched, oldest first */
  pendingFetches (): string[] {
    return this.queue.pendingFetches()
  }

  /**
   * A fetched pin is complete: status pinned, its blocks referenced, out of
   * the queue, and the pin it replaced (if any) releases its blocks — one
   * transaction. Returns undefined if the pin was removed meanwhile.
   */
  finishFetch (requestid: string, blocks: Array<string | CID>, dagSize: number, details: string): Promise<PinRecord | undefined> {
    return this.queue.finishFetch(requestid, blocks, dagSize, details)
  }

  /** A pin by CID that cannot be completed: status failed with the reason, out of the queue. */
  failFetch (requestid: string, details: string): Promise<PinRecord | undefined> {
    return this.queue.failFetch(requestid, details)
  }

  /** Calls `fn` once a pin waiting for the fetcher has been committed (a pin by CID, one recorded by reconciliation), until the returned function is called. */
  watchQueued (fn: () => void): () => void {
    return this.queue.watchQueued(fn)
  }

  /** Calls `fn` with the requestid of a pin once its removal or takedown has been committed, until the returned function is called. */
  watchRemoved (fn: (requestid: string) => void): () => void {
    return this.writes.watchRemoved(fn)
  }

  /**
   * Calls `fn` with block CIDs as pins start referencing them, until the
   * returned function is called (gc protects blocks committed while it runs).
   */
  watchNewRefs (fn: (keys: string[]) => void): () => void {
    return this.refs.watchNewRefs(fn)
  }

  /**
   * Resolves once every write transaction begun before it has committed (an
   * empty transaction queued behind them). Not from inside a transaction's
   * callback: lmdb runs a callback's body first and commits later, so a
   * watcher told from there reads the ledger as it was.
   */
  async committed (): Promise<void> {
    await this.env.transaction(() => undefined)
  }

  /**
   * Calls `fn` as pins let go of blocks no other pin references: how many,
   * and their bytes as estimated from the pin's dag size (a share of it by
   * block count; 1 MiB a block without one). Serve's gc watermark sums these.
   */
  watchReleased (fn: (blocks: number, bytes: number) => void): () => void {
    return this.refs.watchReleased(fn)
  }

  /** Drops a pin's block references (idempotent: the pin's block list goes with them); the repair walk calls it through here (upgrade-batches.test.ts stands in for it). */
  private releaseRefs (requestid: string): void {
    this.refs.releaseRefs(requestid)
  }

  /**
   * Releases block lists that nothing holds any more: what ledgers written
   * before chains of replacements were released whole (see releaseReplaced)
   * kept for ever. Returns how many pins' lists were released. `tick` counts
   * each list read (the upgrade's progress).
   *
   * In transactions of COMPACT_BATCH lists (LedgerEnv.transaction,
   * "transaction sizes"): each list released goes in the transaction that
   * drops its references (releaseRefs), so a walk cut short and done again
   * releases none twice.
   */
  async releaseUnheld (tick = noTick): Promise<number> {
    return await this.releaseUnheldIn(tick)
  }

  /** releaseUnheld; `resume`: the meta fact keeping the last list checked (inKeyBatches) */
  private async releaseUnheldIn (tick: Tick, resume?: string): Promise<number> {
    let n = 0
    await this.batches.inKeyBatches(this.t.pinBlocks, COMPACT_BATCH, tick, (key) => {
      const pin = this.store.getPin(key)
      if (pin != null && this.refs.holdsRefs(pin)) return
      this.releaseRefs(key)
      n++
    }, resume)
    return n
  }

  /** Is this block part of the DAG of a pin that has not been removed? */
  isPinnedBlock (cid: string | CID): boolean {
    return (this.t.blockRefs.get(cidKey(cid)) ?? 0) > 0
  }

  /** Updates fields of an existing pin (status, sizes, removal) in one transaction; a pin an operator took down stays as it is (and is returned so). */
  update (requestid: string, change: (pin: PinRecord) => PinRecord): Promise<PinRecord | undefined> {
    return this.writes.update(requestid, change)
  }

  /**
   * Marks a pin removed (unpinned, replaced or expired) and releases its block
   * references, in one transaction. The record stays for accounting; blocks
   * go only when gc finds no live pin referencing them.
   */
  remove (requestid: string, why: NonNullable<PinRecord['removed']>['why'], at: Date = new Date()): Promise<PinRecord | undefined> {
    return this.writes.remove(requestid, why, at)
  }

  /**
   * An operator takes a pin down: it becomes `failed` with the reason in its
   * status details (the owner still sees it, until it would have expired), it
   * leaves the fetch queue, and its block references go, so its content is no
   * longer served unless another live pin holds it — one transaction.
   * Undefined if there is no such pin, or it was removed or taken down already.
   */
  takeDown (requestid: string, reason: string, at: Date = new Date()): Promise<PinRecord | undefined> {
    return this.writes.takeDown(requestid, reason, at)
  }

  /** requestids of every pin not removed (failed and taken down ones too) whose root is this CID (v0 and v1 alike) */
  requestidsOfCid (cid: string | CID): string[] {
    const k = cidKey(cid)
    const ids: string[] = []
    for (const { key } of this.t.byCid.getRange({ start: [k], end: [k, '\uffff'] })) ids.push(key[1])
    return ids
  }

  /**
   * Every owner's summaries of pins not removed, created strictly between `afterUs` and `beforeUs`, with their owner and creation
   * time (in owner order). `withCid` false: without their CIDs (readSummary), for a listing that filters on none.
   */
  allSummaries (beforeUs?: number, afterUs?: number): Generator<{ owner: string, createdUs: number, summary: PinSummary }>
  allSummaries (beforeUs: number | undefined, afterUs: number | undefined, withCid: boolean): Generator<{ owner: string, createdUs: number, summary: ListedSummary }>
  allSummaries (beforeUs = Number.MAX_SAFE_INTEGER, afterUs = -1, withCid = true): Generator<{ owner: string, createdUs: number, summary: ListedSummary }> {
    return allSummaries(this.t, beforeUs, afterUs, withCid)
  }

  /** requestids of pins not yet removed whose pinned_until is at or before `cutoff`, oldest first */
  * expiredBy (cutoff: Date): Generator<string> {
    for (const { key } of this.t.byExpiry.getRange({ end: [cutoff.getTime(), '\uffff'] })) {
      if (key[0] <= cutoff.getTime()) yield key[1]
    }
  }

  /**
   * Extends a pin's pinned_until and records the renewal's payment, in one
   * transaction. `until` computes the new date from the current record and
   * may refuse (throw), which writes nothing.
   */
  renew (requestid: string, months: number, payment: PaymentRecord | undefined, until: (pin: PinRecord) => Date): Promise<PinRecord> {
    return this.writes.renew(requestid, months, payment, until)
  }

  /** Every payment, the archive's too (export); `at`: as the snapshot holds them. */
  * allPayments (at?: LedgerSnapshot): Generator<PaymentRecord> {
    yield * withArchive(this.t, at, ledgerPayments(this.t, this.store, at), (a) => a.payments?.getRange(a.read), (p) => p.id)
  }

  /** The block CIDs a pin references (empty once released); `at`: as the snapshot holds them. */
  blocksOf (requestid: string, at?: LedgerSnapshot): string[] {
    return this.t.pinBlocks.get(requestid, at?.read) ?? []
  }

  /** How many pins reference this block. */
  refCount (cid: string | CID): number {
    return this.t.blockRefs.get(cidKey(cid)) ?? 0
  }

  /** Every block CID (v1) referenced by at least one pin: gc's mark set. */
  * referencedBlocks (): Generator<string> {
    for (const { key } of this.t.blockRefs.getRange()) yield key
  }

  /**
   * Writes imported records as they are (migration): each pin with its
   * indexes, queue entry and block references, and payments — one
   * transaction per batch. Existing requestids or payment ids are refused.
   * `within` writes other records of the batch in the same transaction
   * (tickets.ts: upload tickets); whatever it throws aborts the whole batch.
   */
  importBatch (pins: Array<{ pin: PinRecord, blocks?: string[] }>, payments: PaymentRecord[], within?: () => void): Promise<void> {
    return this.writes.importBatch(pins, payments, within)
  }

  /** Is any live pin holding this CID as its root? */
  hasLivePin (cid: string | CID, now: Date = new Date()): boolean {
    const k = cidKey(cid)
    for (const { key } of this.t.byCid.getRange({ start: [k], end: [k, '\uffff'] })) {
      const pin = this.store.getPin(key[1])
      if (pin != null && pin.status === 'pinned' && isLive(pin, now, this.graceMs)) return true
    }
    return false
  }

  /** The requestids of live pins (any status but failed) whose root is this CID. */
  livePinsOf (cid: string | CID, now: Date = new Date()): string[] {
    const k = cidKey(cid)
    const out: string[] = []
    for (const { key } of this.t.byCid.getRange({ start: [k], end: [k, '\uffff'] })) {
      const pin = this.store.getPin(key[1])
      if (pin != null && isLive(pin, now, this.graceMs)) out.push(pin.requestid)
    }
    return out
  }

  /** Pins of one owner not removed, newest first, created strictly between `afterUs` and `beforeUs`. */
  * byOwnerNewestFirst (owner: string, beforeUs = Number.MAX_SAFE_INTEGER, afterUs = -1): Generator<PinRecord> {
    for (const s of summariesByOwner(this.t, owner, beforeUs, afterUs, true)) {
      const pin = this.store.getPin(s.id)
      if (pin != null) yield pin
    }
  }

  /**
   * The owner index's summaries (pins not removed), newest first: enough to filter and count without reading records.
   * `withCid` false: without their CIDs (readSummary), for a listing that filters on none.
   */
  summariesByOwner (owner: string, beforeUs?: number, afterUs?: number): Generator<PinSummary>
  summariesByOwner (owner: string, beforeUs: number | undefined, afterUs: number | undefined, withCid: boolean): Generator<ListedSummary>
  summariesByOwner (owner: string, beforeUs = Number.MAX_SAFE_INTEGER, afterUs = -1, withCid = true): Generator<ListedSummary> {
    return summariesByOwner(this.t, owner, beforeUs, afterUs, withCid)
  }

  /**
   * The owner index's pins not removed, newest first, with their status and
   * pinned_until only: read from each summary's bytes (summaryStateOf), the
   * rest left undecoded. What GET /pins without name, meta or cid filters
   * reads of every pin of its owner.
   */
  statesByOwner (owner: string, beforeUs = Number.MAX_SAFE_INTEGER, afterUs = -1): Generator<OwnerPinState> {
    return statesByOwner(this.t, owner, beforeUs, afterUs)
  }

  /**
   * PinLedger.usage: the owner's states (summaries' bytes), the records of
   * its pinned pins (their DAG size), and its payments: payments-binary's
   * keys begin with the payer's 20 bytes (./stored.ts paymentKey), so they
   * are one range. Payments moved to the archive with their removed pins
   * (./archive-moves.ts) are not counted.
   */
  usage (owner: string, now = new Date()): OwnerUsage {
    const t = now.getTime()
    const pins: Record<PinState, number> = { queued: 0, pinning: 0, pinned: 0, failed: 0 }
    let bytes = 0
    let nextExpiry: number | undefined
    for (const s of statesByOwner(this.t, owner, Number.MAX_SAFE_INTEGER, -1)) {
      if (s.status !== 'failed' && s.until + this.graceMs <= t) continue
      pins[s.status]++
      if (s.status === 'failed') continue
      if (nextExpiry == null || s.until < nextExpiry) nextExpiry = s.until
      if (s.status === 'pinned') bytes += this.store.getPin(s.id)?.dagSize ?? 0
    }
    const spent: Record<string, bigint> = {}
    const first = paymentKey(`${owner}:0x${'0'.repeat(64)}`)
    if (first != null) {
      const end = Buffer.concat([first.subarray(0, 20), Buffer.alloc(33, 0xff)])
      // a compact record's purpose names its pin's CID through the pin (read as export reads it)
      const pinCid = this.store.pinCidIn(undefined)
      for (const { key, value } of this.t.paymentsBinary.getRange({ start: first, end })) {
        const p = readPayment(paymentIdOfKey(key), value, pinCid)
        spent[p.network] = (spent[p.network] ?? 0n) + BigInt(p.amount)
      }
    }
    return { pins, bytes, spent, ...(nextExpiry != null ? { nextExpiry } : {}) }
  }

  /**
   * Pins by status as /metrics shows them: pins not removed that are live or
   * failed, by status, and how many were removed. Only the records of pins
   * not yet removed are read (found through byExpiry, which holds exactly
   * those); the removed ones, most of a ledger that has run for a while, are
   * counted from the database's entry count. The pass over every record it
   * replaces decoded every pin ever written, once a minute.
   */
  countByStatus (now: Date = new Date()): Record<PinRecord['status'] | 'removed', number> {
    const out = { queued: 0, pinning: 0, pinned: 0, failed: 0, removed: 0 }
    let notRemoved = 0
    for (const { value: requestid } of this.t.byExpiry.getRange()) {
      const pin = this.store.getPin(requestid)
      if (pin == null || pin.removed != null) continue
      notRemoved++
      if (pin.status === 'failed' || this.isLive(pin, now)) out[pin.status]++
    }
    out.removed = Math.max(0, this.pinCount() - notRemoved) + this.moves.archivedCount()
    return out
  }

  /** how many pin records the ledger holds, removed ones included (the database's entry count: nothing is read) */
  private pinCount (): number {
    return (this.t.pins.getStats() as { entryCount: number }).entryCount
  }

  /** Every pin, the archive's too (export, import's emptiness check); `at`: as the snapshot holds them. */
  * all (at?: LedgerSnapshot): Generator<PinRecord> {
    yield * withArchive(this.t, at, this.store.allPins(at), (a) => a.pins?.getRange(a.read), (p) => p.requestid)
  }
}
