/**
 * The ledger's archive (`ledger-archive.mdb`, beside `ledger.mdb`): removed
 * pins and the payments that created them, moved out of the ledger by serve's
 * archiver soon after the removal (PinLedger.archiveDue; until no payment
 * signed before it can be valid, the ledger keeps a mark of the payment, so
 * that it still counts as used).
 *
 * Why: lmdb maps `ledger.mdb`, and a long-running serve ends up
 * with every page of it resident (writes and reads wander over the whole
 * file as LMDB reuses freed pages), so the ledger's size is serve's memory.
 * Removed pins and their payments are kept for accounting, for ever, and
 * were nine tenths of what each paid write left (705 bytes in the soak), so
 * RSS grew with the number of writes ever made. Moved here, the ledger holds
 * what serve works with (live pins, recent removals, recent payments) and
 * stops growing when the live set does; the freed pages are reused.
 *
 * serve never keeps this file mapped: it is opened for a move or a read and
 * closed (unmapped) when the last user lets go of it (`lease`), so its pages
 * leave serve's RSS (kept open, the mapping's resident pages grew with the
 * file: 600 passes of 100 pins, 110 MiB of file, 110 MiB resident). Opening
 * and closing costs little, once the environment's last write transaction
 * before the close is an abort (closeDbs): lmdb-js (3.5) keeps the free-page
 * list it read from the free database in memory between write transactions
 * and mdb_env_close does not free it, an abort does. Without that, each
 * close after a move leaked the list (heaptrack: 2 KB a pass in 500 passes
 * of 20 pins; RSS with a collection between passes, serve's malloc and heap
 * settings: +2.2 KB a pass over passes 600–2,400, now +0.2 KB). What stays is
 * ~130 bytes per environment (lmdb-js's EnvWrap mutex, condition variable and
 * a copy of the path, never freed). The earlier "~100 KB per environment"
 * (600 bare cycles in a tight loop: anonymous 14 → 74 MiB) was no leak: it
 * is the loop's garbage (V8's young generation growing, V8's pooled pages,
 * malloc's heap) and levels off (~63 MiB at 1,200 cycles, no more at 2,400).
 * serve opens it for each batch of moves (PinLedger.archiveDue: held open
 * for a whole pass, the random keys of its payments made the whole file
 * resident while the pass ran), a pass every 2 minutes (src/app/daemon.ts). Records are kept whole (msgpack maps of PinRecord and
 * PaymentRecord, not ./stored.ts's compact arrays: nothing here is resident,
 * and a record must read without the ledger it came from). A record may be
 * in both files after a crash between the move's two commits (archive first,
 * then the ledger's delete): readers take the ledger's copy, and the next
 * move finishes the job.
 */
import { existsSync } from 'node:fs'
import { ABORT, open, type Database, type RootDatabase, type Transaction } from 'lmdb'
import type { PaymentRecord, PinRecord } from '../records.js'

/** the archive's own schema version (its meta database) */
const ARCHIVE_VERSION = 1

interface Dbs {
  root: RootDatabase
  /** a write transaction ran since the open (closeDbs then drops lmdb's free-page list) */
  wrote: boolean
  pins: Database<PinRecord, string>
  payments: Database<PaymentRecord, string>
}

/** A hold on the open archive, with a read transaction when asked for: release() once. */
export interface ArchiveLease {
  /** absent when there is no archive file yet (nothing was ever archived) */
  readonly pins?: Database<PinRecord, string>
  readonly payments?: Database<PaymentRecord, string>
  /** the lease's read transaction (a snapshot of the archive), when asked for */
  readonly read?: { transaction: Transaction }
  release(): void
}

/** The archive file of a ledger file: `…/ledger.mdb` → `…/ledger-archive.mdb`. */
export function archivePathOf (ledgerPath: string): string {
  return ledgerPath.replace(/(\.mdb)?$/, '-archive.mdb')
}

export class LedgerArchive {
  private dbs: Dbs | undefined
  private users = 0
  private closing: Promise<void> | undefined

