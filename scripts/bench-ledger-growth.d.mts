// Hand-written types for bench-ledger-growth.mjs (what test/unit/ledger/footprint.test.ts imports).
import type { PinLedger } from '../src/ledger/lmdb/pins.js'

/** the ledger code's clock and requestids: this tree's src/ledger, or a baseline's bundle */
export interface LedgerClock {
  nextCreated(): { iso: string, us: number }
  addMonths(from: Date, months: number): Date
  newRequestid(ms: number): string
}

export interface PaidWritesOptions {
  /** paid writes */
  n: number
  /** writes each payer keeps (it removes the older ones) */
  live: number
  seed: number
  /** default 16 */
  payers?: number
  /** the share of writes that are pins by CID, queued then fetched (default 0.2; 0: uploads only) */
  byCid?: number
  /** the share renewed once (default 0.05) */
  renew?: number
  /** blocks per write, 1 to this (default 4) */
  maxBlocks?: number
}

export function paidWrites (clock: LedgerClock, ledger: PinLedger, opts: PaidWritesOptions): Promise<void>
