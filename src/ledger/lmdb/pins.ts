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
 */
import { PindError } from '../../kernel/errors.js'
import type { Database, Key } from 'lmdb'
import { CID } from 'multiformats/cid'
import { holdClock, seedClock } from '../clock.js'
import type { LedgerEnv, Upgrade } from './open.js'
import { ProvideKeys } from './provide-keys.js'
import { Listings } from './listings.js'
import { isLive, withdrawn, type PaymentRecord, type PinRecord, type PinState } from '../records.js'
import type { SettlingRecord } from './settlements.js'
import { binaryFastIn, type LedgerSnapshot } from './snapshot.js'
import type { ArchiveLease } from './archive.js'
import { cidOf, cidOfPacked, createdUsOf, type AssetTable, currentPaymentLayout, oldLayout, paymentByRef, pinWithNames, paymentIdOf, paymentIdOfKey, paymentKey, readPayment, readPin, readSummary, storePayment, summaryStateOf, type SummaryState, storePin, storeSummary, type StoredPayment, type StoredPin, type StoredSummary } from './stored.js'

type OwnerKey = [string, number, string]
/** the meta fact holding the highest `created` (µs) of any pin the ledger has held */
const CREATED_HIGH = 'createdHighUs'
/** the meta fact holding the ledger's table of assets (./stored.ts: a pin's payment names its asset by its index here) */
const ASSETS = 'assets'

/** records per transaction of the upgrades (LedgerEnv.transaction, "transaction sizes": what the largest one dirties, serve keeps until it stops) */
const COMPACT_BATCH = 1_000
/**
 * records per transaction of the upgrade's steps that run while serve serves
 * (upgradeLater): each batch holds the event loop while it reads and rewrites
 * its records (~100-200 ms for 1,000 on a busy machine), requests wait meanwhile
 */
const LATER_BATCH = 100
/** the meta fact holding, while the index:provide-keys upgrade runs, the last pin (requestid) whose keys it has held */
const PROVIDE_KEYS_AFTER = 'index:provide-keys:after'
/** the meta fact holding, while the repair:replacement-chains upgrade runs, the last pin (requestid) whose block list it has checked */
const REPLACEMENT_CHAINS_AFTER = 'repair:replacement-chains:after'
/** an upgrade step reports its progress every this many records it reads */
const PROGRESS_EVERY = 1_000
const MAX_REQUESTID_LENGTH = 128
/** the span of creation times (µs) each of ownerBuckets' counts covers: 2^32 µs, ~72 minutes */
const BUCKET_US = 2 ** 32
/** the meta fact holding, while the index:owner-counts upgrade runs, the last owner whose counts it has built (ownerCountsKept) */
const OWNER_COUNTS_AFTER = 'index:owner-counts:after'
/** the meta fact counting the pins moved to the archive */
const ARCHIVED = 'archivedPins'
/**
 * Pins moved to the archive per transaction. Small on purpose: LMDB keeps
 * every page a transaction dirtied (malloc'd, 4 KiB each) on its
 * environment's free list until the environment closes, so the largest
 * transaction serve ever commits sets native memory it holds for good
 * (batches of 1,000 moves, five deletes each in random-keyed
 * databases, grew glibc's main arena by 4.5 MiB for good at the first pass
 * of a soak, and the ledger file by 3 MB; LedgerEnv.transaction in
 * ./open.ts, "transaction sizes").
 */
const ARCHIVE_BATCH = 100

/**
 * The key in payments-moved of a payment id: a type byte, then the 52 bytes
 * of an x402 id (./stored.ts paymentKey) or the id's UTF-8 (any other).
 */
function movedMark (id: string, key = paymentKey(id)): Buffer {
  return key != null ? Buffer.concat([Buffer.of(0), key]) : Buffer.concat([Buffer.of(1), Buffer.from(id, 'utf8')])
}

/** a pins-removed value that is a moved mark (the pin is in the archive, its payment still marked used) */
function isMark (v: unknown): v is Uint8Array {
  return v instanceof Uint8Array
}

/** when a removed pin was removed (ms; its record's time) */
function removedMs (pin: PinRecord): number {
  const t = Date.parse(pin.removed?.at ?? '')
  return Number.isFinite(t) ? t : 0
}
type CidKey = [string, string]

/** the order of two pins-removed keys, as lmdb orders them */
function compareIndexKeys (a: [number, string], b: [number, string]): number {
  return a[0] !== b[0] ? a[0] - b[0] : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0
}

/** how far the ledger's upgrade has got: the step running and the records it has read so far */
export interface UpgradeProgress { upgrade: Upgrade, records: number }

/** counts a record read by an upgrade step */
type Tick = () => void
const noTick: Tick = () => {}

/** an upgrade step's counter of records: reports the step as it begins, then every PROGRESS_EVERY records */
function upgradeStep (onProgress: (p: UpgradeProgress) => void): (upgrade: Upgrade) => Tick {
  return (upgrade) => {
    let records = 0
    onProgress({ upgrade, records })
    return () => { if (++records % PROGRESS_EVERY === 0) onProgress({ upgrade, records }) }
  }
}

/** thrown between an upgrade's batches once haltUpgrade() was called */
class UpgradeHalted extends Error {}

export class PinLedger {
  /** records as ./stored.ts stores them: read through getPin, getPayment, summaries */
  private readonly pins: Database<StoredPin, string>
  private readonly byOwner: Database<StoredSummary, OwnerKey>
  /** the same owner index, each value read only as far as its status and pinned_until (statesByOwner) */
  private readonly byOwnerStates: Database<SummaryState, OwnerKey>
  private readonly byCid: Database<number | string, CidKey>
  private readonly payments: Database<StoredPayment, string>
  private readonly paymentsBinary: Database<StoredPayment, Buffer>
  private readonly pinBlocks: Database<string[], string>
  private readonly blockRefs: Database<number, string>
  private readonly fetchQueue: Database<number, string>
  private readonly byExpiry: Database<string, [number, string]>
  private readonly settling: Database<SettlingRecord, string>
  /** removed pins by the time of their removal, [ms, requestid]: 1 until archived, then their payment's moved mark until it is forgotten (archiveBatch) */
  private readonly removedIdx: Database<number | Uint8Array, [number, string]>
  /** the payments of pins moved to the archive that must still count as used (archiveBatch): moved mark → 1 */
  private readonly paymentsMoved: Database<number, Buffer>
  /** how far this process's archiver passes have moved pins early (archiveDue's moveBefore): each pass goes on from there */
  private movedThrough: [number, string] | undefined
  /** set by haltUpgrade: upgradeLater's batches stop */
  private upgradeHalted = false
  /** the owner's pins not removed, by status: [owner, status] → n (ownerCount) */
  private readonly ownerCounts: Database<number, [string, PinState]>
  /** the owner's pins not removed, by status and span of creation: [owner, status, createdUs / BUCKET_US] → n (ownerCount) */
  private readonly ownerBuckets: Database<number, [string, PinState, number]>
  /** the owner's pins not removed, by pinned_until: [owner, untilMs, requestid] → [status, createdUs] (ownerCount) */
  private readonly ownerExpiry: Database<[PinState, number], [string, number, string]>
  /** whether every owner's counts are kept (the index:owner-counts upgrade has run; read from the ledger until it is true) */
  private countsBuilt = false

  /** how long after pinned_until a pin still counts as live (until the sweeper marks it expired) */
  readonly graceMs: number
  /** the DHT provide schedule: the roots and blocks pins hold, kept in step with the block references */
  readonly provides: ProvideKeys
  /** GET /pins listings that scanned the owner index, kept until the next transaction ends (./listings.ts) */
  readonly listings: Listings

  constructor (private readonly env: LedgerEnv, opts: { graceMs?: number } = {}) {
    this.graceMs = opts.graceMs ?? 0
    this.pins = env.db<StoredPin>('pins')
    this.byOwner = env.db<StoredSummary>('pins-by-owner')
    this.byOwnerStates = env.db<SummaryState>('pins-by-owner', { decoder: (bytes, size) => summaryStateOf(bytes, size) ?? 'undecoded' })
    this.byCid = env.db<number | string>('pins-by-cid')
    this.payments = env.db<StoredPayment>('payments')
    this.paymentsBinary = env.db<StoredPayment>('payments-binary', { keyEncoding: 'binary' }) as Database<StoredPayment, Buffer>
    this.pinBlocks = env.db<string[]>('pin-blocks')
    this.blockRefs = env.db<number>('block-refs')
    this.fetchQueue = env.db<number>('fetch-queue')
    this.byExpiry = env.db<string>('pins-by-expiry')
    this.settling = env.db<SettlingRecord>('settling')
    this.removedIdx = env.db<number | Uint8Array>('pins-removed')
    this.paymentsMoved = env.db<number>('payments-moved', { keyEncoding: 'binary' }) as Database<number, Buffer>
    this.provides = new ProvideKeys(env)
    this.listings = new Listings(() => env.transactionsEnded())
    this.ownerCounts = env.db<number>('pins-owner-counts')
    this.ownerBuckets = env.db<number>('pins-owner-buckets')
    this.ownerExpiry = env.db<[PinState, number]>('pins-owner-expiry')
    // until the clock:created-high upgrade has run (a ledger of an earlier pind), upgrade() seeds it
    const high = env.fact(CREATED_HIGH)
    if (typeof high === 'number') seedClock(high)
  }

