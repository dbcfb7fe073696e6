/**
 * /pins, the Pinning Service API: create (paid with x402, or with an
 * operator token), list, inspect, replace and remove pins. Owner endpoints
 * take a wallet token; another owner's requestid is a 404, never a 403.
 */
import type { IncomingMessage } from 'node:http'
import type { SignInWithX } from '../../auth/siwx.js'
import type { TokenService, VerifiedToken } from '../../auth/tokens.js'
import { NotFoundError } from '../../kernel/errors.js'
import type { PinRecord } from '../../ledger/records.js'
import { PAYMENT_HEADER } from '../../payment/gate.js'
import { createPin, type PinCreateDeps, type PinOutcome, type PinWrite } from '../../service/pins/pin-create.js'
import { parsePinRequest } from '../../service/pins/pin-request.js'
import { renewPin } from '../../service/pins/pin-renew.js'
import { readJson } from '../json-body.js'
import type { PinLedger } from '../../ledger/pins.js'
import { parsePinQuery } from '../../service/pins/pin-query.js'
import { toPinStatus, type PinStatus } from '../../service/pins/pin-status.js'
import { withDenial } from '../../service/serving/denials.js'
import type { Refusal } from '../../service/serving/serve-policy.js'
import type { CID } from 'multiformats/cid'
import { bearer, owner as ownerOf } from '../bearer.js'
import { byteCount, DURATION_HEADER, parseMonths, PIN_SIZE_HEADER } from '../write-headers.js'
import { sendJson } from '../respond.js'
import type { Router } from '../router.js'
import { failure, JSON_LIMIT, jsonBody, jsonBodyErrors, legalReasons, operation, ownerPaid, ownerSignedIn, paidOrOperator, paymentRequired, ref, response, schema, signInRequired, tokenHeaders, type Obj, type OpenApiInput, type PathItems, unauthorized, writesUnavailable } from '../openapi-parts.js'

export interface PinRoutesDeps {
  ledger: PinLedger
  tokens: TokenService
  delegates(): string[]
  create: PinCreateDeps
  /** the client's address (rate limits' notion: X-Forwarded-For from trusted proxies only) */
  clientOf(req: IncomingMessage): string
  /** why a pin's CID is denied: its owner sees it in the PinStatus (service/serving/denials.ts withDenial) */
  refusal?: (cid: CID) => Refusal | undefined
  /** Sign-In-With-X on the owner endpoints that only read or remove (GET /pins, GET and DELETE /pins/{id}); absent: bearer tokens only */
  siwx?: SignInWithX
}

