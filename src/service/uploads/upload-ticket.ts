/**
 * POST /upload/tickets as a use case: a prepaid, single-use upload ticket.
 * Quoted as POST /upload quotes a file of X-Upload-Size bytes for the months
 * asked (the same price), paid with x402 and settled at once, before any
 * file is sent. The ticket then lets its payer's wallet upload one file of
 * up to that size (ticket-upload.ts) with no settlement in its way: the
 * upload's blocks go to the block store while its body arrives.
 *
 * The ticket and its payment record are written in one transaction, which
 * also removes the settlement note; the note carries the ticket, so a crash
 * between settlement and record is reconciled like any other note (the
 * ticket is recorded then, never lost). The same payment sent again answers
 * with the same ticket and no token: a settled payment is public on chain,
 * and the ticket's id alone does not authorize anything (its use needs the
 * payer's wallet token).
 */
import { randomUUID } from 'node:crypto'
import { z } from 'zod/v4'
import { ADDRESS, count, DIGITS, LOWER_ADDRESS, text, USDC } from '../../kernel/api-shapes.js'
import type { TokenService } from '../../auth/tokens.js'
import { InputTooLargeError, LengthRequiredError, PaymentRequiredError, UnavailableError } from '../../kernel/errors.js'
import { StorageUnavailableError, type BlockBackend } from '../../ipfs/block-backend.js'
import type { Ledger } from '../../ledger/ledger.js'
import type { PinLedger } from '../../ledger/pins.js'
import { ticketPurpose, type UploadTicket, type UploadTickets } from '../../ledger/tickets.js'
import type { PaymentRecord } from '../../ledger/records.js'
import type { Logger } from '../../kernel/log.js'
import type { PaidRoutes } from '../../payment/bazaar.js'
import { identifyPayment, type PaymentGate, type PaymentIdentity, type Quote, type VerifiedPayment } from '../../payment/gate.js'
import { formatUsdc, priceFor, type PriceSettings } from '../../payment/pricing.js'
import { reconcileOpenNote, type OpenNoteDeps } from '../payments/noted-retry.js'
import type { PaymentOnce } from '../payments/paid-once.js'
import { settleNoted } from '../payments/settle.js'
import { recordTicket } from '../payments/settlement-fulfil.js'

/** how long a ticket can be used after its purchase, by default (--upload-ticket-validity) */
export const TICKET_VALIDITY_S = 30 * 24 * 3600

export interface TicketBuyDeps {
  ledger: Pick<PinLedger, 'payment' | 'paymentUsed' | 'clearSettling' | 'markSettleUncertain' | 'markSettling'>
  tickets: Pick<UploadTickets, 'get'>
  /** the ledger a ticket is recorded in with its payment, in one transaction */
  records: Pick<Ledger, 'transaction'>
  gate: Pick<PaymentGate, 'decide' | 'settle' | 'settleRefusal'>
  tokens: Pick<TokenService, 'issue'>
  once: Pick<PaymentOnce, 'finished' | 'run'>
  prices: PriceSettings
  uploadMaxBytes: number
  /** seconds a ticket can be used after its purchase */
  validitySeconds: number
  publicUrl: string
  network: string
  asset: string
  log: Logger
  /** while the block store cannot be reached, no ticket is sold (503 before any payment is used) */
  storage?: Pick<BlockBackend, 'writable'>
  /** reconciles the open settlement note of a retried payment at once (noted-retry.ts) */
  openNotes?: OpenNoteDeps
  /** the paid routes' bazaar declarations: each 402 carries its route's (payment/bazaar.ts) */
  paidRoutes?: PaidRoutes
}

export interface TicketBuy {
  months: number
  /** X-Upload-Size: the most file bytes the ticket's upload may carry (required) */
  fileBytes?: number
  /** the x402 payment (PAYMENT-SIGNATURE), when one was sent */
  payment?: string
}