  /**
   * Keeps the highest `created` of any pin ever written (inside the
   * transaction that writes the pin), so that the next start seeds the clock
   * (./clock.ts) with it exactly: a clock stepped back across a restart then
   * still hands out values after every pin's, removed and imported ones too.
   */
  private noteCreated (us: number): void {
    const high = this.env.fact(CREATED_HIGH)
    if (typeof high !== 'number' || us > high) void this.env.setFact(CREATED_HIGH, us)
  }

  /**
   * Writes a pin and its owner-index summary (inside a transaction). A pin
   * whose payment record is in the ledger keeps only a reference to it
   * (./stored.ts): write the payment first.
   */
  private putPin (requestid: string, pin: PinRecord): void {
    // (the payment's purpose may name this pin's CID: the pin is not written yet)
    this.pins.put(requestid, storePin(pin, this.getPayment(pin.payment.id, (id) => id === requestid ? pin.cid : this.pinCid(id)), this.assets))
    this.noteCreated(pin.createdUs)
    // the owner's counts follow its index entry, in this transaction: as it was, as it will be
    if (this.ownerCountsKept(pin.owner)) {
      this.recount(pin.owner, requestid, pin.createdUs, this.liveStateAt([pin.owner, pin.createdUs, requestid]), pin.removed == null ? { status: pin.status, until: Date.parse(pin.pinnedUntil) } : undefined)
    }
    // a removed pin leaves the owner and CID indexes: every listing, takedown and liveness check
    // skips it (most of a ledger's pins)
    if (pin.removed != null) {
      this.byOwner.remove([pin.owner, pin.createdUs, requestid])
      this.byCid.remove([cidKey(pin.cid), requestid])
    } else {
      this.byOwner.put([pin.owner, pin.createdUs, requestid], storeSummary(summaryOf(pin)))
    }
  }

  /** the owner index's entry at `key` as status and pinned_until: undefined when there is none or it is of a removed pin */
  private liveStateAt (key: OwnerKey): OwnerState | undefined {
    const state = this.byOwnerStates.get(key)
    if (state === undefined || state === 'removed') return undefined
    if (state !== 'undecoded') return state
    const stored = this.byOwner.get(key)
    const summary = stored !== undefined ? readSummary(key[2], stored) : undefined
    return summary != null && !summary.removed ? { status: summary.status, until: summary.until } : undefined
  }

  /**
   * Are this owner's counts kept (ownerCounts, ownerExpiry)? Every owner's
   * once the index:owner-counts upgrade has run (a new ledger: from the
   * start); while it runs, those of the owners it has done (it goes in
   * owner order). The others are left to it: it counts them afresh.
   */
  private ownerCountsKept (owner: string): boolean {
    if (this.countsReady()) return true
    const after = this.env.fact(OWNER_COUNTS_AFTER)
    return typeof after === 'string' && Buffer.compare(Buffer.from(owner), Buffer.from(after)) <= 0
  }

  /** has the index:owner-counts upgrade run (every owner's counts kept)? */
  private countsReady (): boolean {
    if (!this.countsBuilt && this.env.upgraded('index:owner-counts')) this.countsBuilt = true
    return this.countsBuilt
  }

  /** moves a pin of `owner` from one state (undefined: none, or removed) to another in its counts (inside the transaction that writes it) */
  private recount (owner: string, requestid: string, createdUs: number, was: OwnerState | undefined, now: OwnerState | undefined): void {
    if (was?.status === now?.status && (was?.until === now?.until || (Number.isNaN(was?.until) && Number.isNaN(now?.until)))) return
    const bucket = Math.floor(createdUs / BUCKET_US)
    if (was != null) {
      this.addCount(this.ownerCounts, [owner, was.status], -1)
      this.addCount(this.ownerBuckets, [owner, was.status, bucket], -1)
      if (Number.isFinite(was.until)) this.ownerExpiry.remove([owner, was.until, requestid])
    }
    if (now != null) {
      this.addCount(this.ownerCounts, [owner, now.status], 1)
      this.addCount(this.ownerBuckets, [owner, now.status, bucket], 1)
      // a pinned_until that is not a date never passes (listPins' stateMatches): nothing to take off
      if (Number.isFinite(now.until)) this.ownerExpiry.put([owner, now.until, requestid], [now.status, createdUs])
    }
  }

  private addCount<K extends Key> (db: Database<number, K>, key: K, by: number): void {
    const n = (db.get(key) ?? 0) + by
    if (n > 0) db.put(key, n)
    else db.remove(key)
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
    if (!this.countsReady()) return undefined
    let n = 0
    if (beforeUs == null && afterUs == null) {
      for (const status of statuses) n += this.ownerCounts.get([owner, status]) ?? 0
      return n - this.expiredIn(owner, statuses, now, -Infinity, Infinity)
    }
    // created strictly between afterUs and beforeUs: the spans of ownerBuckets inside that, and the pins at either end read
    const lo = afterUs ?? -1
    const hi = beforeUs ?? Number.MAX_SAFE_INTEGER
    const first = Math.floor((lo + 1) / BUCKET_US) + 1
    const end = Math.floor((hi - 1) / BUCKET_US)
    // no whole span between the ends: the window is read as it is (undefined: listPins counts)
    if (end - first < 1) return undefined
    const fromUs = first * BUCKET_US
    const toUs = end * BUCKET_US
    const counted = (s: OwnerPinState): boolean => statuses.has(s.status) && (s.status === 'failed' || s.until + this.graceMs > now)
    for (const s of this.statesByOwner(owner, fromUs, lo)) if (counted(s)) n++
    for (const s of this.statesByOwner(owner, hi, toUs - 1)) if (counted(s)) n++
    for (const status of statuses) {
      for (const { value } of this.ownerBuckets.getRange({ start: [owner, status, first], end: [owner, status, end] })) n += value
    }
    return n - this.expiredIn(owner, statuses, now, fromUs, toUs)
  }

  /** how many of the owner's pins with these statuses created in [fromUs, toUs) are past their pinned_until and the grace at `now` (failed ones never are) */
  private expiredIn (owner: string, statuses: ReadonlySet<PinState>, now: number, fromUs: number, toUs: number): number {
    let n = 0
    for (const { key, value: [status, createdUs] } of this.ownerExpiry.getRange({ start: [owner] })) {
      if (key[0] !== owner || key[1] + this.graceMs > now) break
      if (status !== 'failed' && statuses.has(status) && createdUs >= fromUs && createdUs < toUs) n++
    }
    return n
  }

  /**
   * The index:owner-counts upgrade: each owner's counts from its index
   * entries, owner after owner in owner order, each owner whole in one
   * transaction with the fact that it is done (ownerCountsKept: from then on
   * putPin keeps them), owners of fewer than `batch` pins together.
   */
  private async buildOwnerCounts (batch: number, tick: Tick): Promise<void> {
    let more = true
    while (more) {
      this.checkHalted()
      await this.env.transaction(() => {
        let entries = 0
        while (entries < batch) {
          const after = this.env.fact(OWNER_COUNTS_AFTER)
          let owner: string | undefined
          for (const key of this.byOwner.getKeys(typeof after === 'string' ? { start: [after, Number.MAX_SAFE_INTEGER] } : {})) {
            if (key[0] === after) continue
            owner = key[0]
            break
          }
          if (owner === undefined) { more = false; return }
          for (const { key } of this.ownerCounts.getRange({ start: [owner], end: [owner, '\uffff'] })) this.ownerCounts.remove(key)
          for (const { key } of this.ownerBuckets.getRange({ start: [owner], end: [owner, '\uffff'] })) this.ownerBuckets.remove(key)
          for (const { key } of this.ownerExpiry.getRange({ start: [owner], end: [owner, Number.MAX_VALUE] })) this.ownerExpiry.remove(key)
          for (const key of this.byOwner.getKeys({ start: [owner], end: [owner, Number.MAX_SAFE_INTEGER] })) {
            tick()
            entries++
            this.recount(owner, key[2], key[1], undefined, this.liveStateAt(key))
          }
          void this.env.setFact(OWNER_COUNTS_AFTER, owner)
        }
      })
    }
  }

