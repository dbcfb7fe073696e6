/**
 * POST /pins/{requestid}/renew: the owner extends a pin by paying again.
 * Priced like a new pin, on the same bytes its creation was priced on
 * (`pricedBytes`), for the added months; the new pinned_until is
 * max(pinned_until, now) + months and may be at most `maxMonths` months
 * ahead of now. An expired pin can be renewed during the grace period.
 * Operator tokens with `pins:create-unpaid` renew without payment.
 */
import { PIN_WITHOUT_PAYMENT } from '../../auth/permissions.js'
import type { VerifiedToken } from '../../auth/tokens.js'
import { ConflictError, InvalidInputError, NotFoundError, PaymentRequiredError, UnavailableError } from '../../kernel/errors.js'
import { addMonths } from '../../ledger/clock.js'
import { PinGoneError } from '../../ledger/errors.js'
import type { PaymentRecord, PinRecord } from '../../ledger/records.js'
import { identifyPayment, type PaymentIdentity, type Quote } from '../../payment/gate.js'
import { priceFor } from '../../payment/pricing.js'
import { settledBefore, type PinCreateDeps, type PinOutcome } from './pin-create.js'
import { reconcileOpenNote } from '../payments/noted-retry.js'
import { toPinStatus } from './pin-status.js'
import { settleNoted } from '../payments/settle.js'
import { unavailableForLegalReasons } from '../serving/denials.js'
import { CID } from 'multiformats/cid'

export interface RenewRequest {
  requestid: string
  months: number
  auth: VerifiedToken
  paymentHeader?: string
}

export async function renewPin (r: RenewRequest, d: PinCreateDeps): Promise<PinOutcome> {
  const pin = await d.ledger.get(r.requestid)
  if (pin == null || pin.owner !== r.auth.owner || pin.removed != null) throw new NotFoundError(`no pin with requestid ${r.requestid.slice(0, 100)} for this owner`)
  // a pin this service does not serve is not sold more time (the owner may still DELETE it, or replace it with other content)
  const refused = d.refusal?.(CID.parse(pin.cid))
  if (refused != null) throw unavailableForLegalReasons(`renewing pin ${pin.requestid} of ${pin.cid}`, refused, d.publicUrl)
  if (pin.status === 'failed') throw new ConflictError('a failed pin cannot be renewed; create a new pin (or replace this one)')
  const until = nextUntil(pin, r.months, d.prices.maxMonths)
  if (r.auth.permissions.includes(PIN_WITHOUT_PAYMENT)) {
    const renewed = await write(r, undefined, d)
    d.log.info('pin renewed', { requestid: r.requestid, months: r.months, method: 'operator-token' })
    return { pin: toPinStatus(renewed, d.delegates()) }
  }
  if (d.gate == null) throw new UnavailableError('payments are not configured on this server (no pay-to address or facilitator); writes are disabled', 3600)
  const bytes = pricedBytes(pin)
  // a price over the maximum is a PriceTooHighError: a bad request (src/http/error-catalog.ts)
  const amount = priceFor(bytes, r.months, d.prices)
  const quote: Quote = {
    amount,
    months: r.months,
    bytes,
    resourceUrl: `${d.publicUrl}/pins/${pin.requestid}/renew`,
    ...(d.paidRoutes != null ? { discovery: { route: d.paidRoutes.renew, path: `/pins/${pin.requestid}/renew` } } : {}),
    description: `Renew pin ${pin.requestid} (${bytes} bytes) for ${r.months} more month(s), until ${until.toISOString()}`,
    notes: { pinned_until_now: pin.pinnedUntil, pinned_until_after: until.toISOString() }
  }
  const purpose = `renew:${pin.requestid}:${r.months}:${pin.pinnedUntil}`
  // a payment already recorded (or whose uncertain settlement is found done now) is a replay, answered before it is verified again
  const used = r.paymentHeader != null ? identifyPayment(r.paymentHeader) : undefined
  if (used != null && await settledBefore(used, purpose, d)) return await replay(used, d)
  const decision = await d.gate.decide(r.paymentHeader, quote, (id) => d.ledger.paymentUsed(id))
  if (decision.type === 'payment-required') throw decision.error
  const payment = decision.payment
  if (decision.type === 'settled-before') return await replay(payment, d)
  for (;;) {
    const outcome = await d.once.run(payment.id, async () => {
      if (await d.ledger.paymentUsed(payment.id)) return undefined
      // should the process die once the money has moved, reconciliation renews the pin (settlement-fulfil.ts)
      const settled = d.gate != null ? await settleNoted(d.gate, d.ledger, payment, purpose, { proof: payment.proof, renew: { requestid: pin.requestid, months: r.months } }) : undefined
      if (settled == null || !settled.ok) {
        throw settled != null && d.gate != null
          ? await d.gate.settleRefusal(quote, settled, 'the pin was not renewed')
          : await d.gate?.challenge(quote, 'the payment could not be settled; the pin was not renewed')
      }
      const record: PaymentRecord = {
        id: payment.id, requestid: pin.requestid, purpose, payer: payment.payer, amount: payment.amount.toString(),
        network: settled.network, tx: settled.tx, at: new Date().toISOString(), proof: payment.proof
      }
      let renewed: PinRecord
      try {
        renewed = await write(r, record, d)
      } catch (err) {
        d.log.error('renewal settled but could not be recorded', { payment: payment.id, tx: settled.tx, requestid: pin.requestid, error: err })
        throw err
      }
      d.log.info('pin renewed', { requestid: pin.requestid, months: r.months, payer: payment.payer, tx: settled.tx })
      return { pin: toPinStatus(renewed, d.delegates()), settlement: settled.header }
    })
    if (outcome.first && outcome.value != null) return outcome.value
    // another request with this payment ran first and left a settlement note (its outcome was
    // uncertain): the chain tells now (a replay, or the payment is unused: this one does the work), or 503
    if (outcome.first || await d.ledger.paymentUsed(payment.id)) break
    if ((await reconcileOpenNote(payment, (p) => p === purpose, d.openNotes)).kind !== 'unused') break
  }
  return await replay(payment, d)
}