/** A ticket as its buyer sees it (OpenAPI: UploadTicket, derived from this) */
export const TicketResult = z.object({
  ticket: text('the ticket\'s id: send it as X-Upload-Ticket on POST /upload, with the payer\'s wallet token (the id alone authorizes nothing)', { format: 'uuid' }),
  bytes: count('file bytes the upload may carry', 1),
  months: count('months the upload\'s pin is kept', 1),
  amount: text('atomic units paid', { pattern: DIGITS }),
  usdc: text('in USDC', { pattern: USDC }),
  asset: text('the token', { pattern: ADDRESS }),
  network: text('CAIP-2 network'),
  transaction: text('the settlement transaction').optional(),
  payer: text('the paying wallet, lowercase: only its wallet token can use the ticket', { pattern: LOWER_ADDRESS }),
  expiresAt: text('the ticket cannot be used from then on', { format: 'date-time' }),
  used: z.boolean().meta({ description: 'whether an upload used it already' }),
  failedBytes: count('block bytes its failed uploads wrote (and the server removed); at --upload-ticket-retries times `bytes` the ticket answers 410', 0),
  upload_url: text('where to upload with it', { format: 'uri' })
}).meta({ description: 'A prepaid, single-use upload ticket' })

export interface TicketOutcome {
  /** the payment was recorded for this ticket already: the same ticket, no token */
  replayed: boolean
  result: z.output<typeof TicketResult>
  settlement?: string
  token?: { token: string, expiresAt: Date }
  location: string
}

export async function buyTicket (input: TicketBuy, d: TicketBuyDeps): Promise<TicketOutcome> {
  const declared = input.fileBytes
  if (declared == null) throw new LengthRequiredError('send X-Upload-Size: the size in bytes of the file the ticket is for (it is priced on it, and the upload may carry at most that many bytes)')
  if (declared > d.uploadMaxBytes) throw new InputTooLargeError(`uploads are limited to ${d.uploadMaxBytes} bytes of file content; this request declares ${declared} bytes`)
  // a price over the maximum is a PriceTooHighError: a bad request (src/http/error-catalog.ts)
  const amount = priceFor(BigInt(declared), input.months, d.prices)
  const quote: Quote = {
    amount,
    months: input.months,
    bytes: BigInt(declared),
    resourceUrl: `${d.publicUrl}/upload/tickets`,
    ...(d.paidRoutes != null ? { discovery: { route: d.paidRoutes.ticket, path: '/upload/tickets' } } : {}),
    description: `A ticket to upload and pin a file of up to ${declared} bytes for ${input.months} month(s)`,
    notes: { sizeSource: 'X-Upload-Size header' }
  }
  const used = input.payment != null && input.payment !== '' ? identifyPayment(input.payment) : undefined
  if (used != null && await recordedBefore(used, d)) return await replay(used, d)
  if (d.storage?.writable() === false) throw new StorageUnavailableError('the block storage is unreachable right now; retry shortly (no payment was used)')
  const decision = await d.gate.decide(input.payment, quote, (id) => d.ledger.paymentUsed(id))
  if (decision.type === 'payment-required') throw decision.error
  const payment = decision.payment
  if (decision.type === 'settled-before') return await replay(payment, d)
  d.log.info('payment verified', { payment: payment.id, amount: payment.amount })
  for (;;) {
    const outcome = await d.once.run(payment.id, async () => {
      if (await d.ledger.paymentUsed(payment.id)) return undefined
      return await paid(input.months, declared, payment, quote, d)
    })
    if (outcome.first && outcome.value != null) return outcome.value
    // another request with this payment ran first and left an open note: the chain tells now
    if (outcome.first || await d.ledger.paymentUsed(payment.id)) break
    if ((await reconcileOpenNote(payment, isTicketPurpose, d.openNotes)).kind !== 'unused') break
  }
  return await replay(payment, d)
}

