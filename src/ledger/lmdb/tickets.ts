/**
 * Prepaid upload tickets: a payment settled at once (POST /upload/tickets)
 * buys the right to upload one file of up to `bytes` bytes, pinned for
 * `months`, by the paying wallet, before `expiresAt`.
 *   upload-tickets  ticket id → UploadTicket
 * The ticket and its payment record (purpose `ticket:<id>`) are written in
 * one transaction that also removes the payment's settlement note
 * (PinLedger.recordPayment); the claim of a ticket and the pin its upload
 * creates are written in one transaction too (PinLedger.create's `within`),
 * so a ticket makes at most one pin, however many uploads try it at once.
 */
import { PindError } from '../../kernel/errors.js'
import type { Database } from 'lmdb'
import type { LedgerEnv } from './open.js'
import type { PinLedger } from './pins.js'
import type { PaymentRecord, PinRecord } from '../records.js'
import type { LedgerSnapshot } from './snapshot.js'

export interface UploadTicket {
  /** a random UUID: it names the ticket, it does not authorize (the payer's wallet token does) */
  id: string
  /** the paying wallet, lowercase: the only one that may use it */
  payer: string
  /** file bytes the upload may carry (what was paid for) */
  bytes: number
  months: number
  /** atomic units paid */
  amount: string
  /** the payment (payer:nonce) that bought it */
  paymentId: string
  network: string
  asset: string
  /** the settlement transaction */
  tx?: string
  /** when it was bought (RFC 3339) */
  createdAt: string
  /** it cannot be used from then on (RFC 3339) */
  expiresAt: string
  /** set by the upload that used it: the pin it made */
  claimed?: { requestid: string, at: string }
  /** block bytes its failed uploads wrote (and pind removed again): what bounds its retries */
  failedBytes?: number
}

/** What a claim found wrong with a ticket (the service answers each with its own status). */
export class TicketClaimError extends PindError {
  override name = 'TicketClaimError'
  constructor (readonly why: 'unknown' | 'not-owner' | 'expired' | 'used', message: string) {
    super(message)
  }
}

/** the purpose of a ticket's payment record */
export function ticketPurpose (id: string): string {
  return `ticket:${id}`
}

export class UploadTickets {
  private readonly db: Database<UploadTicket, string>

  constructor (env: LedgerEnv, private readonly pins: Pick<PinLedger, 'create' | 'importBatch' | 'recordPayment'>) {
    this.db = env.db<UploadTicket>('upload-tickets')
  }

  /** `at`: as the snapshot holds it */
  get (id: string, at?: LedgerSnapshot): UploadTicket | undefined {
    return id.length > 64 ? undefined : this.db.get(id, at?.read)
  }

  /** every ticket, in ascending id order (export-ledger); `at`: as the snapshot holds them (PinLedger.snapshot: the same environment) */
  * all (at?: LedgerSnapshot): Generator<UploadTicket> {
    for (const { value } of this.db.getRange(at?.read)) yield value
  }

  /**
   * Writes imported records as they are (import-ledger): the batch's pins and
   * payments (PinLedger.importBatch) and its tickets, unused or claimed, in
   * one transaction. A ticket id the ledger holds already is refused.
   */
  async importBatch (pins: Parameters<PinLedger['importBatch']>[0], payments: PaymentRecord[], tickets: UploadTicket[]): Promise<void> {
    await this.pins.importBatch(pins, payments, () => {
      for (const t of tickets) {
        if (this.db.doesExist(t.id)) throw new Error(`upload ticket ${t.id} exists already`)
        this.db.put(t.id, t)
      }
    })
  }

  /** Records a bought ticket with its payment (and removes the payment's settlement note): one transaction. PaymentReusedError when the payment is recorded already. */
  async record (ticket: UploadTicket, payment: PaymentRecord): Promise<void> {
    await this.pins.recordPayment(payment, () => {
      if (this.db.doesExist(ticket.id)) throw new Error(`ticket ${ticket.id} exists already`)
      this.db.put(ticket.id, ticket)
    })
  }

  /**
   * Uses a ticket: checks it (it exists, `owner` bought it, it has not expired
   * and is unused), marks it claimed by `pin` and writes the pin and its
   * block references, in one transaction. TicketClaimError says what was wrong.
   */
  async claim (id: string, owner: string, pin: PinRecord, blocks: string[], now: Date = new Date()): Promise<UploadTicket> {
    let claimed: UploadTicket | undefined
    await this.pins.create(pin, undefined, blocks, () => {
      const t = this.check(id, owner, now)
      claimed = { ...t, claimed: { requestid: pin.requestid, at: now.toISOString() } }
      this.db.put(id, claimed)
    })
    return claimed as UploadTicket
  }

  /**
   * Adds what a failed upload with this ticket wrote to its failedBytes, in
   * one transaction (a claimed or unknown ticket is left as it is).
   */
  async noteFailed (id: string, bytes: number): Promise<void> {
    if (bytes <= 0) return
    await this.db.transaction(() => {
      const t = this.db.get(id)
      if (t == null || t.claimed != null) return
      this.db.put(id, { ...t, failedBytes: (t.failedBytes ?? 0) + bytes })
    })
  }

  /** The ticket `owner` may use now; TicketClaimError otherwise. */
  check (id: string, owner: string, now: Date = new Date()): UploadTicket {
    const t = this.get(id)
    if (t == null) throw new TicketClaimError('unknown', 'no such upload ticket')
    if (t.payer !== owner.toLowerCase()) throw new TicketClaimError('not-owner', 'this upload ticket was bought by another wallet; only its payer\'s wallet token can use it')
    if (t.claimed != null) throw new TicketClaimError('used', `this upload ticket was used already (pin ${t.claimed.requestid})`)
    if (Date.parse(t.expiresAt) <= now.getTime()) throw new TicketClaimError('expired', `this upload ticket expired at ${t.expiresAt}`)
    return t
  }
}