export function pinRoutes (router: Router, d: PinRoutesDeps): void {
  const shown = (status: PinStatus): PinStatus => d.refusal != null ? withDenial(status, d.refusal) : status
  const signedIn = async (req: IncomingMessage, url: URL): Promise<string> => await ownerOf(req, url.pathname + url.search, d.tokens, d.siwx)
  router.add('GET', '/pins', async ({ req, res, url }) => {
    const owner = await signedIn(req, url)
    const q = parsePinQuery(url.searchParams)
    const { count, results } = await d.ledger.list(owner, q)
    const delegates = d.delegates()
    sendJson(res, 200, { count, results: results.map(p => shown(toPinStatus(p, delegates))) })
  })

  const ownPin = async (owner: string, requestid: string): Promise<PinRecord> => await ownerPin(d.ledger, owner, requestid)

  router.add('GET', '/pins/:requestid', async ({ req, res, params, url }) => {
    const owner = await signedIn(req, url)
    sendJson(res, 200, shown(toPinStatus(await ownPin(owner, params.requestid as string), d.delegates())))
  })

  router.add('DELETE', '/pins/:requestid', async ({ req, res, params, url, countAsPaid }) => {
    const owner = await signedIn(req, url)
    const pin = await ownPin(owner, params.requestid as string)
    await d.ledger.remove(pin.requestid, 'unpinned')
    countAsPaid()
    res.writeHead(202, { 'content-length': 0 })
    res.end()
  })

  const write = async (req: IncomingMessage, replaces?: (owner: string) => Promise<PinRecord>): Promise<PinOutcome> => {
    const request = parsePinRequest(await readJson(req))
    const months = parseMonths(req.headers[DURATION_HEADER], d.create.prices.maxMonths)
    const claimedBytes = byteCount(req, PIN_SIZE_HEADER, 'X-Pin-Size must be a whole number of bytes (the size of the whole DAG)')
    // a token is optional on POST /pins (operator tokens pin without paying) and required to replace
    const auth = replaces != null || req.headers.authorization != null ? await bearer(req, d.tokens) : undefined
    const paymentHeader = req.headers[PAYMENT_HEADER]
    // set field by field, not spread from conditional objects: the unpaid 402 is the hot path
    const w: PinWrite = { request, months, client: d.clientOf(req) }
    if (claimedBytes != null) w.claimedBytes = claimedBytes
    if (typeof paymentHeader === 'string') w.paymentHeader = paymentHeader
    if (auth != null) w.auth = auth
    if (replaces != null) w.replaces = await replaces((auth as VerifiedToken).owner)
    return await createPin(w, d.create)
  }

  // a write answered without an error was paid for (or made with an operator token)
  router.add('POST', '/pins', async ({ req, res, countAsPaid }) => {
    const r = await write(req)
    countAsPaid()
    sendJson(res, 202, r.pin, outcomeHeaders(r))
  })

  router.add('POST', '/pins/:requestid/renew', async ({ req, res, params, countAsPaid }) => {
    const auth = await bearer(req, d.tokens)
    const months = parseMonths(req.headers[DURATION_HEADER], d.create.prices.maxMonths)
    const paymentHeader = req.headers[PAYMENT_HEADER]
    const r = await renewPin({ requestid: params.requestid as string, months, auth, ...(typeof paymentHeader === 'string' ? { paymentHeader } : {}) }, d.create)
    countAsPaid()
    sendJson(res, 200, r.pin, outcomeHeaders(r))
  })

  const replaceable = async (owner: string, requestid: string): Promise<PinRecord> => await replaceablePin(d.ledger, owner, requestid)

  router.add('POST', '/pins/:requestid', async ({ req, res, params, countAsPaid }) => {
    const r = await write(req, (owner) => replaceable(owner, params.requestid as string))
    countAsPaid()
    sendJson(res, 202, r.pin, outcomeHeaders(r))
  })
}

/** The owner's live (or failed) pin; another owner's, removed or expired past grace is a 404 (the MCP tools use it too). */
export async function ownerPin (ledger: Pick<PinLedger, 'get' | 'isLive'>, owner: string, requestid: string): Promise<PinRecord> {
  const pin = await ledger.get(requestid)
  if (pin == null || pin.owner !== owner || pin.removed != null || (!ledger.isLive(pin) && pin.status !== 'failed')) {
    throw new NotFoundError(`no pin with requestid ${requestid.slice(0, 100)} for this owner`)
  }
  return pin
}

/**
 * The pin a replacement names: the owner's pin, or one this owner replaced (the honest retry of the
 * paid request that replaced it is answered as a replay; anything else gets 404 from the service).
 */
export async function replaceablePin (ledger: Pick<PinLedger, 'get' | 'isLive'>, owner: string, requestid: string): Promise<PinRecord> {
  const pin = await ledger.get(requestid)
  return pin != null && pin.owner === owner && pin.removed?.why === 'replaced' ? pin : await ownerPin(ledger, owner, requestid)
}

function outcomeHeaders (r: PinOutcome): Record<string, string> {
  return {
    ...(r.settlement != null ? { 'payment-response': r.settlement } : {}),
    ...(r.location != null ? { location: r.location } : {}),
    ...(r.token != null ? { 'x-wallet-auth-token': r.token.token, 'x-wallet-auth-token-expires': r.token.expiresAt.toISOString() } : {})
  }
}

// ---- the OpenAPI description of these routes (src/http/openapi.ts) ----------

export function pinOperations (o: OpenApiInput): PathItems {
  return {
    '/pins': { get: listPinsOp(), post: createPinOp() },
    '/pins/{requestid}': {
      parameters: [ref('parameters', 'requestid')],
      get: getPinOp(),
      post: replacePinOp(),
      delete: deletePinOp()
    },
    '/pins/{requestid}/renew': { parameters: [ref('parameters', 'requestid')], post: renewPinOp(o) }
  }
}

