/**
 * Carries out what a settled payment bought when its request died before
 * recording it: the settlement note of a pin by CID (or a replacement)
 * holds the pin as it would have been recorded, so reconciliation records
 * it, with its payment, in one transaction that also removes the note, and
 * the fetcher takes it from there. The payer finds the pin under their
 * wallet as if the request had answered 202.
 *
 * The settlement transaction is the one whose AuthorizationUsed event the
 * chain shows (looked up by the caller); without it the records carry none.
 * The pin's retry window starts over from the time it is recorded.
 */
import { PinGoneError, type PinLedger } from '../ledger/pins.js'
import type { PaymentRecord, PinRecord } from '../ledger/records.js'
import type { SettlingRecord } from '../ledger/settlements.js'

export class CannotFulfilError extends Error {
  override name = 'CannotFulfilError'
}

/** Records the note's pin and payment; throws CannotFulfilError when that is not possible (an operator decides). */
export async function fulfilFromNote (ledger: PinLedger, note: SettlingRecord, tx?: string, now: Date = new Date()): Promise<PinRecord> {
  const f = note.fulfil
  if (f == null) throw new CannotFulfilError('the note does not say what the payment bought (an upload, or a note of an older version)')
  if (ledger.payment(note.paymentId) != null) throw new CannotFulfilError('the payment is recorded already')
  const settledAt = now.toISOString()
  const draft = f.pin
  const retryMs = draft.fetch != null ? Date.parse(draft.fetch.giveUpAt) - Date.parse(draft.created) : undefined
  const pin: PinRecord = {
    ...draft,
    payment: { ...draft.payment, settledAt, ...(tx != null ? { tx } : {}) },
    statusDetails: `${draft.statusDetails ?? 'queued for fetching'}; recorded after a restart (the payment was found settled on chain)`,
    ...(draft.fetch != null && retryMs != null && Number.isFinite(retryMs) ? { fetch: { ...draft.fetch, giveUpAt: new Date(now.getTime() + retryMs).toISOString() } } : {})
  }
  const record: PaymentRecord = {
    id: note.paymentId,
    requestid: pin.requestid,
    purpose: note.purpose,
    payer: note.payer,
    amount: note.amount,
    network: pin.payment.network,
    ...(tx != null ? { tx } : {}),
    at: settledAt,
    proof: f.proof
  }
  try {
    await ledger.create(pin, record)
  } catch (err) {
    if (err instanceof PinGoneError) throw new CannotFulfilError(`the pin it replaces (${err.requestid}) was removed meanwhile`)
    throw err
  }
  return pin
}
