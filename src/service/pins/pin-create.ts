/**
 * POST /pins and POST /pins/{requestid} (replace) as a use case.
 *
 * Pricing a CID we may not hold: the size the root block declares (probed
 * briefly), or the client's `X-Pin-Size`, whichever is larger; with neither,
 * the minimum price. The pin may then hold at most the bytes the payment
 * covers (bytesCoveredBy), enforced on bytes actually fetched. The payment is
 * settled when the pin is accepted (202): it pays for the attempt, and a pin
 * that fails (unreachable for the whole retry window, or larger than paid
 * for) is not refunded.
 *
 * A token carrying the `pins:create-unpaid` permission (operator-issued)
 * creates pins without payment, capped at the service's pin limit.
 */
import { randomUUID } from 'node:crypto'
import { PIN_WITHOUT_PAYMENT } from '../../auth/permissions.js'
import type { TokenService, VerifiedToken } from '../../auth/tokens.js'
import { ConflictError, InputTooLargeError, InvalidInputError, NotFoundError, PaymentRequiredError, TooManyRequestsError, UnavailableError } from '../../kernel/errors.js'
import { StorageUnavailableError, type BlockBackend } from '../../ipfs/block-backend.js'
import { addMonths } from '../../ledger/clock.js'
import type { Leases } from '../../ledger/coordination.js'
import { PinGoneError } from '../../ledger/errors.js'
import type { PinLedger } from '../../ledger/pins.js'
import type { PaymentInfo, PaymentRecord, PinRecord } from '../../ledger/records.js'
import { newRequestid } from '../../ledger/requestid.js'
import type { Logger } from '../../kernel/log.js'
import type { PaidRoutes } from '../../payment/bazaar.js'
import { identifyPayment, type PaymentGate, type PaymentIdentity, type Quote, type VerifiedPayment } from '../../payment/gate.js'
import { bytesCoveredBy, priceFor, type PriceSettings } from '../../payment/pricing.js'
import { reconcileOpenNote, type OpenNoteDeps } from '../payments/noted-retry.js'
import type { PaymentOnce } from '../payments/paid-once.js'
import type { PinRequest } from './pin-request.js'
import { toPinStatus, type PinStatus } from './pin-status.js'
import { settleNoted } from '../payments/settle.js'
import type { ProbeResult, SizeProbe } from './size-probe.js'
import { unavailableForLegalReasons } from '../serving/denials.js'
import type { Refusal } from '../serving/serve-policy.js'
import type { CID } from 'multiformats/cid'

/** How a pin by CID is priced, in words: in the agent card and the API description (a 402 says only which size it used). */
export const PIN_PRICING_RULE = 'A pin by CID is priced on the size its root block declares (dag-pb: block + link Tsizes, or the UnixFS file size when larger; raw: the block), or on X-Pin-Size (bytes) when that is larger or the root cannot be read within a few seconds, or else at the minimum price. When every probe for root blocks is busy the answer is 503 with Retry-After, never a quote made without the root. The pin holds at most maxBytes (what the payment covers), counting each repeated link; a DAG that turns out larger, or that links to a codec this service cannot walk, fails at once and keeps nothing. Payment is settled when the pin is accepted (202) and is not refunded if the content cannot be fetched.'

export interface PinCreateDeps {
  ledger: Pick<PinLedger, 'create' | 'get' | 'payment' | 'paymentUsed' | 'renew' | 'clearSettling' | 'markSettleUncertain' | 'markSettling' | 'nextCreated'>
  gate?: Pick<PaymentGate, 'challenge' | 'decide' | 'settle' | 'settleRefusal'>
  tokens: Pick<TokenService, 'issue'>
  once: Pick<PaymentOnce, 'finished' | 'run'>
  prices: PriceSettings
  probe: Pick<SizeProbe, 'known' | 'probe' | 'retryAfterSeconds'>
  pinMaxBytes: number
  retryWindowMs: number
  publicUrl: string
  network: string
  asset: string
  delegates: () => string[]
  log: Logger
  /** why a CID may not be pinned (the operator's denials and denylists): refused before anything is quoted or paid */
  refusal?: (cid: CID) => Refusal | undefined
  /** the block store: while it cannot be reached, paid pins answer 503 before any payment is used */
  storage?: Pick<BlockBackend, 'writable'>
  /** reconciles the open settlement note of a retried payment at once (noted-retry.ts) */
  openNotes?: OpenNoteDeps
  /** the ledger's leases: a replacement holds one on the pin it replaces while it settles, against replacements through other front ends */
  leases?: Pick<Leases, 'take' | 'release'>
  /** the paid routes' bazaar declarations: each 402 carries its route's (payment/bazaar.ts) */
  paidRoutes?: PaidRoutes
}

