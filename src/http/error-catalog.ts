/**
 * The error catalog: every reason a response can carry, and what each error
 * (by its `name`) becomes on the wire — status, reason, headers. The one
 * place where statuses are chosen for failures (pind's errors only, all
 * extending PindError): the API, the gateway and the
 * admin channel all answer through `errorAnswer`. An error not listed is a
 * fault of this service: a 500 whose details go to the log, never to the
 * client. test/unit/http/error-catalog.test.ts fails when an exported error
 * class is missing here, or a reason is missing from the OpenAPI document.
 * (After fastify's lib/errors.js and @helia/verified-fetch's errorToResponse.)
 */

import { z } from 'zod/v4'
import { PindError } from '../kernel/errors.js'

/** what an answer's JSON escapes (see answer) */
const NON_ASCII = /[\u007f-\uffff]/g

/** Each reason the `{"error":{"reason","details"}}` body can carry, in words. */
export const REASONS = {
  BAD_REQUEST: 'the request is malformed, or a value in it is out of range',
  UNAUTHORIZED: 'no bearer token, or one that is malformed, expired, revoked or signed by an unknown key; or a SIGN-IN-WITH-X header that does not sign in (malformed, for another domain, URI or chain, too old, expired, not yet valid, a used nonce, a signature that is not the address\'s)',
  PAYMENT_REQUIRED: 'the write must be paid: no payment, or one that does not match the quote, was refused, could not be settled or was already used',
  INSUFFICIENT_FUNDS: 'the payment was refused because the payer\'s balance does not cover it',
  FORBIDDEN: 'the bearer token\'s wallet may not use what the request names (an upload ticket bought by another wallet)',
  NOT_FOUND: 'no such endpoint, pin, denial or content (another owner\'s pin is not found either)',
  METHOD_NOT_ALLOWED: 'the endpoint exists, not with this method (see Allow)',
  NOT_ACCEPTABLE: 'none of the accepted representations can be produced',
  REQUEST_TIMEOUT: 'the request body did not arrive in time',
  CONFLICT: 'the request contradicts the state of the pin it names, or the upload ticket it uses was used already or is in use by another upload',
  GONE: 'the content is denied by the operator and no longer served, or the upload ticket has expired',
  PAYLOAD_TOO_LARGE: 'the body, the file or the DAG is over a limit',
  URI_TOO_LONG: 'the request target is too long',
  UNSUPPORTED_MEDIA_TYPE: 'the body is not in a media type this endpoint reads',
  RANGE_NOT_SATISFIABLE: 'the byte range is outside the content',
  TOO_MANY_REQUESTS: 'this client is over one of its limits; retry after Retry-After',
  UNAVAILABLE_FOR_LEGAL_REASONS: 'the content is not accepted by this service (the operator\'s denials); nothing was charged',
  INTERNAL_SERVER_ERROR: 'the server failed (the details are in its log), or a site\'s _redirects file is invalid (the details say where)',
  SERVICE_UNAVAILABLE: 'the service cannot do it now (starting, busy, payments not ready, its block store or ledger database unreachable); retry after Retry-After',
  SHUTTING_DOWN: 'the server is shutting down; retry shortly'
} as const

export type Reason = keyof typeof REASONS

interface Entry<E = never> {
  status: number
  reason: Reason
  headers?: (err: E) => Record<string, string>
  /** the details, when they are not the error's message */
  details?: (err: E) => string
}

const retryAfter = (err: { retryAfterSeconds: number }): Record<string, string> => ({ 'retry-after': String(err.retryAfterSeconds) })