  /**
   * The table of assets: read from the meta fact each time (it is short), so
   * that a transaction that added an asset and was then aborted leaves no
   * index behind; an asset not there yet is added inside the writing
   * transaction (every putPin is in one).
   */
  private readonly assets: AssetTable = {
    indexOf: (asset) => {
      const table = this.assetTable()
      const i = table.indexOf(asset)
      if (i >= 0) return i
      void this.env.setFact(ASSETS, [...table, asset])
      return table.length
    },
    at: (index) => this.assetTable()[index]
  }

  private assetTable (at?: LedgerSnapshot): string[] {
    const v = this.env.fact(ASSETS, at)
    return Array.isArray(v) ? v as string[] : []
  }

  /** the table of assets to read records with: as it was in the snapshot `at` (reads only) */
  private assetsIn (at: LedgerSnapshot | undefined): AssetTable {
    return at == null ? this.assets : { indexOf: this.assets.indexOf, at: (index) => this.assetTable(at)[index] }
  }

  private getPin (requestid: string, at?: LedgerSnapshot): PinRecord | undefined {
    const stored = this.pins.get(requestid, at?.read)
    return stored == null ? undefined : readPin(requestid, stored, this.paymentOfPin(requestid, at), this.assetsIn(at))
  }

  private getPayment (id: string, pinCid?: (requestid: string) => string | undefined, at?: LedgerSnapshot): PaymentRecord | undefined {
    const stored = this.storedPayment(id, at)
    return stored == null ? undefined : readPayment(id, stored, pinCid ?? this.pinCidIn(at))
  }

  /** an x402 payment from payments-binary (or, until the compact:payment-keys upgrade has moved it, payments); any other from payments */
  private storedPayment (id: string, at?: LedgerSnapshot): StoredPayment | undefined {
    const key = paymentKey(id)
    return (key != null ? this.paymentsBinary.get(key, at?.read) : undefined) ?? this.payments.get(id, at?.read)
  }


  /** reads a pin's payment record: the purpose may name the pin's CID, which the pin's reader has already */
  private paymentOfPin (requestid: string, at?: LedgerSnapshot): (id: string, cid: string) => PaymentRecord | undefined {
    return (id, cid) => this.getPayment(id, (rid) => rid === requestid ? cid : this.pinCid(rid, at), at)
  }

  /** the CID of a pin the ledger holds (a payment's purpose may name it); `at`: in that snapshot */
  private readonly pinCid = (requestid: string, at?: LedgerSnapshot): string | undefined => {
    const raw = binaryFastIn(this.pins, requestid, at)
    if (raw == null) return undefined
    const cid = cidOfPacked(raw)
    if (cid != null) return cid
    const stored = this.pins.get(requestid, at?.read)
    return stored == null ? undefined : cidOf(stored)
  }

  private pinCidIn (at: LedgerSnapshot | undefined): (requestid: string) => string | undefined {
    return at == null ? this.pinCid : (requestid) => this.pinCid(requestid, at)
  }

  /** Writes a payment record (inside a transaction); `pinCid`: the CID of the pin it paid for, when that pin is written in the same transaction. */
  private putPayment (p: PaymentRecord, pinCid = this.pinCid(p.requestid)): void {
    const key = paymentKey(p.id)
    if (key != null) this.paymentsBinary.put(key, storePayment(p, pinCid))
    else this.payments.put(p.id, storePayment(p, pinCid))
  }

  /** every pin, whole, in requestid order; `at`: as the snapshot holds them */
  private * allPins (at?: LedgerSnapshot): Generator<PinRecord> {
    const assets = this.assetsIn(at)
    for (const { key, value } of this.pins.getRange(at?.read)) yield readPin(key, value, this.paymentOfPin(key, at), assets)
  }

  /**
   * Moves x402 payments from payments (text keys) to payments-binary (their
   * 52 bytes) in the layout this pind writes, `batch` per transaction, each
   * record put there and removed here in the same one: stopped midway, the
   * next start goes on with what is left, and every record is in exactly one
   * of the two meanwhile (getPayment reads both). Other ids stay, rewritten
   * in place when their layout is older.
   */
  private async movePaymentKeys (batch = COMPACT_BATCH, tick = noTick): Promise<void> {
    let after: string | undefined
    let more = true
    while (more) {
      this.checkHalted()
      await this.env.transaction(() => {
        const entries: Array<{ key: string, value: StoredPayment }> = []
        for (const e of this.payments.getRange(after === undefined ? { limit: batch + 1 } : { start: after, limit: batch + 1 })) {
          if (e.key === after) continue
          if (entries.length === batch) break
          entries.push({ key: e.key, value: e.value })
        }
        for (const { key, value } of entries) {
          tick()
          const rec = readPayment(key, value, this.pinCid)
          const binary = paymentKey(key)
          if (binary != null) {
            this.paymentsBinary.put(binary, storePayment(rec, this.pinCid(rec.requestid)))
            this.payments.remove(key)
          } else if (!currentPaymentLayout(value)) {
            this.payments.put(key, storePayment(rec, this.pinCid(rec.requestid)))
          }
        }
        after = entries[entries.length - 1]?.key
        more = entries.length === batch
      })
    }
  }

  /**
   * Rewrites records as ./stored.ts stores them: without the fields equal to
   * their keys, and a pin's payment as a reference when the payments database
   * holds its record (a record already so is left alone). In transactions of
   * `batch` records: lmdb cannot reuse a page freed inside the transaction
   * that freed it, so one transaction over a whole ledger would grow the file
   * by all it rewrites; between batches the pages the last one freed are used
   * again. Idempotent: stopped midway, the next start goes on.
   */
  private async compactRecords (batch = COMPACT_BATCH, tick = noTick): Promise<void> {
    // payments first: a pin then refers to its payment's record
    await this.inBatches(this.payments, batch, tick, (key, value) => {
      if (!oldLayout(value)) return
      const rec = readPayment(key, value, this.pinCid)
      this.payments.put(key, storePayment(rec, this.pinCid(rec.requestid)))
    })
    await this.inBatches(this.pins, batch, tick, (key, value) => {
      if (!oldLayout(value) && paymentByRef(value)) return
      const pin = readPin(key, value, this.paymentOfPin(key), this.assets)
      const stored = storePin(pin, this.getPayment(pin.payment.id), this.assets)
      if (oldLayout(value) || paymentByRef(stored)) this.pins.put(key, stored)
    })
    const removed: OwnerKey[] = []
    await this.inBatches(this.byOwner, batch, tick, (key, value) => {
      const summary = readSummary(key[2], value)
      if (summary.removed) removed.push(key)
      else if (oldLayout(value)) this.byOwner.put(key, storeSummary(summary))
    })
    // removed pins leave the owner index (after the pass: it goes on from the last key it did)
    for (let i = 0; i < removed.length; i += batch) {
      this.checkHalted()
      await this.env.transaction(() => { for (const key of removed.slice(i, i + batch)) this.byOwner.remove(key) })
    }
    // the CID index's value was the owner, which nothing reads; removed pins leave it
    const gone: CidKey[] = []
    await this.inBatches(this.byCid, batch, tick, (key, value) => {
      const pin = this.getPin(key[1])
      if (pin == null || pin.removed != null) gone.push(key)
      else if (value !== 1) this.byCid.put(key, 1)
    })
    for (let i = 0; i < gone.length; i += batch) {
      this.checkHalted()
      await this.env.transaction(() => { for (const key of gone.slice(i, i + batch)) this.byCid.remove(key) })
    }
  }

  /**
   * Calls `fn` on every entry of `db` (which it may rewrite or remove),
   * `batch` entries per transaction; `tick` counts each. inKeyBatches below
   * walks the keys; each value is read as its turn comes (upgrades only: one
   * lookup more per entry, and no batch of values held at once).
   *
   * `resume`, for a step whose writes are not idempotent (they count): the
   * meta fact that keeps the last key done, written in the transaction of the
   * batch that did it. The walk starts after the key it holds, so a step cut
   * short by a crash goes on after its last committed batch and does no
   * entry twice; the caller removes the fact in the transaction that marks
   * the step done. A batch that throws is rolled back with its fact
   * (LedgerEnv.transaction): the next start does that batch again, whole.
   */
  private async inBatches<K extends Key, V> (db: Database<V, K>, batch: number, tick: Tick, fn: (key: K, value: V) => void, resume?: string): Promise<void> {
    await this.inKeyBatches(db, batch, tick, (key) => {
      const value = db.get(key)
      if (value !== undefined) fn(key, value)
    }, resume)
  }


  /**
   * The walk under inBatches, for a step that may remove the entries it is
   * called on: each batch reads its keys first (no cursor walks on past an
   * entry removed under it), then calls `fn` on each, which reads what it
   * needs of the entry.
   * `resume` as for inBatches (the last key done may since have been removed:
   * the walk starts at the first key after it all the same).
   */
  private async inKeyBatches<K extends Key> (db: Database<unknown, K>, batch: number, tick: Tick, fn: (key: K) => void, resume?: string): Promise<void> {
    let after = resume != null ? this.env.fact(resume) as K | undefined : undefined
    let more = true
    while (more) {
      this.checkHalted()
      await this.env.transaction(() => {
        const from = after
        const keys: K[] = []
        for (const key of db.getKeys(from === undefined ? { limit: batch + 1 } : { start: from, limit: batch + 2 })) {
          if (from !== undefined && sameKey(key, from)) continue
          keys.push(key)
        }
        more = keys.length > batch
        for (const key of keys.slice(0, batch)) {
          tick()
          fn(key)
          after = key
        }
        if (resume != null && after !== from) void this.env.setFact(resume, after)
      })
    }
  }