export interface PinWrite {
  request: PinRequest
  months: number
  /** the size of the whole DAG as the client declares it (X-Pin-Size), when it does */
  claimedBytes?: number
  /** the x402 payment (PAYMENT-SIGNATURE), when one was sent */
  paymentHeader?: string
  /** the verified bearer token, when one was sent */
  auth?: VerifiedToken
  /** replace: the owner's pin being replaced */
  replaces?: PinRecord
  /** who sends it (the client's address): bounds what one client may make the node do before paying */
  client?: string
}

/** What a pin write answers: the pin's status, and what the payment and the owner's token became. */
export interface PinOutcome {
  pin: PinStatus
  /** the pin's URL (a new pin) */
  location?: string
  /** x402's settlement response (PAYMENT-RESPONSE) */
  settlement?: string
  /** the owner's new wallet token */
  token?: { token: string, expiresAt: Date }
}

export async function createPin (w: PinWrite, d: PinCreateDeps): Promise<PinOutcome> {
  // denied content is refused first: no probe, no quote, no payment (replacing a pin with it too)
  const refused = d.refusal?.(w.request.cid)
  if (refused != null) throw unavailableForLegalReasons(w.request.cidText.slice(0, 100), refused, d.publicUrl)
  if (w.replaces?.removed != null) return await replayOfReplacement(w, w.replaces.requestid, d)
  if (w.auth?.permissions.includes(PIN_WITHOUT_PAYMENT) === true) return await unpaid(w, w.auth, d)
  if (d.gate == null) throw new UnavailableError('payments are not configured on this server (no pay-to address or facilitator); writes are disabled', 3600)
  const purpose = purposeOf(w)
  // a payment that was already used is known from its header alone: its replay is answered without a quote (no probe, no dial)
  const used = w.paymentHeader != null ? identifyPayment(w.paymentHeader) : undefined
  if (used != null && await settledBefore(used, purpose, d)) return await replay(used, purpose, d)
  // a new pin needs the block store: while it cannot be reached, 503 before any payment is used
  if (d.storage?.writable() === false) throw new StorageUnavailableError('the block storage is unreachable right now; retry shortly (no payment was used)')
  // the unpaid 402 for a CID whose size and challenge are at hand awaits nothing here (quoteFor, PaymentGate.decide)
  const quoted = quoteFor(w, d)
  const quote = quoted instanceof Promise ? await quoted : quoted
  const decided = d.gate.decide(w.paymentHeader, quote.quote, (id) => d.ledger.paymentUsed(id))
  const decision = decided instanceof Promise ? await decided : decided
  if (decision.type === 'payment-required') throw decision.error
  const payment = decision.payment
  if (decision.type === 'settled-before') return await replay(payment, purpose, d)
  d.log.info('payment verified', { payment: payment.id, amount: payment.amount })
  for (;;) {
    const outcome = await d.once.run(payment.id, async () => {
      if (await d.ledger.paymentUsed(payment.id)) return undefined
      return await paid(w, payment, quote, purpose, d.gate as NonNullable<PinCreateDeps['gate']>, d)
    })
    if (outcome.first && outcome.value != null) return outcome.value
    // another request with this payment ran first and left a settlement note (its outcome was
    // uncertain): the chain tells now (a replay, or the payment is unused: this one does the work), or 503
    if (outcome.first || await d.ledger.paymentUsed(payment.id)) break
    if ((await reconcileOpenNote(payment, (p) => p === purpose, d.openNotes)).kind !== 'unused') break
  }
  return await replay(payment, purpose, d)
}

/**
 * Whether a payment named by a request's header is recorded (after any request doing its work
 * right now): then the request is a replay. An open settlement note of this very request (an
 * earlier settlement with an uncertain outcome) is reconciled first (noted-retry.ts): recorded
 * if the money moved, else the payment is unused; a chain that cannot tell is a 503.
 */
