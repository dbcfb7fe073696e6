/**
 * One LMDB read transaction held across awaits: every read given the same
 * snapshot sees the ledger as it was when the snapshot was taken, whatever
 * serve writes meanwhile (export-ledger: pins, payments and upload tickets
 * of one instant).
 *
 * What holding one costs: LMDB cannot reuse a page freed by a write that
 * committed after the oldest live read transaction began, so while a
 * snapshot is held every write appends fresh pages instead, and the file
 * may grow by about what serve rewrites meanwhile (it does not shrink
 * afterwards; LMDB reuses those pages once the snapshot is released). Writers
 * are never blocked. Snapshots are for short-lived admin reads, one at a
 * time per command, so that growth is bounded by what serve writes during
 * one export; release() them promptly, also when the reader fails or goes
 * away. This folder is the only one that sees the transaction inside.
 */
import type { Database, Transaction } from 'lmdb'
import type { ArchiveLease } from './archive.js'

export class LedgerSnapshot {
  private done = false
  /** the archive of the same instant (./archive.ts; taken just after the ledger's), held until release() */
  archive: ArchiveLease | undefined

  constructor (private readonly txn: Transaction) {}

  /** lmdb's read options that read in this snapshot (get, getRange, doesExist…) */
  get read (): { transaction: Transaction } {
    if (this.done) throw new Error('ledger snapshot used after release')
    return { transaction: this.txn }
  }

  /** Ends the read transaction (once; later calls do nothing). */
  release (): void {
    if (this.done) return
    this.done = true
    this.txn.done()
    this.archive?.release()
  }
}

/** lmdb's getBinaryFast reads in a given transaction as get does (lmdb/read.js), though its types leave the option out. */
export function binaryFastIn (db: Database<any, any>, key: unknown, at: LedgerSnapshot | undefined): Buffer | undefined {
  if (at == null) return db.getBinaryFast(key)
  return (db.getBinaryFast as (key: unknown, options: { transaction: Transaction }) => Buffer | undefined).call(db, key, at.read)
}