async function paid (months: number, bytes: number, payment: VerifiedPayment, quote: Quote, d: TicketBuyDeps): Promise<TicketOutcome> {
  const now = new Date()
  const draft: UploadTicket = {
    id: randomUUID(),
    payer: payment.payer,
    bytes,
    months,
    amount: payment.amount.toString(),
    paymentId: payment.id,
    // the network and token actually paid on (one of several accepted)
    network: payment.network,
    asset: payment.asset,
    createdAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + d.validitySeconds * 1000).toISOString()
  }
  const purpose = ticketPurpose(draft.id)
  // the ticket as it will be recorded, kept in the settlement note: should the process die once
  // the money has moved, reconciliation records it (settlement-fulfil.ts)
  // signed before the money moves: a key store that cannot be read answers 503 with the payment unused
  const token = await d.tokens.issue(payment.payer)
  const settled = await settleNoted(d.gate, d.ledger, payment, purpose, { ticket: draft, proof: payment.proof })
  if (!settled.ok) throw await d.gate.settleRefusal(quote, settled, 'no ticket was issued')
  const ticket: UploadTicket = { ...draft, network: settled.network, tx: settled.tx }
  const record: PaymentRecord = {
    id: payment.id, requestid: ticket.id, purpose, payer: payment.payer, amount: ticket.amount,
    network: settled.network, tx: settled.tx, at: new Date().toISOString(), proof: payment.proof
  }
  try {
    await recordTicket(d.records, ticket, record)
  } catch (err) {
    d.log.error('upload ticket settled but could not be recorded', { payment: payment.id, tx: settled.tx, ticket: ticket.id, error: err })
    throw err
  }
  d.log.info('upload ticket sold', { ticket: ticket.id, payer: ticket.payer, bytes, months, tx: settled.tx, expiresAt: ticket.expiresAt })
  return { replayed: false, result: ticketBody(ticket, d.publicUrl), settlement: settled.header, token, location: `${d.publicUrl}/upload/tickets/${ticket.id}` }
}

function isTicketPurpose (purpose: string): boolean {
  return purpose.startsWith('ticket:')
}

/** Whether the payment a header names is recorded (after any request doing its work now, and its open note reconciled). */
async function recordedBefore (who: PaymentIdentity, d: TicketBuyDeps): Promise<boolean> {
  await d.once.finished(who.id)
  if (await d.ledger.paymentUsed(who.id)) return true
  return (await reconcileOpenNote(who, isTicketPurpose, d.openNotes)).kind === 'recorded'
}

/** The same payment again: its ticket, if it bought one with this very authorization; anything else must pay again. */
async function replay (who: PaymentIdentity, d: TicketBuyDeps): Promise<TicketOutcome> {
  const record = await d.ledger.payment(who.id)
  const ticket = record != null && isTicketPurpose(record.purpose) ? await d.tickets.get(record.requestid) : undefined
  if (record == null || ticket == null || record.proof !== who.proof) throw new PaymentRequiredError('this payment was already used for another request; sign a new payment')
  return { replayed: true, result: ticketBody(ticket, d.publicUrl), location: `${d.publicUrl}/upload/tickets/${ticket.id}` }
}

export function ticketBody (t: UploadTicket, publicUrl: string): z.output<typeof TicketResult> {
  return {
    ticket: t.id,
    bytes: t.bytes,
    months: t.months,
    amount: t.amount,
    usdc: formatUsdc(BigInt(t.amount)),
    asset: t.asset,
    network: t.network,
    ...(t.tx != null ? { transaction: t.tx } : {}),
    payer: t.payer,
    expiresAt: t.expiresAt,
    used: t.claimed != null,
    failedBytes: t.failedBytes ?? 0,
    upload_url: `${publicUrl}/upload`
  }
}

/** (for the route: payments must be configured) */
export function requireGate<T> (gate: T | undefined): T {
  if (gate == null) throw new UnavailableError('payments are not configured on this server (no pay-to address or facilitator); writes are disabled', 3600)
  return gate
}