export async function settledBefore (who: PaymentIdentity, purpose: string, d: Pick<PinCreateDeps, 'ledger' | 'once' | 'openNotes'>): Promise<boolean> {
  await d.once.finished(who.id)
  if (await d.ledger.paymentUsed(who.id)) return true
  return (await reconcileOpenNote(who, (p) => p === purpose, d.openNotes)).kind === 'recorded'
}

interface PinQuote {
  quote: Quote
  /** the most DAG bytes the payment covers */
  maxBytes: number
  declared?: { dagSize: number, fileSize?: number, how: string }
}

/** The write's quote: synchronous when the probe's answer is at hand (SizeProbe.known). */
function quoteFor (w: PinWrite, d: PinCreateDeps): PinQuote | Promise<PinQuote> {
  const claimed = w.claimedBytes
  if (claimed != null && claimed > d.pinMaxBytes) throw new InputTooLargeError(`X-Pin-Size declares ${claimed} bytes; this service pins DAGs of at most ${d.pinMaxBytes} bytes`)
  const probed = d.probe.known(w.request.cid)
  return probed != null ? quoteOn(w, d, probed) : d.probe.probe(w.request.cid, w.request.origins, w.client).then(p => quoteOn(w, d, p))
}

function quoteOn (w: PinWrite, d: PinCreateDeps, probed: ProbeResult): PinQuote {
  const claimed = w.claimedBytes
  // no probe free: no quote at all, rather than one priced as if the root could not be had
  const retry = d.probe.retryAfterSeconds
  if (probed.source === 'busy') throw new UnavailableError('every probe for the size of a DAG is in use; retry shortly (no quote is given rather than one that may be wrong)', retry)
  if (probed.source === 'client-busy') throw new TooManyRequestsError('this address has as many DAG size probes running as it may; retry when one has answered', retry)
  if (probed.source === 'invalid') throw new InvalidInputError(`the root block of ${w.request.cidText.slice(0, 100)} is not valid ${w.request.cid.code === 0x70 ? 'dag-pb' : 'for its codec'} (${probed.invalid ?? 'cannot be decoded'}): such a DAG cannot be pinned`)
  const known = probed.size?.dagSize
  if (known != null && known > d.pinMaxBytes) {
    throw new InputTooLargeError(`the DAG's root declares ${known} bytes; this service pins DAGs of at most ${d.pinMaxBytes} bytes`)
  }
  // the same request on the same probe answer is quoted the same: made once (no part of a quote depends on the time)
  const cid = w.request.cid.toString()
  const key = `${cid} ${w.months} ${claimed ?? ''} ${w.replaces?.requestid ?? ''}`
  let made = quotesOf.get(d)
  const kept = made?.get(key)
  if (kept != null && kept.probed === probed) return kept.quote
  const quote = newQuote(w, d, probed, cid)
  if (made == null) quotesOf.set(d, made = new Map())
  if (made.size >= MAX_QUOTES) made.delete(made.keys().next().value as string)
  made.set(key, { probed, quote })
  return quote
}

/**
 * Quotes made lately, per service (its prices, its URL), by request, with the probe answer each
 * was made on: the latest MAX_QUOTES, enough for the 402 and the paid retry of as many agents at
 * once. A quote keeps its 402 answers (PaymentGate.challenge): at 1,000 they held megabytes of the
 * heap after a soak's load.
 */
const quotesOf = new WeakMap<PinCreateDeps, Map<string, { probed: ProbeResult, quote: PinQuote }>>()
export const MAX_QUOTES = 128

function newQuote (w: PinWrite, d: PinCreateDeps, probed: ProbeResult, cid: string): PinQuote {
  const claimed = w.claimedBytes
  const known = probed.size?.dagSize
  const bytes = Math.max(known ?? 0, claimed ?? 0)
  // a price over the maximum is a PriceTooHighError: a bad request (src/http/error-catalog.ts)
  const amount = priceFor(BigInt(bytes), w.months, d.prices)
  const covered = bytesCoveredBy(amount, w.months, d.prices)
  const maxBytes = Number(covered > BigInt(d.pinMaxBytes) ? BigInt(d.pinMaxBytes) : covered)
  const sizeSource = known != null
    ? `the root block (${probed.size?.how}, found ${probed.source === 'local' ? 'on this node' : 'on the network'})${claimed != null && claimed > known ? ' and X-Pin-Size' : ''}`
    : claimed != null
      ? 'the X-Pin-Size header (the root block could not be read in time)'
      : 'no size known (the root block could not be read in time and no X-Pin-Size was sent): minimum price'
  const path = w.replaces != null ? `/pins/${w.replaces.requestid}` : '/pins'
  const route = w.replaces != null ? d.paidRoutes?.replace : d.paidRoutes?.pin
  return {
    maxBytes,
    declared: probed.size,
    quote: {
      ...(route != null ? { discovery: { route, path } } : {}),
      amount,
      months: w.months,
      bytes: BigInt(bytes),
      resourceUrl: `${d.publicUrl}${path}`,
      description: `Pin ${cid} (up to ${maxBytes} bytes) for ${w.months} month(s)`,
      notes: {
        sizeSource,
        maxBytes: String(maxBytes)
      }
    }
  }
}