/** Errors that are answers, by name. */
export const ERRORS: Record<string, Entry<any>> = {
  // src/kernel/errors.ts
  InvalidInputError: { status: 400, reason: 'BAD_REQUEST' },
  LengthRequiredError: { status: 411, reason: 'BAD_REQUEST' },
  ExpectationFailedError: { status: 417, reason: 'BAD_REQUEST' },
  HeadTooLargeError: { status: 431, reason: 'BAD_REQUEST' },
  UnauthorizedError: { status: 401, reason: 'UNAUTHORIZED', headers: () => ({ 'www-authenticate': 'Bearer' }) },
  // an owner endpoint's 401: a sign-in-with-x challenge beside the bearer scheme (docs/siwx.md)
  SignInRequiredError: { status: 401, reason: 'UNAUTHORIZED', headers: (e: { challenge: string }) => ({ 'www-authenticate': 'Bearer', 'payment-required': e.challenge }) },
  PaymentRequiredError: { status: 402, reason: 'PAYMENT_REQUIRED', headers: paymentHeaders },
  InsufficientFundsError: { status: 402, reason: 'INSUFFICIENT_FUNDS', headers: paymentHeaders },
  ForbiddenError: { status: 403, reason: 'FORBIDDEN' },
  NotFoundError: { status: 404, reason: 'NOT_FOUND' },
  // a miss for `Cache-Control: only-if-cached` (path gateway spec: 412)
  NotHeldError: { status: 412, reason: 'NOT_FOUND' },
  OperationNotAllowedError: { status: 405, reason: 'METHOD_NOT_ALLOWED', headers: (e: { allow: string }) => ({ allow: e.allow }) },
  NotAcceptableError: { status: 406, reason: 'NOT_ACCEPTABLE' },
  InputTimeoutError: { status: 408, reason: 'REQUEST_TIMEOUT' },
  ConflictError: { status: 409, reason: 'CONFLICT' },
  GoneError: { status: 410, reason: 'GONE' },
  InputTooLargeError: { status: 413, reason: 'PAYLOAD_TOO_LARGE' },
  BodyTooLargeError: { status: 413, reason: 'PAYLOAD_TOO_LARGE' },
  NameTooLongError: { status: 414, reason: 'URI_TOO_LONG' },
  UnsupportedFormatError: { status: 415, reason: 'UNSUPPORTED_MEDIA_TYPE' },
  RangeOutsideError: { status: 416, reason: 'RANGE_NOT_SATISFIABLE', headers: (e: { size: number }) => ({ 'content-range': `bytes */${e.size}`, 'accept-ranges': 'bytes', 'x-content-type-options': 'nosniff' }) },
  TooManyRequestsError: { status: 429, reason: 'TOO_MANY_REQUESTS', headers: retryAfter },
  LegallyRefusedError: { status: 451, reason: 'UNAVAILABLE_FOR_LEGAL_REASONS', headers: (e: { blockedBy: string }) => ({ link: `<${e.blockedBy}>; rel="blocked-by"` }) },
  UnavailableError: { status: 503, reason: 'SERVICE_UNAVAILABLE', headers: retryAfter },
  ShuttingDownError: { status: 503, reason: 'SHUTTING_DOWN', headers: retryAfter },
  // ipfs/block-backend.ts: the block store (an S3 bucket) unreachable, or too slow
  StorageUnavailableError: { status: 503, reason: 'SERVICE_UNAVAILABLE', headers: retryAfter },
  StorageTimeoutError: { status: 504, reason: 'SERVICE_UNAVAILABLE', headers: retryAfter },
  // ledger/: the ledger's database (PostgreSQL) unreachable or failing over
  LedgerUnavailableError: { status: 503, reason: 'SERVICE_UNAVAILABLE', headers: retryAfter },
  // admin: pind blocks migrate, one maintenance task at a time
  MigrateError: { status: 409, reason: 'CONFLICT' },
  MaintenanceBusyError: { status: 409, reason: 'CONFLICT' },
  ReplayRefusedError: { status: 0, reason: 'PAYMENT_REQUIRED' }, // answered as its cause (see errorAnswer)
  // auth/
  InvalidTokenError: { status: 401, reason: 'UNAUTHORIZED', headers: () => ({ 'www-authenticate': 'Bearer' }) },
  SiweError: { status: 400, reason: 'BAD_REQUEST' },
  SiweBusyError: { status: 429, reason: 'TOO_MANY_REQUESTS', headers: retryAfter },
  // answered as a SignInRequiredError by http/bearer.ts; this entry for any other path
  SiwxError: { status: 401, reason: 'UNAUTHORIZED', headers: () => ({ 'www-authenticate': 'Bearer' }) },
  SiwxUnavailableError: { status: 503, reason: 'SERVICE_UNAVAILABLE', headers: retryAfter },
  // payment/
  PriceTooHighError: { status: 400, reason: 'BAD_REQUEST' },
  // ipfs/
  ContentNotFoundError: { status: 404, reason: 'NOT_FOUND' },
  BlockMissingError: { status: 404, reason: 'NOT_FOUND' },
  UnsupportedContentError: { status: 400, reason: 'BAD_REQUEST' },
  CarError: { status: 400, reason: 'BAD_REQUEST' },
  DirectoryError: { status: 400, reason: 'BAD_REQUEST' },
  // a site's _redirects file that cannot be read (web-redirects-file spec: a 500 that says why; its owner's fault, not ours)
  RedirectsFileError: { status: 500, reason: 'INTERNAL_SERVER_ERROR', details: (e: Error) => `the site's _redirects file is invalid: ${e.message}` },
  InvalidContentError: { status: 406, reason: 'NOT_ACCEPTABLE', details: (e: Error) => `${e.message}; it cannot be deserialized, ask for ?format=raw or ?format=car` },
  // service/
  ExportOptionsError: { status: 400, reason: 'BAD_REQUEST' }
}

/**
 * Errors that are faults of this service or of its operator's setup, never
 * an answer to a client: listed so that a new error class is a decision
 * (answer or fault), not an accident. They become a 500 with no details.
 */