function listPinsOp (): Obj {
  return operation('get', {
    id: 'getPins',
    tag: 'pins',
    summary: 'List your pin objects',
    description: 'The token owner\'s pins matching every filter, newest first. Without `status`, only `pinned` pins are listed. `count` counts every pin matching all filters (`before`/`after` included), so paging with `before=<created of the oldest>` ends when `count` equals the page length.',
    security: ownerSignedIn(),
    parameters: ['cid', 'name', 'match', 'status', 'before', 'after', 'limit', 'meta'].map(p => ref('parameters', p)),
    responses: {
      200: response('The matching pins (PinResults).', schema('PinResults')),
      400: failure('A filter is malformed or given more than once (e.g. more than 10 CIDs, an unknown status, limit outside 1–1000, before/after not RFC 3339, meta not a JSON object of strings).'),
      401: signInRequired('No, a malformed, expired, revoked or unknown-key bearer token, or a SIGN-IN-WITH-X header that does not sign in.')
    }
  })
}

function getPinOp (): Obj {
  return operation('get', {
    id: 'getPinByRequestId',
    tag: 'pins',
    summary: 'Get a pin object and its status',
    security: ownerSignedIn(),
    responses: {
      200: response('The pin (PinStatus); `info.status_details` tells fetch progress or the reason for failure.', schema('PinStatus')),
      401: signInRequired('No or an invalid bearer token or SIGN-IN-WITH-X header.'),
      404: failure('No live (or failed) pin with this requestid for this owner: unknown, another owner\'s, removed, replaced, or expired past the grace period.')
    }
  })
}

function deletePinOp (): Obj {
  return operation('delete', {
    id: 'deletePinByRequestId',
    tag: 'pins',
    summary: 'Remove a pin object',
    description: 'Unpins at once: the content stops being served and a fetch in progress is cancelled. Blocks are released for the next `pind gc`. Not refunded.',
    security: ownerSignedIn(),
    responses: {
      202: { description: 'Removed (no body).' },
      401: signInRequired('No or an invalid bearer token or SIGN-IN-WITH-X header.'),
      404: failure('No live (or failed) pin with this requestid for this owner.')
    }
  })
}

const PIN_BODY_BAD = 'the Pin is invalid (the message names the field): `cid` missing or not a CID of codec dag-pb, raw, dag-cbor, dag-json or json with sha2-256/512; `name` over 255 characters; `origins` not ≤ 20 unique multiaddrs; `meta` not an object of ≤ 1000 string values'

function pinWriteErrors (): Obj {
  return {
    ...jsonBodyErrors(JSON_LIMIT, `${PIN_BODY_BAD}; or X-Pin-Duration-Months or X-Pin-Size is malformed, or the price would exceed the service's maximum price; or the root block was found and is not valid for the CID's codec (such a DAG cannot be pinned).`),
    413: failure(`The JSON body is larger than ${JSON_LIMIT} bytes, or X-Pin-Size or the size the root block declares is over the service's largest pin (\`--pin-max-bytes\`).`),
    429: failure('Over the per-address rate limit the operator set, or this address already has as many probes for the size of a DAG running as one client may (4): retry after `Retry-After` seconds.', { 'Retry-After': ref('headers', 'RetryAfter') }),
    451: legalReasons('The CID is denied by this service (the operator\'s takedowns or denylists; the details say why): refused before any quote or payment, nothing was charged.'),
    503: writesUnavailable(', every probe for the size of a DAG is in use (`SERVICE_UNAVAILABLE`, `Retry-After`: no quote is given rather than one priced without the root)')
  }
}

function createPinOp (): Obj {
  return operation('post', {
    id: 'addPin',
    tag: 'pins',
    summary: 'Pin a CID (paid)',
    description: [
      'Answers 202 at once; the DAG is fetched in the background (`queued` → `pinning` → `pinned` | `failed`), from the `origins` first.',
      'Price: the size the root block declares (looked for briefly: locally among the blocks this node serves, at up to 4 of the `origins`, at connected peers), or `X-Pin-Size` when larger or when the root cannot be read in time; with neither, the minimum price. The 402 body names the size used (`sizeSource`); the agent card states the rule (`pricing.pinsByCid`).',
      'Origins are dialled only at public addresses (IP addresses, or DNS names resolving to one, over TCP) unless the operator allows any (`--origin-addresses any`).',
      'The pin holds at most the bytes the payment covers (`info.max_bytes`); a DAG that turns out larger fails and keeps nothing. The payment is settled on acceptance and not refunded if the pin fails.',
      'A bearer token is optional here: an operator token with `pins:create-unpaid` pins without payment (`info.payment_method: operator-token`).'
    ].join('\n\n'),
    security: paidOrOperator(),
    parameters: [ref('parameters', 'DurationMonths'), ref('parameters', 'PinSize')],
    requestBody: jsonBody('The spec\'s Pin object.', schema('Pin'), JSON_LIMIT),
    responses: {
      ...pinWriteErrors(),
      202: response(
        'Accepted (PinStatus, `status: queued`). A paid first request carries `PAYMENT-RESPONSE` and a wallet token for the payer; an honest retry with the same payment answers the same pin without them.',
        schema('PinStatus'),
        { Location: ref('headers', 'Location'), 'PAYMENT-RESPONSE': ref('headers', 'PaymentResponse'), ...tokenHeaders() }
      ),
      401: unauthorized('An Authorization header was sent but its token is invalid.'),
      402: paymentRequired('No payment, or it is malformed, does not match the quote, was refused (`INSUFFICIENT_FUNDS` when that is the reason), could not be settled, or was already used for another request; nothing was pinned.')
    }
  })
}