/** replacements of one pin settle one at a time in this process (keyed by the replaced requestid) */
const replacing = new Map<string, Promise<unknown>>()
/** how long a replacement's lease outlives a front end that died while it settled */
const REPLACE_LEASE_MS = 5 * 60_000

async function paid (w: PinWrite, payment: VerifiedPayment, q: PinQuote, purpose: string, gate: NonNullable<PinCreateDeps['gate']>, d: PinCreateDeps): Promise<PinOutcome> {
  const replaces = w.replaces
  if (replaces == null) return await paidNow(w, payment, q, purpose, gate, d)
  // two paid replacements of one pin at once: the second finds it replaced before it settles, not after (then its payer paid for nothing);
  // in this process they take turns, and through other front ends the lease on the replaced pin keeps all but one out
  const id = replaces.requestid
  const before = replacing.get(id) ?? Promise.resolve()
  const run = before.catch(() => {}).then(async () => {
    const lease = `replace:${id}`
    const holder = randomUUID()
    if (d.leases != null && !await d.leases.take(lease, holder, REPLACE_LEASE_MS)) {
      throw new ConflictError(`pin ${id} is being replaced through another front end of this service; nothing was charged: read it again (GET /pins/${id}) and replace the current pin`)
    }
    try {
      const current = await d.ledger.get(id)
      if (current == null || current.removed != null) throw new ConflictError(`pin ${id} was replaced or removed while this request was being verified; nothing was charged: replace the current pin instead`)
      return await paidNow(w, payment, q, purpose, gate, d)
    } finally {
      await d.leases?.release(lease, holder).catch(() => {})
    }
  })
  replacing.set(replaces.requestid, run)
  try {
    return await run
  } finally {
    if (replacing.get(replaces.requestid) === run) replacing.delete(replaces.requestid)
  }
}

async function paidNow (w: PinWrite, payment: VerifiedPayment, q: PinQuote, purpose: string, gate: NonNullable<PinCreateDeps['gate']>, d: PinCreateDeps): Promise<PinOutcome> {
  const owner = w.replaces?.owner ?? payment.payer
  // the pin as it will be recorded, kept in the settlement note: should the process die once the
  // money has moved, reconciliation records it (settlement-fulfil.ts) instead of leaving it to an operator
  const draft = newPin(w, owner, q.maxBytes, { id: payment.id, payer: payment.payer, amount: payment.amount.toString(), network: payment.network, asset: payment.asset, method: 'x402' }, q.declared, d, await d.ledger.nextCreated())
  // a replacement made with the owner's token needs no new one; signed before the money moves (a key
  // store that cannot be read answers 503 with the payment unused, never after it was charged)
  const token = w.replaces == null || w.auth == null ? await d.tokens.issue(owner) : undefined
  const settled = await settleNoted(gate, d.ledger, payment, purpose, { pin: draft, proof: payment.proof })
  if (!settled.ok) {
    throw await gate.settleRefusal(q.quote, settled, 'nothing was pinned')
  }
  const info: PaymentInfo = { ...draft.payment, network: settled.network, tx: settled.tx, settledAt: new Date().toISOString() }
  const pin: PinRecord = { ...draft, payment: info }
  const record: PaymentRecord = {
    id: payment.id, requestid: pin.requestid, purpose, payer: payment.payer, amount: info.amount,
    network: settled.network, tx: settled.tx, at: info.settledAt as string, proof: payment.proof
  }
  try {
    await d.ledger.create(pin, record)
  } catch (err) {
    if (err instanceof PinGoneError) {
      d.log.error('pin replacement settled but the replaced pin was removed meanwhile', { payment: payment.id, tx: settled.tx, replaced: err.requestid })
      throw new ConflictError(`pin ${err.requestid} was removed while this replacement was being paid; payment ${payment.id} (transaction ${settled.tx}) needs an operator`)
    }
    d.log.error('pin settled but could not be recorded', { payment: payment.id, tx: settled.tx, cid: pin.cid, error: err })
    throw err
  }
  d.log.info('pin accepted', { requestid: pin.requestid, cid: pin.cid, payer: payment.payer, tx: settled.tx, maxBytes: q.maxBytes })
  return { pin: toPinStatus(pin, d.delegates()), settlement: settled.header, location: `${d.publicUrl}/pins/${pin.requestid}`, ...(token != null ? { token } : {}) }
}

