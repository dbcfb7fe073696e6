/**
 * Shared error classes. Each failure has its own class with a `name`; errors
 * that reach HTTP carry a status and a machine `reason` (the Pinning Service
 * API error shape: {"error":{"reason","details"}}). Mapping to responses
 * happens in one place: src/http/error-response.ts.
 */
export class PindError extends Error {
  override name = 'PindError'
}

export type Reason =
  | 'BAD_REQUEST' | 'UNAUTHORIZED' | 'NOT_FOUND' | 'INSUFFICIENT_FUNDS' | 'INTERNAL_SERVER_ERROR'
  | 'PAYMENT_REQUIRED' | 'PAYLOAD_TOO_LARGE' | 'METHOD_NOT_ALLOWED' | 'NOT_ACCEPTABLE'
  | 'RANGE_NOT_SATISFIABLE' | 'UNSUPPORTED_MEDIA_TYPE' | 'SERVICE_UNAVAILABLE' | 'TOO_MANY_REQUESTS'
  | 'SHUTTING_DOWN' | 'CONFLICT' | 'REQUEST_TIMEOUT' | 'NOT_IMPLEMENTED' | 'URI_TOO_LONG'
  | 'GONE' | 'UNAVAILABLE_FOR_LEGAL_REASONS'

/**
 * An error that becomes an HTTP response with the spec's error body. It is
 * an answer, not a fault: no stack trace is captured (they are never logged,
 * and the 402 path creates one per request).
 */
export class HttpError extends PindError {
  override name = 'HttpError'
  readonly status: number
  readonly reason: Reason
  readonly details: string
  readonly headers: Record<string, string>
  /** extra top-level fields of the body, beside `error` (e.g. a 402's readable terms) */
  readonly extra?: Record<string, unknown>
  private body?: Buffer

  constructor (status: number, reason: Reason, details: string, headers: Record<string, string> = {}, extra?: Record<string, unknown>) {
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    try {
      super(`${reason}: ${details}`)
    } finally {
      Error.stackTraceLimit = limit
    }
    this.status = status
    this.reason = reason
    this.details = details
    this.headers = headers
    if (extra !== undefined) this.extra = extra
  }

  /**
   * The JSON body, serialized once per instance: an answer that is given
   * again and again (a cached 402 challenge) costs no serialization after
   * the first time. The instance must not be changed after it is first sent.
   */
  bodyBytes (): Buffer {
    this.body ??= Buffer.from(JSON.stringify({ ...this.extra, error: { reason: this.reason, details: this.details } }, (_k, v: unknown) => typeof v === 'bigint' ? v.toString() : v))
    return this.body
  }
}

/**
 * An answer given without reading the rest of the request body, to a
 * request that gets nothing for it (a replayed payment): the body is not
 * drained, and the connection is closed once the answer is out.
 */
export class UnreadBodyError extends HttpError {
  override name = 'UnreadBodyError'
}

export const badRequest = (details: string): HttpError => new HttpError(400, 'BAD_REQUEST', details)
export const notFound = (details: string): HttpError => new HttpError(404, 'NOT_FOUND', details)
export const unauthorized = (details: string): HttpError =>
  new HttpError(401, 'UNAUTHORIZED', details, { 'www-authenticate': 'Bearer' })
export const tooLarge = (details: string): HttpError => new HttpError(413, 'PAYLOAD_TOO_LARGE', details)
export const unavailable = (details: string, retryAfterSeconds = 30): HttpError =>
  new HttpError(503, 'SERVICE_UNAVAILABLE', details, { 'retry-after': String(retryAfterSeconds) })