async function write (r: RenewRequest, record: PaymentRecord | undefined, d: PinCreateDeps): Promise<PinRecord> {
  try {
    return await d.ledger.renew(r.requestid, r.months, record, (current) => nextUntil(current, r.months, d.prices.maxMonths))
  } catch (err) {
    if (err instanceof PinGoneError) throw new NotFoundError(`no pin with requestid ${r.requestid.slice(0, 100)} for this owner`)
    throw err
  }
}

/**
 * The bytes a pin's renewal is priced on: those its creation was priced on. An upload was priced
 * on its file's bytes, a pin by CID on the bytes its payment covers (what its root declares, or
 * X-Pin-Size). Never on `dag_size`, the unique block bytes: deduplication makes that smaller than
 * the file for repetitive content, which would renew for the minimum. (Records without either
 * field, written before fileSize was kept, fall back to dag_size.)
 */
export function pricedBytes (pin: Pick<PinRecord, 'source' | 'fileSize' | 'maxBytes' | 'dagSize'>): bigint {
  const basis = pin.source === 'upload' ? pin.fileSize : pin.maxBytes
  return BigInt(basis ?? pin.dagSize ?? pin.maxBytes ?? 0)
}

/** max(pinned_until, now) + months, refused beyond maxMonths ahead of now. */
function nextUntil (pin: PinRecord, months: number, maxMonths: number): Date {
  const now = new Date()
  const from = new Date(Math.max(Date.parse(pin.pinnedUntil), now.getTime()))
  const until = addMonths(from, months)
  const limit = addMonths(now, maxMonths)
  if (until.getTime() > limit.getTime()) {
    throw new InvalidInputError(`a pin can be paid for at most ${maxMonths} months ahead (until ${limit.toISOString()}); it is pinned until ${pin.pinnedUntil}, so ${months} more month(s) is too many`)
  }
  return until
}

async function replay (payment: PaymentIdentity, d: PinCreateDeps): Promise<PinOutcome> {
  const record = await d.ledger.payment(payment.id)
  const pin = record != null ? await d.ledger.get(record.requestid) : undefined
  if (record == null || pin == null || record.proof !== payment.proof || !record.purpose.startsWith(`renew:${pin.requestid}:`)) {
    throw new PaymentRequiredError('this payment was already used for another request; sign a new payment')
  }
  return { pin: toPinStatus(pin, d.delegates()) }
}
