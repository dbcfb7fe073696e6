/**
 * Settlement with a durable note: the note is written before the payment is
 * settled and removed in the same transaction as the record the payment
 * buys (see PinLedger.markSettling). A refused settlement removes it at once.
 */
import type { PinLedger } from '../ledger/pins.js'
import type { PaymentGate, SettleOutcome, VerifiedPayment } from '../payment/gate.js'

export async function settleNoted (gate: PaymentGate, ledger: PinLedger, payment: VerifiedPayment, purpose: string): Promise<SettleOutcome> {
  await ledger.markSettling({ paymentId: payment.id, payer: payment.payer, amount: payment.amount.toString(), purpose, at: new Date().toISOString() })
  const settled = await gate.settle(payment)
  if (!settled.ok) await ledger.clearSettling(payment.id)
  return settled
}
