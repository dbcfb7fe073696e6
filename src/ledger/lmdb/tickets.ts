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
import { TicketClaimError } from '../errors.js'
import type { UploadTicket } from '../tickets.js'
export { TicketClaimError } from '../errors.js'
export { ticketPurpose, type UploadTicket } from '../tickets.js'
import type { Database } from 'lmdb'
import type { LedgerEnv } from './open.js'
import type { PinLedger } from './pins.js'
import type { PaymentRecord, PinRecord } from '../records.js'
import type { LedgerSnapshot } from './snapshot.js'

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

  /** Writes imported tickets, unused or claimed, inside the caller's transaction; an id the ledger holds already is refused. */
  importIn (tickets: UploadTicket[]): void {
    for (const t of tickets) {
      if (this.db.doesExist(t.id)) throw new Error(`upload ticket ${t.id} exists already`)
      this.db.put(t.id, t)
    }
  }

  /** Writes a bought ticket inside the caller's transaction (the one recording its payment). */
  putNewIn (ticket: UploadTicket): void {
    if (this.db.doesExist(ticket.id)) throw new Error(`ticket ${ticket.id} exists already`)
    this.db.put(ticket.id, ticket)
  }

  /** Checks a ticket and marks it claimed by `requestid`, inside the caller's transaction (the one writing that pin); TicketClaimError says what was wrong. */
  claimIn (id: string, owner: string, requestid: string, now: Date = new Date()): UploadTicket {
    const claimed = { ...this.check(id, owner, now), claimed: { requestid, at: now.toISOString() } }
    this.db.put(id, claimed)
    return claimed
  }

  /** Writes imported records as they are (import-ledger): pins, payments and tickets in one transaction. */
  async importBatch (pins: Parameters<PinLedger['importBatch']>[0], payments: PaymentRecord[], tickets: UploadTicket[]): Promise<void> {
    await this.pins.importBatch(pins, payments, () => { this.importIn(tickets) })
  }

  /** Records a bought ticket with its payment (and removes the payment's settlement note): one transaction. PaymentReusedError when the payment is recorded already. */
  async record (ticket: UploadTicket, payment: PaymentRecord): Promise<void> {
    await this.pins.recordPayment(payment, () => { this.putNewIn(ticket) })
  }

  /** Uses a ticket and writes the pin it makes with its block references, in one transaction. TicketClaimError says what was wrong. */
  async claim (id: string, owner: string, pin: PinRecord, blocks: string[], now: Date = new Date()): Promise<UploadTicket> {
    let claimed: UploadTicket | undefined
    await this.pins.create(pin, undefined, blocks, () => { claimed = this.claimIn(id, owner, pin.requestid, now) })
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
