/**
 * Prepaid upload tickets: a payment settled at once (POST /upload/tickets)
 * buys the right to upload one file of up to `bytes` bytes, pinned for
 * `months`, by the paying wallet, before `expiresAt`. A ticket is recorded
 * with its payment in one transaction, and claimed by the pin its upload
 * creates in one transaction (LedgerTransaction), so a ticket makes at most
 * one pin however many uploads try it at once.
 */
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

/** the purpose of a ticket's payment record */
export function ticketPurpose (id: string): string {
  return `ticket:${id}`
}


export interface UploadTickets {
  get(id: string): Promise<UploadTicket | undefined>
  /**
   * The ticket `owner` may use now: it exists, `owner` bought it, it is
   * unused and has not expired. TicketClaimError (../errors.ts) otherwise.
   */
  check(id: string, owner: string, now?: Date): Promise<UploadTicket>
  /** Adds what a failed upload with this ticket wrote to its failedBytes (a claimed or unknown ticket is left as it is). */
  noteFailed(id: string, bytes: number): Promise<void>
}