function replacePinOp (): Obj {
  return operation('post', {
    id: 'replacePinByRequestId',
    tag: 'pins',
    summary: 'Replace a pin object (paid)',
    description: 'A new pin with a new requestid, priced and paid like `POST /pins` (or free with an operator token); the old requestid answers 404 from then on. The old pin\'s blocks stay referenced until the replacement is pinned or fails. No new wallet token is issued (the owner already has one).',
    security: ownerPaid(),
    parameters: [ref('parameters', 'DurationMonths'), ref('parameters', 'PinSize')],
    requestBody: jsonBody('The spec\'s Pin object for the replacement.', schema('Pin'), JSON_LIMIT),
    responses: {
      ...pinWriteErrors(),
      202: response('Accepted: the replacement (PinStatus, new requestid).', schema('PinStatus'), {
        Location: ref('headers', 'Location'),
        'PAYMENT-RESPONSE': ref('headers', 'PaymentResponse')
      }),
      401: unauthorized('No or an invalid bearer token (the owner\'s token is required to replace).'),
      402: paymentRequired('No payment, or it is malformed, does not match the quote, was refused, could not be settled, or was already used for another request; nothing changed.'),
      404: failure('No live (or failed) pin with this requestid for this owner, or it was removed before an operator-token replacement was recorded.'),
      409: failure('The pin was replaced or removed while this replacement was being verified (nothing was charged: replace the current pin), or removed by its owner while its paid replacement was being settled (the details name the payment and transaction for the operator).')
    }
  })
}

function renewPinOp (o: OpenApiInput): Obj {
  return operation('post', {
    id: 'renewPinByRequestId',
    tag: 'pins',
    summary: 'Extend a pin (paid)',
    description: `Adds \`X-Pin-Duration-Months\` months to \`max(pinned_until, now)\`, priced like a new pin on the bytes its creation was priced on: an upload's file bytes (\`size\`), a pin by CID's \`max_bytes\` (never the deduplicated \`dag_size\`). A pin can be paid at most ${o.maxMonths} months ahead of now. An expired pin can be renewed during the grace period. Operator tokens with \`pins:create-unpaid\` renew without payment. No request body.`,
    security: ownerPaid(),
    parameters: [ref('parameters', 'DurationMonths')],
    responses: {
      200: response('Renewed (PinStatus; `info.pinned_until` is the new end, `info.months` counts all months bought). A paid first request carries `PAYMENT-RESPONSE`.', schema('PinStatus'), {
        'PAYMENT-RESPONSE': ref('headers', 'PaymentResponse')
      }),
      400: failure(`X-Pin-Duration-Months is malformed or outside 1–${o.maxMonths}, the new end would be more than ${o.maxMonths} months ahead (the details say how far it can go), or the price would exceed the service's maximum price.`),
      401: unauthorized('No or an invalid bearer token.'),
      402: paymentRequired('No payment, or it is malformed, does not match the quote (the body adds `pinned_until_now` and `pinned_until_after`), was refused, could not be settled, or was already used for another request; the pin was not renewed.'),
      404: failure('No pin with this requestid for this owner (or it was removed meanwhile).'),
      409: failure('A failed pin cannot be renewed; create a new pin or replace this one.'),
      451: legalReasons('The pin\'s CID is denied by this service, so it is not served and not renewed (before any payment; the owner may still delete it, or replace it with other content).'),
      503: writesUnavailable()
    }
  })
}