  /**
   * Builds indexes added after a ledger was created, and repairs what older
   * versions left (idempotent; a no-op once done): upgradeBeforeServing's
   * steps, then upgradeLater's. `onProgress` hears of each step that runs
   * when it begins and then every PROGRESS_EVERY records it reads (also from
   * inside a step's transaction: it must not write).
   */
  async upgrade (onProgress: (p: UpgradeProgress) => void = () => {}): Promise<void> {
    await this.upgradeBeforeServing(onProgress)
    // nothing else runs meanwhile: larger batches
    await this.upgradeLater(onProgress, COMPACT_BATCH)
  }

  /**
   * The upgrade's steps that what serve answers depends on (the owner and
   * expiry indexes, the repaired block references, the provide schedule):
   * serve runs them before it starts anything else.
   */
  async upgradeBeforeServing (onProgress: (p: UpgradeProgress) => void = () => {}): Promise<void> {
    const step = upgradeStep(onProgress)
    // the steps write in batches (COMPACT_BATCH pins a transaction), and are marked done in a
    // transaction of their own once every batch is in. The puts of the index steps are idempotent: stopped
    // midway, the next start does the step again from its first pin; the steps whose writes count (provide
    // keys, block references) go on after the last batch committed instead.
    if (!this.env.upgraded('index:owner-summaries')) {
      await this.inBatches(this.pins, COMPACT_BATCH, step('index:owner-summaries'), (key, value) => {
        const pin = readPin(key, value, this.paymentOfPin(key), this.assets)
        if (pin.removed != null) return
        const ownerKey: OwnerKey = [pin.owner, pin.createdUs, pin.requestid]
        if (this.ownerCountsKept(pin.owner)) this.recount(pin.owner, pin.requestid, pin.createdUs, this.liveStateAt(ownerKey), { status: pin.status, until: Date.parse(pin.pinnedUntil) })
        this.byOwner.put(ownerKey, storeSummary(summaryOf(pin)))
      })
      await this.env.transaction(() => { this.env.setUpgraded('index:owner-summaries') })
    }
    if (!this.env.upgraded('index:pins-by-expiry')) {
      await this.inBatches(this.pins, COMPACT_BATCH, step('index:pins-by-expiry'), (key, value) => {
        const pin = readPin(key, value, this.paymentOfPin(key), this.assets)
        if (pin.removed == null) this.byExpiry.put([Date.parse(pin.pinnedUntil), pin.requestid], pin.requestid)
      })
      await this.env.transaction(() => { this.env.setUpgraded('index:pins-by-expiry') })
    }
    if (!this.env.upgraded('repair:replacement-chains')) {
      // releaseRefs removes a pin's block list with the references it drops, in the same transaction (its
      // batch's), so no list is released twice; each batch records the last pin it checked too, and a start
      // after a crash goes on from there (without checking again the lists it kept)
      await this.releaseUnheldIn(step('repair:replacement-chains'), REPLACEMENT_CHAINS_AFTER)
      await this.env.transaction(() => {
        this.env.setUpgraded('repair:replacement-chains')
        this.env.removeFact(REPLACEMENT_CHAINS_AFTER)
      })
    }
    if (!this.env.upgraded('index:provide-keys')) {
      // every pin holding block references is announced (the same rule as addRefs/releaseRefs). hold() counts
      // the pins holding each key, so a pin done twice would hold its keys twice (and they would outlive its
      // release): each batch records the last pin it did in its own transaction, and a start after a crash goes
      // on from there
      await this.inBatches(this.pinBlocks, COMPACT_BATCH, step('index:provide-keys'), (requestid, blocks) => {
        const pin = this.getPin(requestid)
        if (pin != null && blocks.length > 0) this.provides.hold(pin.cid, blocks)
      }, PROVIDE_KEYS_AFTER)
      await this.env.transaction(() => {
        this.env.setUpgraded('index:provide-keys')
        this.env.removeFact(PROVIDE_KEYS_AFTER)
      })
    }
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
  async upgradeLater (onProgress: (p: UpgradeProgress) => void = () => {}, batch = LATER_BATCH): Promise<boolean> {
    const step = upgradeStep(onProgress)
    let seeded: (() => void) | undefined
    // synchronously, before the first await: no pin is created before the clock knows every pin's created
    if (!this.env.upgraded('clock:created-high')) holdClock(new Promise<void>(resolve => { seeded = resolve }))
    try {
      if (!this.env.upgraded('clock:created-high')) {
        // one read of every pin's `created` (in batches); from now on each write of a pin keeps the mark,
        // including those made while this step reads (noteCreated keeps the higher)
        let high = 0
        await this.inBatches(this.pins, batch, step('clock:created-high'), (_key, value) => { high = Math.max(high, createdUsOf(value)) })
        await this.env.transaction(() => {
          if (high > 0) this.noteCreated(high)
          this.env.setUpgraded('clock:created-high')
        })
        const mark = this.env.fact(CREATED_HIGH)
        if (typeof mark === 'number') seedClock(mark)
      }
      seeded?.()
      if (!this.env.upgraded('index:owner-counts')) {
        // GET /pins counts by reading the owner's index until this is done (ownerCount)
        await this.buildOwnerCounts(batch, step('index:owner-counts'))
        await this.env.transaction(() => {
          this.env.setUpgraded('index:owner-counts')
          this.env.removeFact(OWNER_COUNTS_AFTER)
        })
        this.countsBuilt = true
      }
      if (!this.env.upgraded('compact:records')) {
        await this.compactRecords(batch, step('compact:records'))
        await this.env.transaction(() => { this.env.setUpgraded('compact:records') })
      }
      if (!this.env.upgraded('compact:payment-keys')) {
        await this.movePaymentKeys(batch, step('compact:payment-keys'))
        await this.env.transaction(() => { this.env.setUpgraded('compact:payment-keys') })
      }
      if (!this.env.upgraded('compact:pin-numbers')) {
        // pins written before name their status, source, payment method and asset by number (./stored.ts); rewritten in place, never larger
        await this.inBatches(this.pins, batch, step('compact:pin-numbers'), (key, value) => {
          if (!pinWithNames(value)) return
          const pin = readPin(key, value, this.paymentOfPin(key), this.assets)
          this.pins.put(key, storePin(pin, this.getPayment(pin.payment.id), this.assets))
        })
        await this.env.transaction(() => { this.env.setUpgraded('compact:pin-numbers') })
      }
      if (!this.env.upgraded('index:removed-pins')) {
        // the removed pins an older ledger holds, for the archiver to move (./archive.ts); in batches
        // (the puts are idempotent, and the step is marked done only once all are in)
        await this.inBatches(this.pins, batch, step('index:removed-pins'), (key, value) => {
          const pin = readPin(key, value, this.paymentOfPin(key), this.assets)
          if (pin.removed != null) this.removedIdx.put([removedMs(pin), key], 1)
        })
        await this.env.transaction(() => { this.env.setUpgraded('index:removed-pins') })
      }
      return true
    } catch (err) {
      if (err instanceof UpgradeHalted) return false
      throw err
    } finally {
      seeded?.()
    }
  }

  /** Stops upgradeLater after the batch under way (serve stopping). */
  haltUpgrade (): void {
    this.upgradeHalted = true
  }

  private checkHalted (): void {
    if (this.upgradeHalted) throw new UpgradeHalted('the upgrade was halted')
  }

  isLive (pin: PinRecord, now: Date = new Date()): boolean {
    return isLive(pin, now, this.graceMs)
  }

  /** `at`: as the snapshot holds it, the archive's pins included (export); without it, the ledger's only (serve's reads never open the archive) */
  get (requestid: string, at?: LedgerSnapshot): PinRecord | undefined {
    // requestids are UUIDs; a far longer string cannot be one (and would not fit an LMDB key)
    if (requestid.length > MAX_REQUESTID_LENGTH) return undefined
    return this.getPin(requestid, at) ?? (at?.archive?.pins?.get(requestid, at.archive.read))
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
   * One batch of an archiver pass over the removed pins' index, from `start`
   * (its beginning when absent) through the removals at or before `end`, at
   * most `limit` moves: returns how many pins moved, the index key the next
   * batch starts at (undefined once the range is scanned to its end) and the
   * last key scanned. A pin moves to the archive (./archive.ts) with the
   * payment that created it only when nothing here needs it any more: not
   * while it holds block references (a replaced pin whose replacement has not
   * settled) or a replacement chain still walks through it.
   *
   * `marked` (the removals after the payment cutoff, archiveDue): a payment
   * signed before the removal may still be valid, so a retry of the request
   * it paid for may still come. The payment must still count as used: its
   * moved mark (a type byte and its 52 bytes, ~60 bytes against the ~700 of
   * the pin and payment records) goes into payments-moved, and the pin's
   * index entry keeps the mark until a pass past the payment cutoff forgets
   * both. Such a retry is answered as one whose payment was used elsewhere
   * (402: sign a new payment), as it is once the records are archived.
   * Without `marked` (at or before the payment cutoff) a pin moves without a
   * mark, and the marks met go with their entries.
   *
   * The archive's commit comes first, then the ledger's (one transaction): a
   * crash between them leaves records in both, which readers take once, and
   * the next pass moves again.
   */
  private async archiveBatch (end: Date, marked: boolean, limit: number, start?: [number, string]): Promise<{ moved: number, next?: [number, string], last?: [number, string] }> {
    const moving: Array<{ key: [number, string], pin?: PinRecord, mark?: Uint8Array }> = []
    const payments: PaymentRecord[] = []
    let scanned = 0
    let next: [number, string] | undefined
    let last: [number, string] | undefined
    for (const { key, value } of this.removedIdx.getRange({ start, end: [end.getTime() + 1] })) {
      if (moving.length >= limit || ++scanned > 4 * limit) { next = key; break }
      last = key
      if (isMark(value)) {
        // moved already: the mark is forgotten once the payment cutoff has passed the removal
        if (!marked) moving.push({ key, mark: value })
        continue
      }
      const pin = this.getPin(key[1])
      if (pin == null || pin.removed == null) {
        moving.push({ key }) // not (or no longer) a removed pin here: the entry goes
        continue
      }
      if (this.stillNeeded(pin)) continue
      moving.push({ key, pin })
      const payment = pin.payment?.id != null ? this.getPayment(pin.payment.id, (rid) => rid === pin.requestid ? pin.cid : this.pinCid(rid)) : undefined
      if (payment != null && payment.requestid === pin.requestid) payments.push(payment)
    }
    if (moving.length === 0) return { moved: 0, next, last }
    const pins = moving.flatMap(m => m.pin != null ? [m.pin] : [])
    if (pins.length > 0) await this.env.archive.put(pins, payments)
    const paymentOf = new Map(payments.map(p => [p.requestid, p.id]))
    let moved = 0
    await this.env.transaction(() => {
      for (const { key, pin, mark } of moving) {
        if (mark != null) this.paymentsMoved.remove(Buffer.from(mark))
        if (pin == null || !this.pins.doesExist(pin.requestid)) {
          this.removedIdx.remove(key)
          continue
        }
        this.pins.remove(pin.requestid)
        this.pinBlocks.remove(pin.requestid)
        const paymentId = paymentOf.get(pin.requestid)
        if (paymentId != null) {
          const pk = paymentKey(paymentId)
          if (pk != null) this.paymentsBinary.remove(pk)
          this.payments.remove(paymentId)
        }
        if (marked && paymentId != null) {
          const m = movedMark(paymentId)
          this.paymentsMoved.put(m, 1)
          this.removedIdx.put(key, m)
        } else {
          this.removedIdx.remove(key)
        }
        moved++
      }
      if (moved > 0) void this.env.setFact(ARCHIVED, this.archivedCount() + moved)
    })
    return { moved, next, last }
  }

  /** archiveBatch after archiveBatch through the range, each from where the last stopped; the pins moved and the last key scanned */
  private async archiveRange (end: Date, marked: boolean, start: [number, string] | undefined, batchSize: number, between: () => Promise<void>, stop: () => boolean): Promise<{ moved: number, last?: [number, string] }> {
    let moved = 0
    let last: [number, string] | undefined
    while (!stop()) {
      const batch = await this.archiveBatch(end, marked, batchSize, start)
      moved += batch.moved
      last = batch.last ?? last
      if (batch.next == null) break
      start = batch.next
      await between()
    }
    return { moved, last }
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
   * there). Returns how many pins moved.
   *
   * The archive is opened for each batch's commit and closed after it
   * (./archive.ts put), not held open across the pass: the
   * payments it holds are keyed by their ids, which are random, so each
   * batch writes into leaves all over the file, and the kernel maps 16
   * pages around each page read; held open for a pass of ~20 batches, the
   * whole archive became resident in serve while the pass ran (the soak's
   * two highest RSS samples were two passes: +16 and +30 MiB of the
   * archive's pages at minutes 10 and 16, the archive growing ~2 MiB a
   * minute). Now at most one batch's leaves are (~100 of them, up to
   * ~6 MiB). The cost: ~130 bytes of lmdb-js's native memory per
   * close (./archive.ts), one close per batch that moves pins; a pass that
   * only forgets marks, or has nothing to do, does not open the archive.
   */
  async archiveDue (cutoff: Date, between: () => Promise<void> = async () => {}, stop: () => boolean = () => false, batchSize = ARCHIVE_BATCH, moveBefore: Date = cutoff): Promise<number> {
    const early = moveBefore.getTime() > cutoff.getTime()
    const afterCutoff: [number, string] = [cutoff.getTime() + 1, '']
    const earlyStart = this.movedThrough != null && compareIndexKeys(this.movedThrough, afterCutoff) > 0 ? this.movedThrough : afterCutoff
    let total = (await this.archiveRange(cutoff, false, undefined, batchSize, between, stop)).moved
    if (early && !stop()) {
      const { moved, last } = await this.archiveRange(moveBefore, true, earlyStart, batchSize, between, stop)
      total += moved
      if (last != null) this.movedThrough = last
    }
    return total
  }

  /** a removed pin the ledger still needs: it holds block references, or a replacement still unsettled walks through it (releaseReplaced) */
  private stillNeeded (pin: PinRecord): boolean {
    if ((this.pinBlocks.get(pin.requestid) ?? []).length > 0) return true
    if (pin.removed?.why !== 'replaced' || pin.replacedBy == null) return false
    // releaseReplaced walks back from an unsettled replacement through the pins it replaced
    const next = this.getPin(pin.replacedBy)
    return next != null && unsettled(next)
  }

  /** how many pins the archive holds (a fact kept with each move, so nothing there is opened) */
  private archivedCount (): number {
    const n = this.env.fact(ARCHIVED)
    return typeof n === 'number' ? n : 0
  }

  /** Is there a pin with this requestid, here or in the archive (import's duplicate check; holdArchive around many)? */
  known (requestid: string): boolean {
    if (requestid.length > MAX_REQUESTID_LENGTH) return false
    return this.pins.doesExist(requestid) || this.env.archive.get('pins', requestid) != null
  }

  /** Is there a payment with this id, here or in the archive (import's duplicate check)? */
  knownPayment (id: string): boolean {
    return this.paymentUsed(id) || this.env.archive.get('payments', id) != null
  }

  /** Holds the archive open until the returned release (many known() calls: one opening, not one each). */
  holdArchive (): () => void {
    const lease = this.env.archive.lease()
    return () => { lease.release() }
  }

  /**
   * The ledger's record of a payment. Undefined also for one whose pin was
   * removed and moved to the archive (its record went with it): whether a
   * payment was used is paymentUsed's to say.
   */
  payment (id: string): PaymentRecord | undefined {
    return this.getPayment(id)
  }

  /**
   * Was this payment used: recorded here, or the payment of a removed pin
   * moved to the archive while a payment signed before the removal may still
   * be valid (no archive is opened: this runs for every paid request).
   */
  paymentUsed (id: string): boolean {
    const key = paymentKey(id)
    return (key != null && this.paymentsBinary.doesExist(key)) || this.payments.doesExist(id) || this.paymentsMoved.doesExist(movedMark(id, key))
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
  async create (pin: PinRecord, payment?: PaymentRecord, blocks: Array<string | CID> = [], within?: () => void): Promise<void> {
    const keys = [...new Set(blocks.map(cidKey))]
    await this.env.transaction(() => {
      if (this.pins.doesExist(pin.requestid)) throw new Error(`pin ${pin.requestid} exists already`)
      // another record's write in the same transaction (an upload ticket's claim): throws to abort it all
      within?.()
      if (payment != null && this.paymentUsed(payment.id)) throw new PaymentReusedError(payment.id)
      if (pin.replaces != null) {
        const old = this.getPin(pin.replaces)
        if (old == null || old.removed != null || old.owner !== pin.owner) throw new PinGoneError(pin.replaces)
        const at = new Date()
        this.putPin(old.requestid, { ...old, removed: { at: at.toISOString(), why: 'replaced' }, replacedBy: pin.requestid })
        this.removedIdx.put([at.getTime(), old.requestid], 1)
        this.fetchQueue.remove(old.requestid)
        this.byExpiry.remove([Date.parse(old.pinnedUntil), old.requestid])
      }
      // the payment first: the pin then keeps only a reference to it
      if (payment != null) {
        this.putPayment(payment, payment.requestid === pin.requestid ? pin.cid : undefined)
        this.settling.remove(payment.id)
      }
      this.putPin(pin.requestid, pin)
      if (pin.removed == null) {
        this.byCid.put([cidKey(pin.cid), pin.requestid], 1)
        this.byExpiry.put([Date.parse(pin.pinnedUntil), pin.requestid], pin.requestid)
      }
      if (pin.status === 'queued' || pin.status === 'pinning') this.fetchQueue.put(pin.requestid, pin.createdUs)
      this.addRefs(pin.requestid, keys)
    })
    if (pin.status === 'queued' || pin.status === 'pinning') for (const w of this.queuedWatchers) w()
  }

  /**
   * Records a settled payment that bought something other than a pin (an
   * upload ticket, tickets.ts), with `within` writing what it bought, and
   * removes its settlement note: one transaction. PaymentReusedError when the
   * payment is recorded already.
   */
  async recordPayment (payment: PaymentRecord, within: () => void): Promise<void> {
    await this.env.transaction(() => {
      if (this.paymentUsed(payment.id)) throw new PaymentReusedError(payment.id)
      within()
      this.putPayment(payment, undefined)
      this.settling.remove(payment.id)
    })
  }

  /**
   * Notes, durably, that a payment is about to be settled. The record it pays
   * for removes the note in its own transaction, so a note that outlives its
   * request means the process died between settling and recording: the payer
   * may have paid for nothing. Serve reconciles such notes against the chain,
   * and the operator closes the paid ones (src/service/payments/settlement-reconcile.ts).
   */
  async markSettling (rec: SettlingRecord): Promise<void> {
    await this.env.transaction(() => { this.settling.put(rec.paymentId, rec) })
  }

  /**
   * The settlement failed, but the payment may have gone through all the same: the note stays,
   * marked with when its request gave up, so reconciliation need not wait for it to finish.
   */
  async markSettleUncertain (paymentId: string, at: string): Promise<void> {
    await this.env.transaction(() => {
      const note = this.settling.get(paymentId)
      if (note != null) this.settling.put(paymentId, { ...note, settleFailedAt: at })
    })
  }

  /** The settlement did not happen (refused): forget the note. */
  async clearSettling (paymentId: string): Promise<void> {
    await this.env.transaction(() => { this.settling.remove(paymentId) })
  }

  /** requestids of pins waiting to be fetched, oldest first */
  pendingFetches (): string[] {
    const ids: Array<[number, string]> = []
    for (const { key, value } of this.fetchQueue.getRange()) ids.push([value, key])
    return ids.sort((a, b) => a[0] - b[0]).map(([, id]) => id)
  }

  /**
   * A fetched pin is complete: status pinned, its blocks referenced, out of
   * the queue, and the pin it replaced (if any) releases its blocks — one
   * transaction. Returns undefined if the pin was removed meanwhile.
   */
  async finishFetch (requestid: string, blocks: Array<string | CID>, dagSize: number, details: string): Promise<PinRecord | undefined> {
    const keys = [...new Set(blocks.map(cidKey))]
    let done: PinRecord | undefined
    await this.env.transaction(() => {
      this.fetchQueue.remove(requestid)
      const pin = this.getPin(requestid)
      if (pin == null || withdrawn(pin)) return
      done = { ...pin, status: 'pinned', dagSize, statusDetails: details }
      delete done.fetch
      this.putPin(requestid, done)
      this.addRefs(requestid, keys)
      this.releaseReplaced(pin)
    })
    return done
  }

  /** A pin by CID that cannot be completed: status failed with the reason, out of the queue. */
  async failFetch (requestid: string, details: string): Promise<PinRecord | undefined> {
    let failed: PinRecord | undefined
    await this.env.transaction(() => {
      this.fetchQueue.remove(requestid)
      const pin = this.getPin(requestid)
      if (pin == null || withdrawn(pin)) return
      failed = { ...pin, status: 'failed', statusDetails: details }
      this.putPin(requestid, failed)
      this.releaseReplaced(pin)
    })
    return failed
  }

  private readonly queuedWatchers = new Set<() => void>()
  private readonly removedWatchers = new Set<(requestid: string) => void>()

  /** Calls `fn` once a pin waiting for the fetcher has been committed (a pin by CID, one recorded by reconciliation), until the returned function is called. */
  watchQueued (fn: () => void): () => void {
    this.queuedWatchers.add(fn)
    return () => { this.queuedWatchers.delete(fn) }
  }

  /** Calls `fn` with the requestid of a pin once its removal or takedown has been committed, until the returned function is called. */
  watchRemoved (fn: (requestid: string) => void): () => void {
    this.removedWatchers.add(fn)
    return () => { this.removedWatchers.delete(fn) }
  }

  private readonly refWatchers = new Set<(keys: string[]) => void>()

  /**
   * Calls `fn` with block CIDs as pins start referencing them, until the
   * returned function is called (gc protects blocks committed while it runs).
   */
  watchNewRefs (fn: (keys: string[]) => void): () => void {
    this.refWatchers.add(fn)
    return () => { this.refWatchers.delete(fn) }
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

  private readonly releaseWatchers = new Set<(blocks: number, bytes: number) => void>()

  /**
   * Calls `fn` as pins let go of blocks no other pin references: how many,
   * and their bytes as estimated from the pin's dag size (a share of it by
   * block count; 1 MiB a block without one). Serve's gc watermark sums these.
   */
  watchReleased (fn: (blocks: number, bytes: number) => void): () => void {
    this.releaseWatchers.add(fn)
    return () => { this.releaseWatchers.delete(fn) }
  }

  private addRefs (requestid: string, keys: string[]): void {
    if (keys.length === 0) return
    for (const w of this.refWatchers) w(keys)
    this.pinBlocks.put(requestid, keys)
    for (const k of keys) this.blockRefs.put(k, (this.blockRefs.get(k) ?? 0) + 1)
    const pin = this.getPin(requestid)
    if (pin != null) this.provides.hold(pin.cid, keys)
  }

  /** Drops a pin's block references (idempotent: the pin's block list goes with them). */
  private releaseRefs (requestid: string): void {
    const keys = this.pinBlocks.get(requestid) ?? []
    let freed = 0
    for (const k of keys) {
      const n = (this.blockRefs.get(k) ?? 0) - 1
      if (n > 0) this.blockRefs.put(k, n)
      else { this.blockRefs.remove(k); freed++ }
    }
    this.pinBlocks.remove(requestid)
    const pin = this.getPin(requestid)
    if (pin != null && keys.length > 0) this.provides.release(pin.cid, keys)
    if (freed > 0 && this.releaseWatchers.size > 0) {
      const bytes = pin?.dagSize != null ? Math.round(pin.dagSize * freed / keys.length) : freed * 1_048_576
      for (const w of this.releaseWatchers) w(freed, bytes)
    }
  }

  /**
   * A replacement settled (pinned, failed) or went (unpinned, expired): what
   * it held for its chain goes. That is the pin it replaced and, while that
   * one was itself a replacement still unsettled when it was replaced, what
   * that one held in turn: A → B (queued) → C holds A's blocks until C
   * settles. A settled pin already let go of its own predecessor, so the walk
   * stops at the first one.
   */
  private releaseReplaced (pin: PinRecord): void {
    let id = pin.replaces
    while (id != null) {
      this.releaseRefs(id)
      const up = this.getPin(id)
      if (up == null || !unsettled(up)) return
      id = up.replaces
    }
  }

  /**
   * Does this pin's block list still hold anything? A pin that has not been
   * removed holds its own blocks; a replaced one holds them while its
   * successors, down the chain of replacements still unsettled, lead to a pin
   * that is neither settled nor removed.
   */
  private holdsRefs (pin: PinRecord): boolean {
    let p: PinRecord | undefined = pin
    while (p?.removed != null) {
      if (p.removed.why !== 'replaced' || p.replacedBy == null) return false
      const next: PinRecord | undefined = this.getPin(p.replacedBy)
      if (next == null || !unsettled(next)) return false
      p = next
    }
    return p != null
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
    await this.inKeyBatches(this.pinBlocks, COMPACT_BATCH, tick, (key) => {
      const pin = this.getPin(key)
      if (pin != null && this.holdsRefs(pin)) return
      this.releaseRefs(key)
      n++
    }, resume)
    return n
  }

  /** Is this block part of the DAG of a pin that has not been removed? */
  isPinnedBlock (cid: string | CID): boolean {
    return (this.blockRefs.get(cidKey(cid)) ?? 0) > 0
  }

  /** Updates fields of an existing pin (status, sizes, removal) in one transaction; a pin an operator took down stays as it is (and is returned so). */
  async update (requestid: string, change: (pin: PinRecord) => PinRecord): Promise<PinRecord | undefined> {
    let updated: PinRecord | undefined
    await this.env.transaction(() => {
      const current = this.getPin(requestid)
      if (current == null) return
      if (current.takedown != null) {
        updated = current
        return
      }
      updated = change(structuredClone(current))
      this.putPin(requestid, updated)
    })
    return updated
  }

  /**
   * Marks a pin removed (unpinned, replaced or expired) and releases its block
   * references, in one transaction. The record stays for accounting; blocks
   * go only when gc finds no live pin referencing them.
   */
  async remove (requestid: string, why: NonNullable<PinRecord['removed']>['why'], at: Date = new Date()): Promise<PinRecord | undefined> {
    let removed: PinRecord | undefined
    await this.env.transaction(() => {
      const pin = this.getPin(requestid)
      if (pin == null || pin.removed != null) return
      removed = { ...pin, removed: { at: at.toISOString(), why } }
      this.putPin(requestid, removed)
      this.removedIdx.put([at.getTime(), requestid], 1)
      this.fetchQueue.remove(requestid)
      this.byExpiry.remove([Date.parse(pin.pinnedUntil), requestid])
      this.releaseRefs(requestid)
      // a replacement removed before it settled also lets go of what it replaced
      this.releaseReplaced(pin)
    })
    if (removed != null) for (const w of this.removedWatchers) w(requestid)
    return removed
  }

  /**
   * An operator takes a pin down: it becomes `failed` with the reason in its
   * status details (the owner still sees it, until it would have expired), it
   * leaves the fetch queue, and its block references go, so its content is no
   * longer served unless another live pin holds it — one transaction.
   * Undefined if there is no such pin, or it was removed or taken down already.
   */
  async takeDown (requestid: string, reason: string, at: Date = new Date()): Promise<PinRecord | undefined> {
    let down: PinRecord | undefined
    await this.env.transaction(() => {
      const pin = this.getPin(requestid)
      if (pin == null || pin.removed != null || pin.takedown != null) return
      down = { ...pin, status: 'failed', statusDetails: `removed by the operator on ${at.toISOString()}: ${reason}`, takedown: { at: at.toISOString(), reason } }
      delete down.fetch
      this.putPin(requestid, down)
      this.fetchQueue.remove(requestid)
      this.releaseRefs(requestid)
      if (pin.replaces != null) this.releaseRefs(pin.replaces)
    })
    if (down != null) for (const w of this.removedWatchers) w(requestid)
    return down
  }

  /** requestids of every pin not removed (failed and taken down ones too) whose root is this CID (v0 and v1 alike) */
  requestidsOfCid (cid: string | CID): string[] {
    const k = cidKey(cid)
    const ids: string[] = []
    for (const { key } of this.byCid.getRange({ start: [k], end: [k, '\uffff'] })) ids.push(key[1])
    return ids
  }

  /**
   * Every owner's summaries of pins not removed, created strictly between `afterUs` and `beforeUs`, with their owner and creation
   * time (in owner order). `withCid` false: without their CIDs (readSummary), for a listing that filters on none.
   */
  allSummaries (beforeUs?: number, afterUs?: number): Generator<{ owner: string, createdUs: number, summary: PinSummary }>
  allSummaries (beforeUs: number | undefined, afterUs: number | undefined, withCid: boolean): Generator<{ owner: string, createdUs: number, summary: ListedSummary }>
  * allSummaries (beforeUs = Number.MAX_SAFE_INTEGER, afterUs = -1, withCid = true): Generator<{ owner: string, createdUs: number, summary: ListedSummary }> {
    for (const { key, value } of this.byOwner.getRange()) {
      if (key[1] >= beforeUs || key[1] <= afterUs) continue
      const summary = readSummary(key[2], value, withCid)
      if (!summary.removed) yield { owner: key[0], createdUs: key[1], summary }
    }
  }

  /** requestids of pins not yet removed whose pinned_until is at or before `cutoff`, oldest first */
  * expiredBy (cutoff: Date): Generator<string> {
    for (const { key } of this.byExpiry.getRange({ end: [cutoff.getTime(), '\uffff'] })) {
      if (key[0] <= cutoff.getTime()) yield key[1]
    }
  }

  /**
   * Extends a pin's pinned_until and records the renewal's payment, in one
   * transaction. `until` computes the new date from the current record and
   * may refuse (throw), which writes nothing.
   */
  async renew (requestid: string, months: number, payment: PaymentRecord | undefined, until: (pin: PinRecord) => Date): Promise<PinRecord> {
    let renewed: PinRecord | undefined
    await this.env.transaction(() => {
      const pin = this.getPin(requestid)
      if (pin == null || pin.removed != null) throw new PinGoneError(requestid)
      const pinnedUntil = until(pin)
      if (payment != null && this.paymentUsed(payment.id)) throw new PaymentReusedError(payment.id)
      renewed = { ...pin, pinnedUntil: pinnedUntil.toISOString(), months: pin.months + months }
      this.putPin(requestid, renewed)
      this.byExpiry.remove([Date.parse(pin.pinnedUntil), requestid])
      this.byExpiry.put([pinnedUntil.getTime(), requestid], requestid)
      if (payment != null) {
        this.putPayment(payment)
        this.settling.remove(payment.id)
      }
    })
    return renewed as PinRecord
  }

  /** Every payment, the archive's too (export); `at`: as the snapshot holds them. */
  * allPayments (at?: LedgerSnapshot): Generator<PaymentRecord> {
    yield * this.withArchive(at, this.ledgerPayments(at), (a) => a.payments?.getRange(a.read), (p) => p.id)
  }

  /** the ledger's own payments, in the order of their ids' UTF-8 bytes */
  private * ledgerPayments (at?: LedgerSnapshot): Generator<PaymentRecord> {
    const pinCid = this.pinCidIn(at)
    // both databases in the order of the ids' UTF-8 bytes (payments-binary's keys sort as their ids do)
    const text = this.payments.getRange(at?.read)[Symbol.iterator]()
    const binary = this.paymentsBinary.getRange(at?.read)[Symbol.iterator]()
    let t = text.next()
    let b = binary.next()
    let bId = b.done === true ? undefined : paymentIdOfKey(b.value.key)
    while (t.done !== true || b.done !== true) {
      if (b.done === true || (t.done !== true && Buffer.compare(Buffer.from(t.value.key), Buffer.from(bId as string)) < 0)) {
        yield readPayment(t.value.key, t.value.value, pinCid)
        t = text.next()
      } else {
        yield readPayment(bId as string, b.value.value, pinCid)
        b = binary.next()
        bId = b.done === true ? undefined : paymentIdOfKey(b.value.key)
      }
    }
  }

  /** The block CIDs a pin references (empty once released); `at`: as the snapshot holds them. */
  blocksOf (requestid: string, at?: LedgerSnapshot): string[] {
    return this.pinBlocks.get(requestid, at?.read) ?? []
  }

  /** How many pins reference this block. */
  refCount (cid: string | CID): number {
    return this.blockRefs.get(cidKey(cid)) ?? 0
  }

  /** Every block CID (v1) referenced by at least one pin: gc's mark set. */
  * referencedBlocks (): Generator<string> {
    for (const { key } of this.blockRefs.getRange()) yield key
  }

  /**
   * Writes imported records as they are (migration): each pin with its
   * indexes, queue entry and block references, and payments — one
   * transaction per batch. Existing requestids or payment ids are refused.
   * `within` writes other records of the batch in the same transaction
   * (tickets.ts: upload tickets); whatever it throws aborts the whole batch.
   */
  async importBatch (pins: Array<{ pin: PinRecord, blocks?: string[] }>, payments: PaymentRecord[], within?: () => void): Promise<void> {
    await this.env.transaction(() => {
      within?.()
      // payments first, so that a pin of this batch keeps only a reference to its payment
      const batchCids = new Map(pins.map(({ pin }) => [pin.requestid, pin.cid]))
      for (const p of payments) {
        if (this.paymentUsed(p.id)) throw new PaymentReusedError(p.id)
        this.putPayment(p, batchCids.get(p.requestid) ?? this.pinCid(p.requestid))
      }
      for (const { pin, blocks } of pins) {
        if (this.pins.doesExist(pin.requestid)) throw new Error(`pin ${pin.requestid} exists already`)
        this.putPin(pin.requestid, pin)
        if (pin.removed == null) this.byCid.put([cidKey(pin.cid), pin.requestid], 1)
        // references as the source ledger had them (a replaced pin keeps its blocks until its replacement settles)
        if (blocks != null && blocks.length > 0) this.addRefs(pin.requestid, [...new Set(blocks.map(cidKey))])
        if (pin.removed != null) {
          this.removedIdx.put([removedMs(pin), pin.requestid], 1)
          // a removed pin still holding blocks: the next upgrade checks its chain of replacements, as for a
          // ledger an older pind left (the export may come from one)
          if (blocks != null && blocks.length > 0) this.env.setUpgraded('repair:replacement-chains', false)
          continue
        }
        this.byExpiry.put([Date.parse(pin.pinnedUntil), pin.requestid], pin.requestid)
        if (pin.status === 'queued' || pin.status === 'pinning') this.fetchQueue.put(pin.requestid, pin.createdUs)
      }
      // a pin of an earlier batch whose payment came in this one: now a reference (an export lists every pin before the payments)
      for (const p of payments) {
        const stored = this.pins.get(p.requestid)
        if (stored == null || paymentByRef(stored) || paymentIdOf(stored) !== p.id) continue
        this.pins.put(p.requestid, storePin(readPin(p.requestid, stored, this.paymentOfPin(p.requestid), this.assets), p, this.assets))
      }
    })
    let maxUs = 0
    for (const { pin } of pins) maxUs = Math.max(maxUs, pin.createdUs)
    seedClock(maxUs)
  }

  /** Is any live pin holding this CID as its root? */
  hasLivePin (cid: string | CID, now: Date = new Date()): boolean {
    const k = cidKey(cid)
    for (const { key } of this.byCid.getRange({ start: [k], end: [k, '\uffff'] })) {
      const pin = this.getPin(key[1])
      if (pin != null && pin.status === 'pinned' && isLive(pin, now, this.graceMs)) return true
    }
    return false
  }

  /** The requestids of live pins (any status but failed) whose root is this CID. */
  livePinsOf (cid: string | CID, now: Date = new Date()): string[] {
    const k = cidKey(cid)
    const out: string[] = []
    for (const { key } of this.byCid.getRange({ start: [k], end: [k, '\uffff'] })) {
      const pin = this.getPin(key[1])
      if (pin != null && isLive(pin, now, this.graceMs)) out.push(pin.requestid)
    }
    return out
  }

  /** Pins of one owner not removed, newest first, created strictly between `afterUs` and `beforeUs`. */
  * byOwnerNewestFirst (owner: string, beforeUs = Number.MAX_SAFE_INTEGER, afterUs = -1): Generator<PinRecord> {
    for (const s of this.summariesByOwner(owner, beforeUs, afterUs)) {
      const pin = this.getPin(s.id)
      if (pin != null) yield pin
    }
  }

  /**
   * The owner index's summaries (pins not removed), newest first: enough to filter and count without reading records.
   * `withCid` false: without their CIDs (readSummary), for a listing that filters on none.
   */
  summariesByOwner (owner: string, beforeUs?: number, afterUs?: number): Generator<PinSummary>
  summariesByOwner (owner: string, beforeUs: number | undefined, afterUs: number | undefined, withCid: boolean): Generator<ListedSummary>
  * summariesByOwner (owner: string, beforeUs = Number.MAX_SAFE_INTEGER, afterUs = -1, withCid = true): Generator<ListedSummary> {
    for (const { key, value } of this.byOwner.getRange({ start: [owner, beforeUs], end: [owner, afterUs], reverse: true })) {
      if (key[1] >= beforeUs || key[1] <= afterUs) continue
      const summary = readSummary(key[2], value, withCid)
      if (!summary.removed) yield summary
    }
  }

  /**
   * The owner index's pins not removed, newest first, with their status and
   * pinned_until only: read from each summary's bytes (summaryStateOf), the
   * rest left undecoded. What GET /pins without name, meta or cid filters
   * reads of every pin of its owner.
   */
  * statesByOwner (owner: string, beforeUs = Number.MAX_SAFE_INTEGER, afterUs = -1): Generator<OwnerPinState> {
    for (const { key, value: state } of this.byOwnerStates.getRange({ start: [owner, beforeUs], end: [owner, afterUs], reverse: true })) {
      if (key[1] >= beforeUs || key[1] <= afterUs) continue
      if (state === 'removed') continue
      if (state !== 'undecoded') {
        yield { id: key[2], status: state.status, until: state.until }
        continue
      }
      // bytes in another shape (an older layout): decoded as summariesByOwner does
      const stored = this.byOwner.get(key)
      const summary = stored !== undefined ? readSummary(key[2], stored) : undefined
      if (summary != null && !summary.removed) yield { id: summary.id, status: summary.status, until: summary.until }
    }
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
    for (const { value: requestid } of this.byExpiry.getRange()) {
      const pin = this.getPin(requestid)
      if (pin == null || pin.removed != null) continue
      notRemoved++
      if (pin.status === 'failed' || this.isLive(pin, now)) out[pin.status]++
    }
    out.removed = Math.max(0, this.pinCount() - notRemoved) + this.archivedCount()
    return out
  }

  /** how many pin records the ledger holds, removed ones included (the database's entry count: nothing is read) */
  private pinCount (): number {
    return (this.pins.getStats() as { entryCount: number }).entryCount
  }

  /** Every pin, the archive's too (export, import's emptiness check); `at`: as the snapshot holds them. */
  * all (at?: LedgerSnapshot): Generator<PinRecord> {
    yield * this.withArchive(at, this.allPins(at), (a) => a.pins?.getRange(a.read), (p) => p.requestid)
  }

  /**
   * The ledger's records merged with the archive's, in key order (both are
   * in the order of their keys' UTF-8 bytes); a record in both (a move cut
   * short by a crash, or made between the two snapshots) once, the ledger's.
   * Without a snapshot the archive is held open for the walk.
   */
  private * withArchive<T> (at: LedgerSnapshot | undefined, own: Iterator<T>, range: (a: ArchiveLease) => Iterable<{ value: T }> | undefined, keyOf: (r: T) => string): Generator<T> {
    const lease = at?.archive ?? this.env.archive.lease()
    try {
      const archived = (range(lease) ?? [])[Symbol.iterator]()
      let a = archived.next()
      let o = own.next()
      while (o.done !== true || a.done !== true) {
        const order = o.done === true ? 1 : a.done === true ? -1 : Buffer.compare(Buffer.from(keyOf(o.value)), Buffer.from(keyOf(a.value.value)))
        if (order <= 0) {
          yield o.value as T
          if (order === 0) a = archived.next()
          o = own.next()
        } else {
          yield a.value.value
          a = archived.next()
        }
      }
    } finally {
      if (at?.archive == null) lease.release()
    }
  }
}

/** Queued or being fetched: a replacement in this state still holds what it replaces. */
function unsettled (pin: PinRecord): boolean {
  return pin.status === 'queued' || pin.status === 'pinning'
}

/** What the owner index keeps of a pin: the fields GET /pins filters on; of a removed pin, that it was removed. */
export type PinSummary = LiveSummary | RemovedSummary

/** a summary as a listing that filters on no CID reads it: a live one's CID may be left out (summariesByOwner's withCid) */
export type ListedSummary = (Omit<LiveSummary, 'cid'> & { cid?: string }) | RemovedSummary

/** a pin not removed */
export interface LiveSummary {
  id: string
  /** the root CID, v1 */
  cid: string
  status: PinRecord['status']
  /** pinned_until, ms since the epoch */
  until: number
  removed: false
  name?: string
  meta: Record<string, string>
}

/** what statesByOwner reads of a pin: its requestid, status and pinned_until (ms since the epoch) */
export type OwnerPinState = Pick<LiveSummary, 'id' | 'status' | 'until'>
/** a pin's status and pinned_until, as its owner's counts know it */
type OwnerState = Pick<LiveSummary, 'status' | 'until'>

/** a removed pin: every listing skips it, so the index keeps nothing else of it (most of a ledger's pins) */
export interface RemovedSummary {
  id: string
  removed: true
}

export function summaryOf (pin: PinRecord): PinSummary {
  if (pin.removed != null) return { id: pin.requestid, removed: true }
  return { id: pin.requestid, cid: cidKey(pin.cid), status: pin.status, until: Date.parse(pin.pinnedUntil), removed: false, ...(pin.name != null ? { name: pin.name } : {}), meta: pin.meta }
}

/** CIDv0 and CIDv1 of the same content index alike. */
function cidKey (cid: string | CID): string {
  return (typeof cid === 'string' ? CID.parse(cid) : cid).toV1().toString()
}

export class PinGoneError extends PindError {
  override name = 'PinGoneError'
  constructor (readonly requestid: string) {
    super(`pin ${requestid} no longer exists`)
  }
}

export class PaymentReusedError extends PindError {
  override name = 'PaymentReusedError'
  constructor (readonly paymentId: string) {
    super('this payment was already used')
  }
}

/**
 * Whether two lmdb keys are the same (strings, numbers, byte keys, arrays of them). Not lmdb's
 * compareKeys: this module is loaded before lmdb's native addon may be (it is unpacked into the
 * data dir first), so it imports only lmdb's types.
 */
function sameKey (a: Key, b: Key): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b) === 0
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameKey(x as Key, b[i] as Key))
  return a === b
}
