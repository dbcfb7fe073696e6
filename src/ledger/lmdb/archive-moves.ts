/**
 * The archiver's moves: removed pins (pins-removed: ./pins.ts) and the
 * payments that created them go to the archive (./archive.ts) once nothing
 * here needs them, with the moved marks of payments that must still count as
 * used (payments-moved); and the walks that read the ledger and the archive
 * as one (export).
 */
import type { PaymentRecord, PinRecord } from '../records.js'
import type { ArchiveLease } from './archive.js'
import { isMark, movedMark } from './payments.js'
import type { PinStore } from './pin-store.js'
import type { LedgerSnapshot } from './snapshot.js'
import { paymentKey } from './stored.js'
import { unsettled, type PinTables } from './tables.js'

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
export const ARCHIVE_BATCH = 100

/** when a removed pin was removed (ms; its record's time) */
export function removedMs (pin: PinRecord): number {
  const t = Date.parse(pin.removed?.at ?? '')
  return Number.isFinite(t) ? t : 0
}

/** the order of two pins-removed keys, as lmdb orders them */
function compareIndexKeys (a: [number, string], b: [number, string]): number {
  return a[0] !== b[0] ? a[0] - b[0] : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0
}

export class ArchiveMoves {
  /** how far this process's archiver passes have moved pins early (archiveDue's moveBefore): each pass goes on from there */
  private movedThrough: [number, string] | undefined
  /** holdArchive's holds not yet released: while there is one, a pass moves nothing (an import that merges checks ids against both files) */
  private holds = 0

  constructor (private readonly t: PinTables, private readonly store: PinStore) {}

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
    const t = this.t
    const moving: Array<{ key: [number, string], pin?: PinRecord, mark?: Uint8Array }> = []
    const payments: PaymentRecord[] = []
    let scanned = 0
    let next: [number, string] | undefined
    let last: [number, string] | undefined
    for (const { key, value } of t.removedIdx.getRange({ start, end: [end.getTime() + 1] })) {
      if (moving.length >= limit || ++scanned > 4 * limit) { next = key; break }
      last = key
      if (isMark(value)) {
        // moved already: the mark is forgotten once the payment cutoff has passed the removal
        if (!marked) moving.push({ key, mark: value })
        continue
      }
      const pin = this.store.getPin(key[1])
      if (pin == null || pin.removed == null) {
        moving.push({ key }) // not (or no longer) a removed pin here: the entry goes
        continue
      }
      if (this.stillNeeded(pin)) continue
      moving.push({ key, pin })
      const payment = pin.payment?.id != null ? this.store.getPayment(pin.payment.id, (rid) => rid === pin.requestid ? pin.cid : this.store.pinCid(rid)) : undefined
      if (payment != null && payment.requestid === pin.requestid) payments.push(payment)
    }
    if (moving.length === 0) return { moved: 0, next, last }
    const pins = moving.flatMap(m => m.pin != null ? [m.pin] : [])
    if (pins.length > 0) await t.env.archive.put(pins, payments)
    const paymentOf = new Map(payments.map(p => [p.requestid, p.id]))
    let moved = 0
    await t.env.transaction(() => {
      for (const { key, pin, mark } of moving) {
        if (mark != null) t.paymentsMoved.remove(Buffer.from(mark))
        if (pin == null || !t.pins.doesExist(pin.requestid)) {
          t.removedIdx.remove(key)
          continue
        }
        t.pins.remove(pin.requestid)
        t.pinBlocks.remove(pin.requestid)
        const paymentId = paymentOf.get(pin.requestid)
        if (paymentId != null) {
          const pk = paymentKey(paymentId)
          if (pk != null) t.paymentsBinary.remove(pk)
          t.payments.remove(paymentId)
        }
        if (marked && paymentId != null) {
          const m = movedMark(paymentId)
          t.paymentsMoved.put(m, 1)
          t.removedIdx.put(key, m)
        } else {
          t.removedIdx.remove(key)
        }
        moved++
      }
      if (moved > 0) void t.env.setFact(ARCHIVED, this.archivedCount() + moved)
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
   * PinLedger.archiveDue, which says what a pass moves.
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
  async archiveDue (cutoff: Date, between: () => Promise<void>, stopAsked: () => boolean, batchSize: number, moveBefore: Date): Promise<number> {
    // a hold taken while the pass runs stops it before its next batch
    const stop = (): boolean => this.holds > 0 || stopAsked()
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

  /** PinLedger.holdArchive: no pass moves anything until the returned function is called (once) */
  hold (): () => void {
    this.holds++
    let released = false
    return () => {
      if (released) return
      released = true
      this.holds--
    }
  }

  /** a removed pin the ledger still needs: it holds block references, or a replacement still unsettled walks through it (releaseReplaced) */
  private stillNeeded (pin: PinRecord): boolean {
    if ((this.t.pinBlocks.get(pin.requestid) ?? []).length > 0) return true
    if (pin.removed?.why !== 'replaced' || pin.replacedBy == null) return false
    // releaseReplaced walks back from an unsettled replacement through the pins it replaced
    const next = this.store.getPin(pin.replacedBy)
    return next != null && unsettled(next)
  }

  /** how many pins the archive holds (a fact kept with each move, so nothing there is opened) */
  archivedCount (): number {
    const n = this.t.env.fact(ARCHIVED)
    return typeof n === 'number' ? n : 0
  }
}

/**
 * The ledger's records merged with the archive's, in key order (both are
 * in the order of their keys' UTF-8 bytes); a record in both (a move cut
 * short by a crash, or made between the two snapshots) once, the ledger's.
 * Without a snapshot the archive is held open for the walk.
 */
export function * withArchive<T> (t: PinTables, at: LedgerSnapshot | undefined, own: Iterator<T>, range: (a: ArchiveLease) => Iterable<{ value: T }> | undefined, keyOf: (r: T) => string): Generator<T> {
  const lease = at?.archive ?? t.env.archive.lease()
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
