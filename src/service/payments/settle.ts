/**
 * Settlement with a durable note: the note is written before the payment is
 * settled and removed in the same transaction as the record the payment
 * buys (see PinLedger.markSettling). A refused settlement removes it at once;
 * one whose outcome is uncertain (it threw, or the chain says the payment was
 * used after all) keeps it, and an upload keeps its staged blocks with it.
 * The note keeps the authorization's validBefore, so that a note left by a
 * crash can be reconciled against the chain (settlement-reconcile.ts).
 */
import type { PinLedger } from '../../ledger/pins.js'
import type { SettlementFulfilment } from '../../ledger/settlements.js'
import { validBeforeOf } from '../../payment/authorization-state.js'
import type { PaymentGate, SettleOutcome, VerifiedPayment } from '../../payment/gate.js'

/** The ledger with every note it writes stamped with the front end `by` (SettlingRecord.by). */
export function notesStampedBy<T extends Pick<PinLedger, 'markSettling'>> (ledger: T, by: string): T {
  const stamped = Object.create(ledger) as T
  stamped.markSettling = async (rec) => { await ledger.markSettling({ ...rec, by }) }
  return stamped
}

/** `fulfil`: what reconciliation may record by itself if the process dies once the money moved (see SettlingRecord) */
export async function settleNoted (gate: Pick<PaymentGate, 'settle'>, ledger: Pick<PinLedger, 'clearSettling' | 'markSettleUncertain' | 'markSettling'>, payment: VerifiedPayment, purpose: string, fulfil?: SettlementFulfilment): Promise<SettleOutcome> {
  const validBefore = validBeforeOf(payment)
  await ledger.markSettling({
    paymentId: payment.id,
    payer: payment.payer,
    amount: payment.amount.toString(),
    purpose,
    network: payment.network,
    at: new Date().toISOString(),
    ...(validBefore != null ? { validBefore } : {}),
    ...(fulfil != null ? { fulfil } : {})
  })
  const settled = await gate.settle(payment)
  if (!settled.ok && settled.uncertain === true) {
    // the payment may have gone through: the note (and what it keeps) stays, as after a crash, and
    // says that its request is over, so reconciliation reads it at its next pass (settlement-reconcile.ts)
    await ledger.markSettleUncertain(payment.id, new Date().toISOString())
  } else if (!settled.ok) {
    await ledger.clearSettling(payment.id)
  }
  return settled
}