async function unpaid (w: PinWrite, auth: VerifiedToken, d: PinCreateDeps): Promise<PinOutcome> {
  const info: PaymentInfo = { id: `operator-token:${auth.jti}`, payer: auth.owner, amount: '0', network: d.network, asset: d.asset, method: 'operator-token' }
  const pin = newPin(w, w.replaces?.owner ?? auth.owner, d.pinMaxBytes, info, undefined, d, await d.ledger.nextCreated())
  try {
    await d.ledger.create(pin)
  } catch (err) {
    if (err instanceof PinGoneError) throw new NotFoundError(`no pin with requestid ${err.requestid} for this owner`)
    throw err
  }
  d.log.info('pin accepted', { requestid: pin.requestid, cid: pin.cid, owner: pin.owner, token: auth.jti, method: 'operator-token' })
  return { pin: toPinStatus(pin, d.delegates()), location: `${d.publicUrl}/pins/${pin.requestid}` }
}

function newPin (w: PinWrite, owner: string, maxBytes: number, payment: PaymentInfo, declared: PinQuote['declared'], d: PinCreateDeps, created: { us: number, iso: string }): PinRecord {
  const createdAt = new Date(Math.floor(created.us / 1000))
  const r = w.request
  return {
    requestid: newRequestid(createdAt.getTime()),
    owner,
    cid: r.cidText,
    ...(r.name != null ? { name: r.name } : {}),
    origins: r.origins,
    meta: r.meta,
    status: 'queued',
    statusDetails: `queued for fetching${declared != null ? `; the root declares ${declared.dagSize} bytes` : ''}; at most ${maxBytes} bytes will be kept`,
    created: created.iso,
    createdUs: created.us,
    months: w.months,
    pinnedUntil: addMonths(createdAt, w.months).toISOString(),
    ...(declared?.fileSize != null ? { fileSize: declared.fileSize } : {}),
    maxBytes,
    source: 'pin',
    payment,
    fetch: { attempts: 0, giveUpAt: new Date(createdAt.getTime() + d.retryWindowMs).toISOString() },
    ...(w.replaces != null ? { replaces: w.replaces.requestid } : {})
  }
}

/** What a payment is bound to: the same payment cannot buy a different pin. */
function purposeOf (w: PinWrite): string {
  const cid = w.request.cid.toV1().toString()
  return w.replaces != null ? `replace:${w.replaces.requestid}:${cid}:${w.months}` : `pin:${cid}:${w.months}`
}

/**
 * A replaced pin is gone (404), except to the same paid request sent again after
 * it replaced the pin (its answer was lost): that retry gets the replacement.
 */
async function replayOfReplacement (w: PinWrite, requestid: string, d: PinCreateDeps): Promise<PinOutcome> {
  const used = w.paymentHeader != null ? identifyPayment(w.paymentHeader) : undefined
  if (used != null && await settledBefore(used, purposeOf(w), d)) return replay(used, purposeOf(w), d)
  throw new NotFoundError(`no pin with requestid ${requestid.slice(0, 100)} for this owner`)
}

/**
 * The same payment again: an honest retry of this very request gets the pin
 * it created (no new token — see service/uploads/upload.ts); anything else must pay again.
 */
async function replay (payment: PaymentIdentity, purpose: string, d: PinCreateDeps): Promise<PinOutcome> {
  const record = await d.ledger.payment(payment.id)
  const pin = record != null ? await d.ledger.get(record.requestid) : undefined
  if (record == null || pin == null || record.proof !== payment.proof || record.purpose !== purpose) {
    throw new PaymentRequiredError('this payment was already used for another request; sign a new payment')
  }
  return { pin: toPinStatus(pin, d.delegates()), location: `${d.publicUrl}/pins/${pin.requestid}` }
}