export const FAULTS: readonly string[] = [
  'PindError', 'RefusedError', 'InvalidOwnerError', 'KeyStoreError', 'KeyPermissionError', 'UnknownKeyError',
  'DataDirAccessError', 'DataDirLockedError', 'StartupError', 'ConfigValueError', 'LedgerSchemaError',
  'PinGoneError', 'PaymentReusedError', 'TicketClaimError', 'AssetMismatchError', 'RpcUnreachableError',
  'TooLargeError', 'UnusableImportError', 'PermanentFetchError', 'DagTooLargeError', 'DagExpandsError', 'UnwalkableDagError',
  'StalledError', 'P2pListenError', 'BlockHashMismatchError', 'CorruptBlockError', 'HealthCheckError', 'ImportError', 'CannotFulfilError',
  'HeaderError', 'RuleError', 'DenylistConfigError', 'AdminCallError',
  'BlockstoreRecordError', 'BackendChoiceError', 'S3ConfigError', 'S3RequestError', 'S3DeadlineError', 'RuntimeSettingError',
  'UpgradeHalted', 'LedgerChoiceError', 'LedgerRecordError', 'FrontEndConflictError', 'LedgerMigrateError'
]

/** What an error becomes on the wire. */
export interface ErrorAnswer {
  status: number
  reason: Reason
  details: string
  headers: Record<string, string>
  /** the JSON body, serialized once per error (a challenge given again and again costs nothing more) */
  body: Buffer
  /** the same as text: node:http writes a text body and the head in one string, one write (a Buffer body is a second chunk of a writev) */
  text: string
}

const INTERNAL: ErrorAnswer = answer(500, 'INTERNAL_SERVER_ERROR', 'the server failed to handle this request; it has been logged', {})

const answered = new WeakMap<object, ErrorAnswer>()

/** The answer to `err`: its catalog entry, or a 500 (`fault: true`) when it has none. */
export function errorAnswer (err: unknown): ErrorAnswer & { fault?: true } {
  // only pind's own errors are looked up: a library's error that happens to share a name
  // (interface-store's NotFoundError, say) is a fault, not an answer
  if (!(err instanceof PindError)) return { ...INTERNAL, fault: true }
  const known = answered.get(err)
  if (known != null) return known
  const name = (err as Error).name
  if (name === 'ReplayRefusedError') return errorAnswer((err as Error).cause)
  const entry = Object.hasOwn(ERRORS, name) ? ERRORS[name] : undefined
  if (entry == null) return { ...INTERNAL, fault: true }
  const terms = (err as { terms?: Record<string, unknown> }).terms
  const made = answer(entry.status, entry.reason, entry.details?.(err) ?? (err as Error).message, entry.headers?.(err) ?? {}, terms)
  answered.set(err, made)
  return made
}

/** Does this error have an answer (rather than being a fault)? */
export function isAnswered (err: unknown): boolean {
  return errorAnswer(err).fault !== true
}

/** The statuses a reason is answered with. */
export function statusesOf (reason: Reason): number[] {
  const out = new Set<number>()
  if (reason === 'INTERNAL_SERVER_ERROR') out.add(500)
  for (const e of Object.values(ERRORS)) if (e.reason === reason && e.status !== 0) out.add(e.status)
  return [...out].sort()
}

/** The body of every error answer, the Pinning Service API's Failure (OpenAPI: Failure, derived from this). */
export const Failure = z.object({
  error: z.object({
    reason: z.string().meta({ description: 'Mandatory string identifying the type of error', examples: Object.keys(REASONS) }),
    details: z.string().meta({ description: 'Longer description of the error, for humans' })
  })
}).meta({ description: 'Response for a failed request (every error of this API)' })

export function errorBody (reason: string, details: string): z.output<typeof Failure> {
  return { error: { reason, details } }
}

function answer (status: number, reason: Reason, details: string, headers: Record<string, string>, extra?: Record<string, unknown>): ErrorAnswer {
  // ASCII only (\uXXXX escapes, the same JSON to a reader): one non-Latin-1 character (a dash in the
  // 402's formula) made head and body a two-byte string that node:http encoded on every write
  const json = JSON.stringify({ ...extra, ...errorBody(reason, details) }, (_k, v: unknown) => typeof v === 'bigint' ? v.toString() : v)
    .replace(NON_ASCII, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
  // a buffer of its own, not a slice of Buffer's shared 64 KiB pool: a kept answer (the gate keeps
  // 1000 challenges) must not keep a whole pool slab alive with it
  const body = Buffer.allocUnsafeSlow(Buffer.byteLength(json))
  body.write(json)
  // the text read back as Latin-1: a one-byte string. `json` itself stays two-byte when the replace
  // above had anything to escape, and node:http would encode it from two bytes a character on every write
  return { status, reason, details, headers, body, text: body.toString('latin1') }
}

function paymentHeaders (e: { challenge?: string }): Record<string, string> {
  return e.challenge != null ? { 'payment-required': e.challenge } : {}
}
