/**
 * The ledger contract (../ledger.ts) on LMDB: the classes of this folder,
 * whose reads are synchronous (a memory-mapped file), behind async methods.
 * A transaction collects its writes and applies them in one LMDB write
 * transaction once its function resolves: lmdb runs a write transaction's
 * body synchronously, so no await may fall inside one. Its checks therefore
 * run at commit (the contract allows either).
 */
import type { CID } from 'multiformats/cid'
import type { Ledger, LedgerSnapshot, LedgerTransaction, UpgradeProgress } from '../ledger.js'
import type { PinLedger as PinLedgerContract } from '../pins.js'
import type { PinQuery } from '../query.js'
import type { PaymentRecord, PinRecord } from '../records.js'
import type { UploadTicket } from '../tickets.js'
import { memoryFrontEnds, memoryLeases } from './coordination.js'
import { LmdbDatastore } from './datastore.js'
import { clockReady, nextCreated } from '../clock.js'
import { DenialLedger } from './denials.js'
import { FetchClaims } from './fetch-claims.js'
import { listAllOwners, listPins } from './listing.js'
import { openLedgerEnv, type LedgerEnv } from './open.js'
import { PinLedger } from './pins.js'
import { ProvideKeys } from './provide-keys.js'
import { recordedSettings, recordSettings, schemaVersion, type RecordedSettings } from './settings.js'
import { SettlementNotes } from './settlements.js'
import { TokenLedger } from './tokens.js'
import { UploadTickets } from './tickets.js'

export interface LmdbLedgerOptions {
  /** how long an expired pin keeps its blocks, given what the last serve recorded */
  graceMs: (recorded: Partial<RecordedSettings>) => number
  /** 'before-serving': only the upgrade steps serving depends on run now (Ledger.upgradeLater runs the rest); default: the whole upgrade */
  upgrade?: 'all' | 'before-serving'
  onUpgrade?: (p: UpgradeProgress) => void
}

/** Opens (creating, upgrading) the LMDB ledger at `path`. */
export async function openLmdbLedger (path: string, opts: LmdbLedgerOptions): Promise<LmdbLedger> {
  const env = await openLedgerEnv(path)
  try {
    // the sub-databases opened in one transaction each time (created, on a new ledger: ./open.ts)
    const pins = env.opening(() => new PinLedger(env, { graceMs: opts.graceMs(recordedSettings(env)) }))
    // a large ledger's new index holds the event loop: before anything else starts
    if (opts.upgrade === 'before-serving') await pins.upgradeBeforeServing(opts.onUpgrade)
    else await pins.upgrade(opts.onUpgrade)
    return env.opening(() => new LmdbLedger(env, pins))
  } catch (err) {
    await env.close()
    throw err
  }
}

export class LmdbLedger implements Ledger {
  readonly pins: PinLedgerContract
  readonly tickets: Ledger['tickets']
  readonly notes: Ledger['notes']
  readonly tokens: Ledger['tokens']
  readonly denials: Ledger['denials']
  readonly provides: Ledger['provides']
  readonly frontEnds: Ledger['frontEnds']
  readonly leases: Ledger['leases']
  private readonly lmdbTickets: UploadTickets

  constructor (private readonly env: LedgerEnv, private readonly lmdbPins: PinLedger) {
    this.pins = pinsOf(lmdbPins)
    const tickets = this.lmdbTickets = new UploadTickets(env, lmdbPins)
    this.tickets = {
      get: async (id) => tickets.get(id),
      check: async (id, owner, now) => tickets.check(id, owner, now),
      noteFailed: async (id, bytes) => { await tickets.noteFailed(id, bytes) }
    }
    const notes = new SettlementNotes(env)
    this.notes = {
      get: async (id) => notes.get(id),
      all: async () => [...notes.all()],
      apply: async (verdicts, at) => await notes.apply(verdicts, at),
      close: async (id, note, at) => await notes.close(id, note, at),
      closed: async () => [...notes.closed()]
    }
    const tokens = new TokenLedger(env)
    this.tokens = {
      recordIssued: async (rec) => { await tokens.recordIssued(rec) },
      revokeToken: async (jti, at) => { await tokens.revokeToken(jti, at) },
      revokeOwner: async (owner, at) => { await tokens.revokeOwner(owner, at) },
      isRevoked: async (claims) => tokens.isRevoked(claims),
      wasIssued: async (jti) => tokens.wasIssued(jti),
      revokedAt: async (jti) => tokens.revokedAt(jti),
      listIssued: async () => [...tokens.listIssued()],
      revocations: async () => tokens.revocations(),
      useNonce: async (nonce, until, now) => await tokens.useNonce(nonce, until, now)
    }
    const denials = new DenialLedger(env)
    const denialWatchers = new Set<() => void>()
    const told = <T>(v: T): T => { for (const fn of denialWatchers) fn(); return v }
    this.denials = {
      add: async (rec) => told(await denials.add(rec)),
      remove: async (key, event) => told(await denials.remove(key, event)),
      watch: (fn) => { denialWatchers.add(fn); return () => { denialWatchers.delete(fn) } },
      get: async (key) => denials.get(key),
      all: async () => [...denials.all()],
      history: async () => [...denials.history()]
    }
    this.provides = provideScheduleOf(lmdbPins.provides)
    this.frontEnds = memoryFrontEnds()
    this.leases = memoryLeases()
  }

