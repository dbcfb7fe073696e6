/**
 * The databases of the pin ledger (./pins.ts says what each holds), opened
 * once by PinLedger and shared, with the env, by the modules it delegates to
 * (./pin-store.ts, ./owner-counts.ts, ./block-refs.ts, ./payments.ts, …).
 */
import type { Database } from 'lmdb'
import { CID } from 'multiformats/cid'
import { ChangeFeed } from './change-feed.js'
import type { LedgerEnv } from './open.js'
import type { PinRecord, PinState } from '../records.js'
import type { SettlingRecord } from './settlements.js'
import { summaryStateOf, type StoredPayment, type StoredPin, type StoredSummary, type SummaryState } from './stored.js'

export type OwnerKey = [string, number, string]
export type CidKey = [string, string]

export interface PinTables {
  /** the ledger's environment, its transactions noted and told by `changes` */
  readonly env: LedgerEnv
  /** what each committed transaction changed (./change-feed.ts) */
  readonly changes: ChangeFeed
  /** records as ./stored.ts stores them: read through getPin, getPayment, summaries */
  readonly pins: Database<StoredPin, string>
  readonly byOwner: Database<StoredSummary, OwnerKey>
  /** the same owner index, each value read only as far as its status and pinned_until (statesByOwner) */
  readonly byOwnerStates: Database<SummaryState, OwnerKey>
  readonly byCid: Database<number | string, CidKey>
  readonly payments: Database<StoredPayment, string>
  readonly paymentsBinary: Database<StoredPayment, Buffer>
  readonly pinBlocks: Database<string[], string>
  readonly blockRefs: Database<number, string>
  readonly fetchQueue: Database<number, string>
  readonly byExpiry: Database<string, [number, string]>
  readonly settling: Database<SettlingRecord, string>
  /** removed pins by the time of their removal, [ms, requestid]: 1 until archived, then their payment's moved mark until it is forgotten (archiveBatch) */
  readonly removedIdx: Database<number | Uint8Array, [number, string]>
  /** the payments of pins moved to the archive that must still count as used (archiveBatch): moved mark → 1 */
  readonly paymentsMoved: Database<number, Buffer>
  /** the owner's pins not removed, by status: [owner, status] → n (ownerCount) */
  readonly ownerCounts: Database<number, [string, PinState]>
  /** the owner's pins not removed, by status and span of creation: [owner, status, createdUs / BUCKET_US] → n (ownerCount) */
  readonly ownerBuckets: Database<number, [string, PinState, number]>
  /** the owner's pins not removed, by pinned_until: [owner, untilMs, requestid] → [status, createdUs] (ownerCount) */
  readonly ownerExpiry: Database<[PinState, number], [string, number, string]>
}

export function openPinTables (ledgerEnv: LedgerEnv): PinTables {
  const changes = new ChangeFeed()
  const env = changes.around(ledgerEnv)
  return {
    changes,
    env,
    pins: env.db<StoredPin>('pins'),
    byOwner: env.db<StoredSummary>('pins-by-owner'),
    byOwnerStates: env.db<SummaryState>('pins-by-owner', { decoder: (bytes, size) => summaryStateOf(bytes, size) ?? 'undecoded' }),
    byCid: env.db<number | string>('pins-by-cid'),
    payments: env.db<StoredPayment>('payments'),
    paymentsBinary: env.db<StoredPayment>('payments-binary', { keyEncoding: 'binary' }) as Database<StoredPayment, Buffer>,
    pinBlocks: env.db<string[]>('pin-blocks'),
    blockRefs: env.db<number>('block-refs'),
    fetchQueue: env.db<number>('fetch-queue'),
    byExpiry: env.db<string>('pins-by-expiry'),
    settling: env.db<SettlingRecord>('settling'),
    removedIdx: env.db<number | Uint8Array>('pins-removed'),
    paymentsMoved: env.db<number>('payments-moved', { keyEncoding: 'binary' }) as Database<number, Buffer>,
    ownerCounts: env.db<number>('pins-owner-counts'),
    ownerBuckets: env.db<number>('pins-owner-buckets'),
    ownerExpiry: env.db<[PinState, number]>('pins-owner-expiry')
  }
}

/** CIDv0 and CIDv1 of the same content index alike. */
export function cidKey (cid: string | CID): string {
  return (typeof cid === 'string' ? CID.parse(cid) : cid).toV1().toString()
}

/** Queued or being fetched: a replacement in this state still holds what it replaces. */
export function unsettled (pin: PinRecord): boolean {
  return pin.status === 'queued' || pin.status === 'pinning'
}
