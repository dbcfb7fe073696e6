/**
 * Shared error classes, free of any transport. Each failure has its own
 * class with a unique `name`; code checks the class (or the name), never the
 * message text. What a failure becomes on the wire (status, reason, headers)
 * is decided in one place, by name: src/http/error-catalog.ts, used by the
 * API, the gateway and the admin channel alike.
 */
export class PindError extends Error {
  override name = 'PindError'
}

/**
 * A request this service refuses: its message is written for whoever sent
 * the request (it is their answer, never a fault). No stack trace is
 * captured: refusals are never logged with one, and some are made on every
 * request (a 402 challenge).
 */
export class RefusedError extends PindError {
  override name = 'RefusedError'
  constructor (message: string) {
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    try {
      super(message)
    } finally {
      Error.stackTraceLimit = limit
    }
  }
}

/** Malformed or out-of-range input: a value, a header, a body, an admin operation. */
export class InvalidInputError extends RefusedError {
  override name = 'InvalidInputError'
}

/** The size of a request's content must be declared before it is sent, and was not. */
export class LengthRequiredError extends RefusedError {
  override name = 'LengthRequiredError'
}

/** No credential, or one that does not prove who the sender is. */
export class UnauthorizedError extends RefusedError {
  override name = 'UnauthorizedError'
}

/** No credential, or one that does not prove who the sender is, at an endpoint one can sign in to: `challenge` is the sign-in-with-x challenge (PAYMENT-REQUIRED, base64). */
export class SignInRequiredError extends UnauthorizedError {
  override name = 'SignInRequiredError'
  constructor (message: string, readonly challenge: string) {
    super(message)
  }
}

/** Nothing of that name for this caller (another owner's pin is not found either). */
/** The caller is known (its bearer token is valid) and may not use what it names (an upload ticket another wallet bought). */
export class ForbiddenError extends RefusedError {
  override name = 'ForbiddenError'
}

export class NotFoundError extends RefusedError {
  override name = 'NotFoundError'
}

/** The caller asked to be answered from what is held locally only, and it is not held. */
export class NotHeldError extends RefusedError {
  override name = 'NotHeldError'
}

/** The operation does not exist on this resource; `allow` lists those that do. */
export class OperationNotAllowedError extends RefusedError {
  override name = 'OperationNotAllowedError'
  constructor (message: string, readonly allow: string) {
    super(message)
  }
}

/** None of the representations the caller accepts can be produced. */
export class NotAcceptableError extends RefusedError {
  override name = 'NotAcceptableError'
}

/** The caller did not send what it had to within the time it had. */
export class InputTimeoutError extends RefusedError {
  override name = 'InputTimeoutError'
}

/** The request contradicts the state of what it names (a failed pin, a pin removed meanwhile). */
export class ConflictError extends RefusedError {
  override name = 'ConflictError'
}

/** Content this service no longer serves (the operator's denials). */
export class GoneError extends RefusedError {
  override name = 'GoneError'
}

/** Input over a limit: declared, or found while streaming. */
export class InputTooLargeError extends RefusedError {
  override name = 'InputTooLargeError'
}

/** The whole body of a request (framing, preamble and all) went past the limit it was read with. */
export class BodyTooLargeError extends PindError {
  override name = 'BodyTooLargeError'
  constructor (readonly limit: number) {
    super(`the request body is larger than ${limit} bytes`)
  }
}

/** The name of what is asked for is longer than anything this service serves. */
export class NameTooLongError extends RefusedError {
  override name = 'NameTooLongError'
}

/** The input comes in a form this service does not read. */
export class UnsupportedFormatError extends RefusedError {
  override name = 'UnsupportedFormatError'
}

/** A byte range outside the `size` bytes of what it asks for. */
export class RangeOutsideError extends RefusedError {
  override name = 'RangeOutsideError'
  constructor (message: string, readonly size: number) {
    super(message)
  }
}

/** This caller is over a limit of its own; it may try again after `retryAfterSeconds`. */
export class TooManyRequestsError extends RefusedError {
  override name = 'TooManyRequestsError'
  constructor (message: string, readonly retryAfterSeconds: number) {
    super(message)
  }
}

/** Content the operator does not accept (denials, denylists); `blockedBy`: who decided (the service's URL). */
export class LegallyRefusedError extends RefusedError {
  override name = 'LegallyRefusedError'
  constructor (message: string, readonly blockedBy: string) {
    super(message)
  }
}

/** The service cannot do it now (busy, not configured, a backend down); retry after `retryAfterSeconds`. */
export class UnavailableError extends RefusedError {
  override name = 'UnavailableError'
  constructor (message: string, readonly retryAfterSeconds = 30) {
    super(message)
  }
}

/** The service is starting or stopping. */
export class ShuttingDownError extends UnavailableError {
  override name = 'ShuttingDownError'
}

/**
 * A write that must be paid: no payment, or one refused. `challenge` is the
 * machine-readable terms (x402's PAYMENT-REQUIRED value, when there are
 * terms to sign), `terms` the same in words. Built once per quote and given
 * again as is: it must not be changed once made.
 */
export class PaymentRequiredError extends RefusedError {
  override name = 'PaymentRequiredError'
  constructor (message: string, readonly challenge?: string, readonly terms?: Record<string, unknown>) {
    super(message)
  }
}

/** A payment refused because the payer's balance does not cover it. */
export class InsufficientFundsError extends PaymentRequiredError {
  override name = 'InsufficientFundsError'
}

/**
 * The same payment presented again, and refused (`cause`: the answer). Its
 * request gets nothing: the rest of its input is not read.
 */
export class ReplayRefusedError extends PindError {
  override name = 'ReplayRefusedError'
  constructor (override readonly cause: RefusedError) {
    super(cause.message)
  }
}

/** An `Expect:` the server does not meet (only 100-continue is). */
export class ExpectationFailedError extends RefusedError {
  override name = 'ExpectationFailedError'
}

/** A request head larger than the server reads. */
export class HeadTooLargeError extends RefusedError {
  override name = 'HeadTooLargeError'
}