  /** what the serve policy asks for every block, answered from the memory-mapped file */
  servedBlocks (): { isPinnedBlock(cid: CID): boolean, hasLivePin(cid: CID, now?: Date): boolean } {
    const p = this.lmdbPins
    return { isPinnedBlock: (cid) => p.isPinnedBlock(cid), hasLivePin: (cid, now) => p.hasLivePin(cid, now) }
  }

  async transaction<T>(fn: (tx: LedgerTransaction) => Promise<T>): Promise<T> {
    const w = new CollectedWrites()
    const result = await fn(w.tx)
    w.close()
    const tickets = this.lmdbTickets
    const within = (): void => {
      for (const op of w.ticketOps) {
        if (op.kind === 'put') tickets.putNewIn(op.ticket)
        else if (op.kind === 'claim') tickets.claimIn(op.id, op.owner, op.requestid, op.now)
        else tickets.importIn(op.tickets)
      }
    }
    const p = w.primary
    if (p?.kind === 'create') await this.lmdbPins.create(p.pin, p.payment, p.blocks, within)
    else if (p?.kind === 'payment') await this.lmdbPins.recordPayment(p.payment, within)
    else if (p?.kind === 'import') await this.lmdbPins.importBatch(p.pins, p.payments, within)
    else if (w.ticketOps.length > 0) await this.env.transaction(within)
    return result
  }

  async snapshot (): Promise<LedgerSnapshot> {
    const pins = this.lmdbPins
    const tickets = this.lmdbTickets
    const at = pins.snapshot()
    return {
      pins: () => eachOf(pins.all(at)),
      payments: () => eachOf(pins.allPayments(at)),
      tickets: () => eachOf(tickets.all(at)),
      pin: async (requestid) => pins.get(requestid, at),
      ticket: async (id) => tickets.get(id, at),
      blocksOf: async (requestid) => pins.blocksOf(requestid, at),
      release: async () => { at.release() }
    }
  }

  async recordedSettings (): Promise<Partial<RecordedSettings>> {
    return recordedSettings(this.env)
  }

  async recordSettings (s: RecordedSettings): Promise<void> {
    await recordSettings(this.env, s)
  }

  async schemaVersion (): Promise<unknown> {
    return schemaVersion(this.env)
  }

  datastore (): LmdbDatastore {
    return new LmdbDatastore(this.env.datastore)
  }

  upgradeLater (onProgress?: (p: UpgradeProgress) => void): { done: Promise<boolean>, stop(): Promise<void> } {
    const done = this.lmdbPins.upgradeLater(onProgress)
    return { done, stop: async () => { this.lmdbPins.haltUpgrade(); await done.catch(() => {}) } }
  }

  async close (): Promise<void> {
    await this.env.close()
  }
}

type TicketOp =
  | { kind: 'put', ticket: UploadTicket }
  | { kind: 'claim', id: string, owner: string, requestid: string, now?: Date }
  | { kind: 'import', tickets: UploadTicket[] }

type PrimaryWrite =
  | { kind: 'create', pin: PinRecord, payment?: PaymentRecord, blocks?: string[] }
  | { kind: 'payment', payment: PaymentRecord }
  | { kind: 'import', pins: Array<{ pin: PinRecord, blocks?: string[] }>, payments: PaymentRecord[] }

/**
 * A transaction's writes as its function makes them. PinLedger's writes take
 * the writes of other records into their own LMDB transaction (`within`), so
 * a transaction here is at most one pin, payment or import batch, and any
 * ticket writes.
 */
class CollectedWrites {
  primary: PrimaryWrite | undefined
  readonly ticketOps: TicketOp[] = []
  private closed = false
  readonly tx: LedgerTransaction = {
    createPin: async (pin, payment, blocks) => { this.set({ kind: 'create', pin, payment, blocks }) },
    recordPayment: async (payment) => { this.set({ kind: 'payment', payment }) },
    importPins: async (pins, payments) => { this.set({ kind: 'import', pins, payments }) },
    putTicket: async (ticket) => { this.add({ kind: 'put', ticket }) },
    claimTicket: async (id, owner, requestid, now) => { this.add({ kind: 'claim', id, owner, requestid, now }) },
    importTickets: async (tickets) => { this.add({ kind: 'import', tickets }) }
  }

