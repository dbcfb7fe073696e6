/**
 * The ledger as pind uses it: one async contract, whatever keeps it (LMDB in
 * one file, ./lmdb/; a networked database). Its stores are reached through
 * it, writes that must go together run as one transaction, and an export
 * reads one consistent snapshot. Nothing here names a storage library.
 */
import type { Datastore } from 'interface-datastore'
import type { BlockFence, FrontEnds, Leases } from './coordination.js'
import type { DenialLedger } from './denials.js'
import type { PinLedger } from './pins.js'
import type { ProvideSchedule } from './provides.js'
import type { SigningKeyRecords } from './signing-keys.js'
import type { PaymentRecord, PinRecord } from './records.js'
import type { SettlementNotes } from './settlements.js'
import type { UploadTicket, UploadTickets } from './tickets.js'
import type { TokenLedger } from './tokens.js'

export interface RecordedSettings {
  /** the `iss` (and `aud`) of the wallet tokens serve issues */
  tokenIssuer: string
  /** seconds */
  tokenTtl: number
  /** seconds an expired pin keeps its blocks */
  expiryGrace: number
  /** --provide-strategy: roots, pinned or all */
  provideStrategy: string
  /** seconds */
  reprovideInterval: number
}

/** how far the ledger's upgrade has got: the step running and the records it has read so far */
export interface UpgradeProgress { upgrade: string, records: number }

/**
 * Writes that commit together or not at all: at most one pin write
 * (createPin, recordPayment or importPins) and any ticket writes. Each method's checks (a used
 * payment, a ticket already claimed, an id that exists) may fail when it is
 * called or when the transaction commits: either way `Ledger.transaction`
 * rejects with that error and nothing of the transaction is written.
 */
export interface LedgerTransaction {
  /** PinLedger.create, in this transaction */
  createPin(pin: PinRecord, payment?: PaymentRecord, blocks?: string[]): Promise<void>
  /** Records a payment that buys no pin (an upload ticket), removing its settlement note. PaymentReusedError when it is recorded already. */
  recordPayment(payment: PaymentRecord): Promise<void>
  /** Records a new ticket; an id that exists is refused. */
  putTicket(ticket: UploadTicket): Promise<void>
  /** Marks a ticket claimed by the pin `requestid` (UploadTickets.check's TicketClaimError when it may not be). */
  claimTicket(id: string, owner: string, requestid: string, now?: Date): Promise<void>
  /** Writes imported pins (with their block lists) and payments as they are (import-ledger). */
  importPins(pins: Array<{ pin: PinRecord, blocks?: string[] }>, payments: PaymentRecord[]): Promise<void>
  /** Writes imported tickets as they are; an id that exists is refused. */
  importTickets(tickets: UploadTicket[]): Promise<void>
}

/**
 * The ledger at one instant, whatever is written meanwhile (export-ledger:
 * pins, payments and tickets of one instant). Release it promptly, also when
 * the reader fails: holding one may cost the store space while writes go on.
 */
export interface LedgerSnapshot {
  /** every pin, archived ones too */
  pins(): AsyncIterable<PinRecord>
  payments(): AsyncIterable<PaymentRecord>
  tickets(): AsyncIterable<UploadTicket>
  pin(requestid: string): Promise<PinRecord | undefined>
  ticket(id: string): Promise<UploadTicket | undefined>
  blocksOf(requestid: string): Promise<string[]>
  release(): Promise<void>
}

export interface Ledger {
  readonly pins: PinLedger
  readonly tickets: UploadTickets
  readonly notes: SettlementNotes
  readonly tokens: TokenLedger
  readonly denials: DenialLedger
  readonly provides: ProvideSchedule
  /** the serves sharing this ledger (./coordination.ts) */
  readonly frontEnds: FrontEnds
  /** work that runs on one serve at a time */
  readonly leases: Leases
  /** the token signing keys, when several serves share this ledger (./signing-keys.ts); absent: each data dir's keys/ folder */
  readonly signingKeys?: SigningKeyRecords
  /** blocks being written to a block store several serves share (./coordination.ts); absent when one serve owns the ledger */
  readonly blockFence?: BlockFence
  /** Runs `fn`'s writes as one transaction: all committed once `fn` resolves, none if it (or a write's check) fails. */
  transaction<T>(fn: (tx: LedgerTransaction) => Promise<T>): Promise<T>
  snapshot(): Promise<LedgerSnapshot>
  /** what the last serve recorded of its settings (absent before any serve ran here) */
  recordedSettings(): Promise<Partial<RecordedSettings>>
  recordSettings(s: RecordedSettings): Promise<void>
  /** the ledger's schema version (a read that proves the ledger answers) */
  schemaVersion(): Promise<unknown>
  /** libp2p's and Helia's own records */
  datastore(): Datastore
  /**
   * The rest of the ledger's upgrade in the background (what serving does
   * not depend on): `done` resolves once it is done or stopped (rejects if
   * it failed); stop() halts it after the batch under way and waits for that.
   */
  upgradeLater(onProgress?: (p: UpgradeProgress) => void): { done: Promise<boolean>, stop(): Promise<void> }
  close(): Promise<void>
  /** a ledger on a database server: its connection pool now (for metrics; absent for LMDB) */
  poolStats?(): LedgerPoolStats
  /** a ledger on a database server: `fn` is told each call's operation (`pins.get`, …), duration and whether it failed */
  observeCalls?(fn: LedgerCallObserver): void
}

export interface LedgerPoolStats {
  /** connections open, idle among them, and callers waiting for one */
  total: number
  idle: number
  waiting: number
}

/** operation: a fixed name (`area.method`), never SQL; ok: false when the call threw */
export type LedgerCallObserver = (operation: string, seconds: number, ok: boolean) => void
