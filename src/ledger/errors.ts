/** The ledger's errors: what a caller may catch and answer, whatever store is behind the ledger. */
import { PindError, UnavailableError } from '../kernel/errors.js'

/** The pin was removed (or never existed) by the time a write reached it. */
export class PinGoneError extends PindError {
  override name = 'PinGoneError'
  constructor (readonly requestid: string) {
    super(`pin ${requestid} no longer exists`)
  }
}

/** The payment is recorded already: it buys one thing only. */
export class PaymentReusedError extends PindError {
  override name = 'PaymentReusedError'
  constructor (readonly paymentId: string) {
    super('this payment was already used')
  }
}

/** What a claim found wrong with a ticket (the service answers each with its own status). */
export class TicketClaimError extends PindError {
  override name = 'TicketClaimError'
  constructor (readonly why: 'unknown' | 'not-owner' | 'expired' | 'used', message: string) {
    super(message)
  }
}

/** The ledger was written by a pind this one cannot read (a newer schema), or is not a ledger. */
export class LedgerSchemaError extends PindError {
  override name = 'LedgerSchemaError'
}

/**
 * The ledger's database cannot be reached now (refused, cut, shutting down,
 * failing over, no connection in time): nothing was written by the call that
 * failed; the caller may retry once it is back. Its message never holds the
 * database's password.
 */
export class LedgerUnavailableError extends UnavailableError {
  override name = 'LedgerUnavailableError'
  constructor (message = 'the ledger\'s database is unreachable right now; retry after Retry-After', retryAfterSeconds = 5) {
    super(message, retryAfterSeconds)
  }
}
