/**
 * Payments in the ledger beyond the records themselves (./pin-store.ts reads
 * and writes those): whether a payment was used, the moved marks of the
 * payments of archived pins (payments-moved), the settlement notes
 * (settling), and the ledger's own payments in id order (export).
 */
import type { PaymentRecord } from '../records.js'
import { PaymentReusedError } from './errors.js'
import type { PinStore } from './pin-store.js'
import type { SettlingRecord } from './settlements.js'
import type { LedgerSnapshot } from './snapshot.js'
import { paymentIdOfKey, paymentKey, readPayment } from './stored.js'
import type { PinTables } from './tables.js'

/**
 * The key in payments-moved of a payment id: a type byte, then the 52 bytes
 * of an x402 id (./stored.ts paymentKey) or the id's UTF-8 (any other).
 */
export function movedMark (id: string, key = paymentKey(id)): Buffer {
  return key != null ? Buffer.concat([Buffer.of(0), key]) : Buffer.concat([Buffer.of(1), Buffer.from(id, 'utf8')])
}

/** a pins-removed value that is a moved mark (the pin is in the archive, its payment still marked used) */
export function isMark (v: unknown): v is Uint8Array {
  return v instanceof Uint8Array
}

/** PinLedger.paymentUsed */
export function paymentUsed (t: PinTables, id: string): boolean {
  const key = paymentKey(id)
  return (key != null && t.paymentsBinary.doesExist(key)) || t.payments.doesExist(id) || t.paymentsMoved.doesExist(movedMark(id, key))
}

/** the ledger's own payments, in the order of their ids' UTF-8 bytes */
export function * ledgerPayments (t: PinTables, store: PinStore, at?: LedgerSnapshot): Generator<PaymentRecord> {
  const pinCid = store.pinCidIn(at)
  // both databases in the order of the ids' UTF-8 bytes (payments-binary's keys sort as their ids do)
  const text = t.payments.getRange(at?.read)[Symbol.iterator]()
  const binary = t.paymentsBinary.getRange(at?.read)[Symbol.iterator]()
  let tx = text.next()
  let b = binary.next()
  let bId = b.done === true ? undefined : paymentIdOfKey(b.value.key)
  while (tx.done !== true || b.done !== true) {
    if (b.done === true || (tx.done !== true && Buffer.compare(Buffer.from(tx.value.key), Buffer.from(bId as string)) < 0)) {
      yield readPayment(tx.value.key, tx.value.value, pinCid)
      tx = text.next()
    } else {
      yield readPayment(bId as string, b.value.value, pinCid)
      b = binary.next()
      bId = b.done === true ? undefined : paymentIdOfKey(b.value.key)
    }
  }
}

/** The payments that bought something other than a pin, and the settlement notes (PinLedger's methods of the same names). */
export class PaymentNotes {
  constructor (private readonly t: PinTables, private readonly store: PinStore) {}

  async recordPayment (payment: PaymentRecord, within: () => void): Promise<void> {
    await this.t.env.transaction(() => {
      if (paymentUsed(this.t, payment.id)) throw new PaymentReusedError(payment.id)
      within()
      this.store.putPayment(payment, undefined)
      this.t.settling.remove(payment.id)
    })
  }

  async markSettling (rec: SettlingRecord): Promise<void> {
    await this.t.env.transaction(() => { this.t.settling.put(rec.paymentId, rec) })
  }

  async markSettleUncertain (paymentId: string, at: string): Promise<void> {
    await this.t.env.transaction(() => {
      const note = this.t.settling.get(paymentId)
      if (note != null) this.t.settling.put(paymentId, { ...note, settleFailedAt: at })
    })
  }

  async clearSettling (paymentId: string): Promise<void> {
    await this.t.env.transaction(() => { this.t.settling.remove(paymentId) })
  }
}