  constructor (readonly path: string) {}

  /** whether anything was ever archived (the file exists) */
  exists (): boolean {
    return existsSync(this.path)
  }

  /**
   * Holds the archive open until release(); `snapshot`: with a read
   * transaction, so that every read through `read` sees one instant.
   * `create`: open (create) it even when there is no file yet.
   */
  lease (opts: { snapshot?: boolean, create?: boolean } = {}): ArchiveLease {
    if (this.dbs == null && opts.create !== true && !this.exists()) return { release: () => {} }
    const dbs = this.openDbs()
    this.users++
    const txn = opts.snapshot === true ? dbs.root.useReadTransaction() : undefined
    let released = false
    return {
      pins: dbs.pins,
      payments: dbs.payments,
      ...(txn != null ? { read: { transaction: txn } } : {}),
      release: () => {
        if (released) return
        released = true
        txn?.done()
        if (--this.users === 0) this.closeDbs()
      }
    }
  }

  /**
   * Writes pins and payments to the archive, durably (the commit is on disk
   * when this resolves). Records already there are written again, the same.
   */
  async put (pins: PinRecord[], payments: PaymentRecord[]): Promise<void> {
    const lease = this.lease({ create: true })
    try {
      const { pins: p, payments: pay } = lease as Required<Pick<ArchiveLease, 'pins' | 'payments'>>
      const dbs = this.dbs as Dbs
      dbs.wrote = true
      await dbs.root.childTransaction(() => {
        for (const pin of pins) p.put(pin.requestid, pin)
        for (const payment of payments) pay.put(payment.id, payment)
      })
    } finally {
      lease.release()
    }
  }

  /** an archived pin or payment (import's duplicate checks) */
  get (db: 'pins', key: string): PinRecord | undefined
  get (db: 'payments', key: string): PaymentRecord | undefined
  get (db: 'pins' | 'payments', key: string): PinRecord | PaymentRecord | undefined {
    const lease = this.lease()
    try {
      return lease[db]?.get(key)
    } finally {
      lease.release()
    }
  }

  /** waits for a close under way (the process is ending) */
  async close (): Promise<void> {
    await this.closing
  }

  private openDbs (): Dbs {
    if (this.dbs != null) return this.dbs
    const root = open({ path: this.path, maxDbs: 4, compression: false, mapSize: 2 ** 38 })
    const meta = root.openDB<unknown, string>({ name: 'meta' })
    const version = meta.get('schemaVersion')
    const wrote = version === undefined
    if (wrote) meta.putSync('schemaVersion', ARCHIVE_VERSION)
    else if (version !== ARCHIVE_VERSION) {
      void root.close()
      throw new Error(`ledger archive ${this.path} has schema version ${String(version)}; this pind understands ${ARCHIVE_VERSION}`)
    }
    this.dbs = {
      root,
      wrote,
      pins: root.openDB<PinRecord, string>({ name: 'pins' }),
      payments: root.openDB<PaymentRecord, string>({ name: 'payments' })
    }
    return this.dbs
  }

  /** unmaps the file: its pages leave the process's memory */
  private closeDbs (): void {
    const dbs = this.dbs
    if (dbs == null) return
    this.dbs = undefined
    // lmdb-js keeps the free-page list a write transaction read in memory for the next one, and
    // mdb_env_close does not free it (a leak of up to ~2 KB per close here, more with a longer
    // list); ending a write transaction with an abort frees it. Nothing is written (every put
    // was awaited before its lease let go); a read-only open takes no writer lock for this.
    if (dbs.wrote) {
      try {
        dbs.root.transactionSync(() => ABORT)
      } catch {}
    }
    // a lease taken while this close is under way opens the file again: lmdb shares the one
    // environment of a path within a process and unmaps it when its last user has closed it
    const done: Promise<void> = dbs.root.close().catch(() => {}).then(() => { if (this.closing === done) this.closing = undefined })
    this.closing = done
  }
}