  close (): void {
    this.closed = true
  }

  private set (w: PrimaryWrite): void {
    this.open()
    if (this.primary != null) throw new Error('the LMDB ledger writes one pin, payment or import batch per transaction')
    this.primary = w
  }

  private add (op: TicketOp): void {
    this.open()
    this.ticketOps.push(op)
  }

  private open (): void {
    if (this.closed) throw new Error('a ledger transaction was written to after its function resolved')
  }
}

async function * eachOf<T> (items: Iterable<T>): AsyncGenerator<T> {
  yield * items
}

function pinsOf (p: PinLedger): PinLedgerContract {
  const claims = new FetchClaims({ pendingFetches: () => p.pendingFetches(), get: (id) => p.get(id) })
  return {
    // one process writes this ledger: its own clock, seeded from the ledger (an upgrade may still be reading it)
    nextCreated: async () => { await clockReady(); return nextCreated() },
    graceMs: p.graceMs,
    isLive: (pin, now) => p.isLive(pin, now),
    get: async (id) => p.get(id),
    known: async (id) => p.known(id),
    requestidsOfCid: async (cid) => p.requestidsOfCid(cid),
    livePinsOf: async (cid, now) => p.livePinsOf(cid, now),
    list: async (owner: string | undefined, q: PinQuery, now?: Date) => owner == null ? listAllOwners(p, q, now) : listPins(p, owner, q, now),
    countByStatus: async (now) => p.countByStatus(now),
    usage: async (owner, now) => p.usage(owner, now),
    payment: async (id) => p.payment(id),
    paymentUsed: async (id) => p.paymentUsed(id),
    knownPayment: async (id) => p.knownPayment(id),
    markSettling: async (rec) => { await p.markSettling(rec) },
    markSettleUncertain: async (id, at) => { await p.markSettleUncertain(id, at) },
    clearSettling: async (id) => { await p.clearSettling(id) },
    create: async (pin, payment, blocks) => { await p.create(pin, payment, blocks) },
    update: async (id, change) => await p.update(id, change),
    remove: async (id, why, at) => await p.remove(id, why, at),
    takeDown: async (id, reason, at) => await p.takeDown(id, reason, at),
    renew: async (id, months, payment, until) => await p.renew(id, months, payment, until),
    pendingFetches: async () => p.pendingFetches(),
    claimFetches: async (holder, limit, leaseMs, dueBy) => claims.claim(holder, limit, leaseMs, dueBy),
    renewFetches: async (holder, ids, leaseMs) => claims.renew(holder, ids, leaseMs),
    releaseFetches: async (holder, ids) => { claims.release(holder, ids) },
    finishFetch: async (id, blocks, dagSize, details) => await p.finishFetch(id, blocks, dagSize, details),
    failFetch: async (id, details) => await p.failFetch(id, details),
    blocksOf: async (id) => p.blocksOf(id),
    refCount: async (cid: string | CID) => p.refCount(cid),
    referencedBlocks: () => eachOf(p.referencedBlocks()),
    expiredBy: (cutoff) => eachOf(p.expiredBy(cutoff)),
    releaseUnheld: async () => await p.releaseUnheld(),
    archiveDue: async (cutoff, between, stop, batchSize, moveBefore) => await p.archiveDue(cutoff, between, stop, batchSize, moveBefore),
    holdArchive: () => p.holdArchive(),
    watchQueued: (fn) => p.watchQueued(fn),
    watchRemoved: (fn) => p.watchRemoved(fn),
    watchNewRefs: (fn) => p.watchNewRefs(fn),
    watchReleased: (fn) => p.watchReleased(fn),
    committed: async () => { await p.committed() },
    watchCommitted: (fn) => p.watchCommitted(fn),
    // no other process writes this ledger: nothing is ever missed
    watchLost: () => () => {},
    referencedBatches: (batch) => p.referencedBatches(batch),
    livePinBatches: (batch) => p.livePinBatches(batch)
  }
}

function provideScheduleOf (k: ProvideKeys): Ledger['provides'] {
  return {
    onNewKeys: (fn) => k.onNewKeys(fn),
    due: async (kind, until, limit, after) => {
      const out = []
      for (const key of k.due(kind, until, after)) {
        if (out.length >= limit) break
        out.push(key)
      }
      return out
    },
    inRange: async (kind, range) => [...k.inRange(kind, range)],
    reschedule: async (kind, updates) => { await k.reschedule(kind, updates) },
    claim: async (kind, keys, until) => k.claim(kind, keys, until),
    // one serve owns this schedule: its records name the serve that comes back with this data dir
    reannounce: async () => 0,
    count: async (kind) => k.count(kind),
    countDue: async (kind, until) => k.countDue(kind, until),
    firstDue: async (kind) => k.firstDue(kind),
    cycleStart: async (now) => await k.cycleStart(now)
  }
}
