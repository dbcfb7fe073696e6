/**
 * The OpenAPI 3.1 description of the HTTP API, served at GET /openapi.json.
 * A plain object built once at start from the settings that shape it (public
 * URL, payment network and asset, limits). The /pins schemas and parameters
 * are those of the IPFS Pinning Service API v1.0.0, written as JSON Schema
 * 2020-12; the rest describes what the routes in src/http/routes really
 * answer: the x402 flow, uploads, Sign-In with Ethereum, the gateway,
 * discovery and health. test/unit/http/openapi.test.ts fails when a
 * registered route has no path item here.
 */

import { z } from 'zod/v4'
import { Status, TextMatchingStrategy } from '../service/pin-query.js'
import { Origins, Pin, PinMeta } from '../service/pin-request.js'
import { Delegates, PinResults, PinStatusSchema, StatusInfo } from '../service/pin-status.js'
import { REASONS } from './error-catalog.js'

type Obj = Record<string, unknown>

export interface OpenApiInput {
  publicUrl: string
  version: string
  network: string
  asset: string
  maxMonths: number
  uploadMaxBytes: number
}

type Method = 'get' | 'head' | 'post' | 'delete'

const ADDRESS = '^0x[0-9a-fA-F]{40}$'
const LOWER_ADDRESS = '^0x[0-9a-f]{40}$'
const DIGITS = '^[0-9]+$'
const USDC = '^[0-9]+\\.[0-9]{6}$'
const JSON_LIMIT = 64 * 1024

/** every reason an error body can carry: the error catalog's */
const REASON_LIST = Object.keys(REASONS)

export function openApiDocument (o: OpenApiInput): Obj {
  return {
    openapi: '3.1.0',
    info: {
      title: 'pind',
      version: o.version,
      summary: 'Paid IPFS pinning: pin a CID or upload a file, pay per request in USDC over x402 v2, read content back from the gateway.',
      description: description(o),
      license: { name: 'MIT', identifier: 'MIT' }
    },
    servers: [{ url: o.publicUrl }],
    tags: [
      { name: 'pins', description: 'The IPFS Pinning Service API v1.0.0, paid with x402; owner endpoints take the wallet token.' },
      { name: 'upload', description: 'Upload a file and pin it, paid with x402.' },
      { name: 'auth', description: 'Sign-In with Ethereum (EIP-4361): a new wallet token without paying.' },
      { name: 'gateway', description: 'Path and trustless gateway for the content this node serves; free.' },
      { name: 'service', description: 'Discovery and liveness.' }
    ],
    paths: {
      '/pins': { get: listPins(), post: createPin() },
      '/pins/{requestid}': {
        parameters: [ref('parameters', 'requestid')],
        get: getPin(),
        post: replacePin(),
        delete: deletePin()
      },
      '/pins/{requestid}/renew': { parameters: [ref('parameters', 'requestid')], post: renewPin(o) },
      '/upload': { post: uploadFile(o) },
      '/auth/challenge': { post: siweChallenge() },
      '/auth/token': { post: siweToken() },
      '/ipfs/{cid}': gatewayPathItem(false),
      '/ipfs/{cid}/{path}': gatewayPathItem(true),
      '/health': { get: health() },
      '/ready': { get: ready() },
      '/.well-known/agent.json': { get: agentCard('getAgentCard', '/.well-known/agent-card.json') },
      '/.well-known/agent-card.json': { get: agentCard('getAgentCardA2A', '/.well-known/agent.json') },
      '/.well-known/jwks.json': { get: jwks() },
      '/openapi.json': { get: openApi() }
    },
    components: {
      schemas: schemas(o),
      parameters: parameters(o),
      headers: headers(),
      responses: Object.fromEntries(COMMON.map(c => [c.name, commonResponse(c, true)])),
      securitySchemes: securitySchemes(o)
    }
  }
}

function description (o: OpenApiInput): string {
  return [
    'pind pins content on an embedded IPFS node and serves it back over HTTP.',
    '',
    `**Payments.** Writes (\`POST /upload\`, \`POST /pins\`, replacing and renewing a pin) are paid per request with **x402 v2** (scheme \`exact\`: an EIP-3009 \`transferWithAuthorization\` of USDC \`${o.asset}\`) on **${o.network}**. ` +
      'The payer needs no account, no API key and no gas. A write without payment answers 402 with the price in the `PAYMENT-REQUIRED` header and a readable JSON body; the client signs and retries with `PAYMENT-SIGNATURE` (see the `x402` security scheme). ' +
      'The payment is verified before the work and settled after it; the success response carries `PAYMENT-RESPONSE` and a wallet token in `x-wallet-auth-token`.',
    '',
    `**Duration.** \`X-Pin-Duration-Months\` (1–${o.maxMonths}, default 1) on paid writes.`,
    '',
    '**Owner endpoints** (`GET /pins`, `GET`/`DELETE /pins/{requestid}`, replace, renew) take `Authorization: Bearer <wallet token>` (the `bearer` scheme). Another owner\'s requestid answers 404, never 403.',
    '',
    `**Errors** always have the Pinning Service API shape \`{"error":{"reason","details"}}\` (the \`Failure\` schema). Reasons: ${REASON_LIST.map(r => `\`${r}\``).join(', ')}.`,
    '',
    '**Everywhere:** every GET also answers HEAD (same status and headers, no body). A path that exists answers other methods with 405 and `Allow`; an unknown path answers 404. ' +
      'A request head that is malformed answers 400, one that does not arrive within 20 s answers 408, one over 16 KiB or 100 fields answers 431. ' +
      'CORS preflights (OPTIONS with Access-Control-Request-Method) from allowed origins answer 204.'
  ].join('\n')
}

// ---- helpers ---------------------------------------------------------------

function ref (kind: 'schemas' | 'parameters' | 'headers' | 'responses', name: string): Obj {
  return { $ref: `#/components/${kind}/${name}` }
}

const schema = (name: string): Obj => ref('schemas', name)

function json (s: Obj): Obj {
  return { 'application/json': { schema: s } }
}

/** a response; `body` is the JSON schema of its body (none when omitted) */
function response (description: string, body?: Obj, hdrs?: Obj): Obj {
  return { description, ...(hdrs != null ? { headers: hdrs } : {}), ...(body != null ? { content: json(body) } : {}) }
}

/** an error response: the spec's Failure body */
function failure (description: string, hdrs?: Obj): Obj {
  return response(description, schema('Failure'), hdrs)
}

function unauthorized (description: string): Obj {
  return failure(description, { 'WWW-Authenticate': ref('headers', 'WwwAuthenticate') })
}

function paymentRequired (description: string): Obj {
  return response(
    `${description} With a challenge the body carries the readable terms (\`PaymentRequired\`) and \`PAYMENT-REQUIRED\` the x402 challenge; a payment already used for another request is refused with a plain \`Failure\` and no challenge.`,
    { anyOf: [schema('PaymentRequired'), schema('Failure')] },
    { 'PAYMENT-REQUIRED': ref('headers', 'PaymentRequired') }
  )
}

/** 503 of a paid write (payment backend), which also covers shutting down */
function writesUnavailable (extra = ''): Obj {
  return failure(
    `Payments are not configured on this server (no pay-to address or facilitator: writes disabled, \`Retry-After: 3600\`), the payment backend is not reachable yet or could not verify the payment (\`SERVICE_UNAVAILABLE\`)${extra}, or the server is shutting down (\`SHUTTING_DOWN\`). Retry after \`Retry-After\` seconds.`,
    { 'Retry-After': ref('headers', 'RetryAfter') }
  )
}

function jsonBody (description: string, s: Obj, limit: number): Obj {
  return {
    required: true,
    description: `${description} \`Content-Type: application/json\`, at most ${limit} bytes.`,
    content: json(s)
  }
}

/** 400/413/415 that reading a JSON body can produce, merged with the operation's own 400 text */
function jsonBodyErrors (limit: number, bad: string): Obj {
  return {
    400: failure(`The body is not valid JSON, or ${bad}`),
    413: failure(`The JSON body is larger than ${limit} bytes.`),
    415: failure('The body is not sent as `application/json`.')
  }
}

interface Common { status: string, name: string, description: string, retryAfter: boolean, methods: Method[] }

/** responses any operation can produce, by method; in components.responses (HEAD copies have no body) */
const COMMON: Common[] = [
  {
    status: '429',
    name: 'TooManyRequests',
    description: 'Over the per-address rate limit the operator set (reads: GET, HEAD and OPTIONS; unpaid writes: every other request that does not turn out paid or authorized, counted by what it turns out to be, not by the headers it carries: a 402, an invalid payment or token, a sign-in challenge). Retry after `Retry-After` seconds.',
    retryAfter: true,
    methods: ['get', 'head', 'post', 'delete']
  },
  {
    status: '431',
    name: 'HeadersTooLarge',
    description: 'The request headers are larger than 16 KiB or more than 100 fields; the connection is closed.',
    retryAfter: false,
    methods: ['get', 'head', 'post', 'delete']
  },
  {
    status: '414',
    name: 'UriTooLong',
    description: 'The request target (path and query) is longer than 8192 characters (`URI_TOO_LONG`).',
    retryAfter: false,
    methods: ['get', 'head', 'post', 'delete']
  },
  {
    status: '500',
    name: 'InternalServerError',
    description: 'The server failed to handle the request (logged; the details never include internals).',
    retryAfter: false,
    methods: ['get', 'head', 'post', 'delete']
  },
  {
    status: '503',
    name: 'ShuttingDown',
    description: 'The server is starting (`SERVICE_UNAVAILABLE`: it listens before every route is added) or shutting down (`SHUTTING_DOWN`); retry after `Retry-After` seconds.',
    retryAfter: true,
    methods: ['get', 'head', 'post', 'delete']
  }
]

function commonResponse (c: Common, withBody: boolean): Obj {
  const hdrs = c.retryAfter ? { 'Retry-After': ref('headers', 'RetryAfter') } : undefined
  return response(c.description, withBody ? schema('Failure') : undefined, hdrs)
}

interface OperationSpec {
  id: string
  tag: string
  summary: string
  description?: string
  security?: Obj[]
  parameters?: Obj[]
  requestBody?: Obj
  /** the operation's own responses; they win over the common ones of the same status */
  responses: Obj
}

function operation (method: Method, s: OperationSpec): Obj {
  const common: Obj = {}
  for (const c of COMMON) {
    if (c.methods.includes(method)) common[c.status] = method === 'head' ? commonResponse(c, false) : ref('responses', c.name)
  }
  return {
    operationId: s.id,
    tags: [s.tag],
    summary: s.summary,
    ...(s.description != null ? { description: s.description } : {}),
    ...(s.security != null ? { security: s.security } : {}),
    ...(s.parameters != null ? { parameters: s.parameters } : {}),
    ...(s.requestBody != null ? { requestBody: s.requestBody } : {}),
    responses: { ...common, ...s.responses }
  }
}

// security requirements (built per call: the document shares no objects between calls)
const bearerOnly = (): Obj[] => [{ bearer: [] }]
/** paid, or an operator token with pins:create-unpaid */
const paidOrOperator = (): Obj[] => [{ x402: [] }, { bearer: [] }]
/** the owner's token, plus a payment unless it is an operator token with pins:create-unpaid */
const ownerPaid = (): Obj[] => [{ bearer: [], x402: [] }, { bearer: [] }]

const tokenHeaders = (): Obj => ({
  'x-wallet-auth-token': ref('headers', 'WalletAuthToken'),
  'x-wallet-auth-token-expires': ref('headers', 'WalletAuthTokenExpires')
})

// ---- /pins -------------------------------------------------------------------

function listPins (): Obj {
  return operation('get', {
    id: 'getPins',
    tag: 'pins',
    summary: 'List your pin objects',
    description: 'The token owner\'s pins matching every filter, newest first. Without `status`, only `pinned` pins are listed. `count` counts every pin matching all filters (`before`/`after` included), so paging with `before=<created of the oldest>` ends when `count` equals the page length.',
    security: bearerOnly(),
    parameters: ['cid', 'name', 'match', 'status', 'before', 'after', 'limit', 'meta'].map(p => ref('parameters', p)),
    responses: {
      200: response('The matching pins (PinResults).', schema('PinResults')),
      400: failure('A filter is malformed or given more than once (e.g. more than 10 CIDs, an unknown status, limit outside 1–1000, before/after not RFC 3339, meta not a JSON object of strings).'),
      401: unauthorized('No, a malformed, expired, revoked or unknown-key bearer token.')
    }
  })
}

function getPin (): Obj {
  return operation('get', {
    id: 'getPinByRequestId',
    tag: 'pins',
    summary: 'Get a pin object and its status',
    security: bearerOnly(),
    responses: {
      200: response('The pin (PinStatus); `info.status_details` tells fetch progress or the reason for failure.', schema('PinStatus')),
      401: unauthorized('No or an invalid bearer token.'),
      404: failure('No live (or failed) pin with this requestid for this owner: unknown, another owner\'s, removed, replaced, or expired past the grace period.')
    }
  })
}

function deletePin (): Obj {
  return operation('delete', {
    id: 'deletePinByRequestId',
    tag: 'pins',
    summary: 'Remove a pin object',
    description: 'Unpins at once: the content stops being served and a fetch in progress is cancelled. Blocks are released for the next `pind gc`. Not refunded.',
    security: bearerOnly(),
    responses: {
      202: { description: 'Removed (no body).' },
      401: unauthorized('No or an invalid bearer token.'),
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

/** 451 Unavailable For Legal Reasons (RFC 7725), with `Link: <service>; rel="blocked-by"` */
function legalReasons (description: string): Obj {
  return failure(description, { Link: ref('headers', 'BlockedBy') })
}

function createPin (): Obj {
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

function replacePin (): Obj {
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
      409: failure('The pin was removed while its paid replacement was being settled; the details name the payment and transaction for the operator.')
    }
  })
}

function renewPin (o: OpenApiInput): Obj {
  return operation('post', {
    id: 'renewPinByRequestId',
    tag: 'pins',
    summary: 'Extend a pin (paid)',
    description: `Adds \`X-Pin-Duration-Months\` months to \`max(pinned_until, now)\`, priced like a new pin on the pin's \`dag_size\` (or, while it is being fetched, its \`max_bytes\`). A pin can be paid at most ${o.maxMonths} months ahead of now. An expired pin can be renewed during the grace period. Operator tokens with \`pins:create-unpaid\` renew without payment. No request body.`,
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

// ---- /upload -------------------------------------------------------------------

function uploadFile (o: OpenApiInput): Obj {
  return operation('post', {
    id: 'upload',
    tag: 'upload',
    summary: 'Upload a file and pin it (paid)',
    description: [
      `\`multipart/form-data\` with exactly one part, a file named \`file\`, of at most ${o.uploadMaxBytes} bytes. Imported as UnixFS: CIDv1, raw leaves, 1 MiB chunks, balanced DAG.`,
      'The 402 challenge is quoted on `X-Upload-Size` (the file size) when sent, else on `Content-Length` (framing included); neither → 411. The paid request may carry at most that many file bytes: the cap is enforced on the bytes streamed (413, nothing kept).',
      'Nothing is stored until the payment is settled. The same payment presented again for the same content answers 200 with the original pin (`replayed: true`) and no new token. A payment already used is known from the request head: it takes no upload slot, its body is hashed (never stored), may be at most the original file plus multipart framing, and must arrive within 10 s plus 1 s per 256 KiB of the original; a head that cannot be the same upload is refused at once and its connection closed without reading the body.'
    ].join('\n\n'),
    security: [{ x402: [] }],
    parameters: [ref('parameters', 'DurationMonths'), ref('parameters', 'UploadSize')],
    requestBody: {
      required: true,
      content: {
        'multipart/form-data': {
          schema: schema('UploadRequest'),
          encoding: { file: { contentType: '*/*' } }
        }
      }
    },
    responses: {
      200: response('A retry with a payment already settled for this very content: the original pin, `replayed: true`, no token (get one with Sign-In with Ethereum).', schema('UploadResult')),
      201: response('Pinned (`status: pinned`).', schema('UploadResult'), {
        Location: ref('headers', 'Location'),
        'PAYMENT-RESPONSE': ref('headers', 'PaymentResponse'),
        ...tokenHeaders()
      }),
      400: failure('The body is not multipart/form-data with one part named `file` (or is malformed or truncated, or the client aborted), X-Pin-Duration-Months, X-Upload-Size or Content-Length is malformed, or the price would exceed the service\'s maximum price.'),
      402: paymentRequired('No payment, or it is malformed, does not match the quote, was refused (`INSUFFICIENT_FUNDS` when that is the reason), could not be settled, or was already used for other content; nothing was pinned or kept.'),
      408: failure('A request re-sending a payment already used did not send its body in time (`REQUEST_TIMEOUT`); the connection is closed.'),
      411: failure('Neither X-Upload-Size nor Content-Length was sent, so the upload cannot be priced.'),
      451: legalReasons('The file (its root, or a block of it) is denied by this service. Its CID is known only once it is read, so this answers the paid request, after the payment was verified and before it is settled: the payer is not charged and nothing is kept.'),
      413: failure(`The declared size is over the limit (${o.uploadMaxBytes} bytes of file), or the file streamed (or the whole body, multipart framing included, past 64 KiB over it) is larger than the limit or than the size declared and paid for; nothing was kept.`),
      503: writesUnavailable(', as many paid uploads as the operator allows are already streaming (`SERVICE_UNAVAILABLE`, `Retry-After: 5`; the payment was not used and can be sent again), or as many re-sent used payments as are checked at once')
    }
  })
}

// ---- /auth -------------------------------------------------------------------

function siweChallenge (): Obj {
  return operation('post', {
    id: 'siweChallenge',
    tag: 'auth',
    summary: 'Ask for a Sign-In with Ethereum message',
    description: 'Free. The message carries a single-use nonce valid 10 minutes, bound to this service\'s domain and URI and to the payment chain. Sign it with the wallet (`personal_sign`) and send it to `POST /auth/token`.',
    requestBody: jsonBody('The wallet address.', schema('SiweChallengeRequest'), 4096),
    responses: {
      ...jsonBodyErrors(4096, '`address` is not a 0x address.'),
      200: response('The message to sign.', schema('SiweChallenge')),
      429: failure('This client address (IPv6: its /64) already holds 16 open challenges (`TOO_MANY_REQUESTS`): sign one of them, or retry after `Retry-After` seconds; or over the rate limit for unpaid writes.', { 'Retry-After': ref('headers', 'RetryAfter') })
    }
  })
}

function siweToken (): Obj {
  return operation('post', {
    id: 'siweToken',
    tag: 'auth',
    summary: 'Exchange a signed message for a wallet token',
    description: 'EOA signatures only (no ERC-1271). The nonce is consumed whatever the outcome.',
    requestBody: jsonBody('The challenge message and its signature.', schema('SiweTokenRequest'), 16_384),
    responses: {
      ...jsonBodyErrors(16_384, 'the message is not a Sign-In with Ethereum message.'),
      200: response('A new wallet token (also in `x-wallet-auth-token`).', schema('SiweToken'), tokenHeaders()),
      401: unauthorized('`message` or `signature` missing or malformed; an unknown, used or expired nonce; another address, chain, URI or domain than the challenge; or a signature that does not match the address.')
    }
  })
}

// ---- /ipfs -------------------------------------------------------------------

function gatewayPathItem (withPath: boolean): Obj {
  return {
    parameters: [ref('parameters', 'GatewayCid'), ...(withPath ? [ref('parameters', 'GatewayPath')] : [])],
    get: gatewayOperation('get', withPath),
    head: gatewayOperation('head', withPath)
  }
}

/** a media type whose body is bytes (no schema) */
const binary = (): Obj => ({})

function gatewayOperation (method: 'get' | 'head', withPath: boolean): Obj {
  const head = method === 'head'
  const body = (types: Obj): Obj => head ? {} : { content: types }
  const hdrs = (names: string[]): Obj => Object.fromEntries(names.map(n => [n, ref('headers', n.replaceAll('-', ''))]))
  const err = (description: string, extra: Obj = {}): Obj => ({ description, headers: { 'X-Content-Type-Options': ref('headers', 'XContentTypeOptions'), ...extra }, ...body(json(schema('Failure'))) })
  return operation(method, {
    id: `${head ? 'head' : 'get'}Content${withPath ? 'Path' : ''}`,
    tag: 'gateway',
    summary: `${head ? 'Headers of' : 'Retrieve'} ${withPath ? 'content under a path in a DAG' : 'content by CID'}`,
    description: [
      'Free, no credentials. Serves the content of live pins (or, as the operator chose, anything held locally, or fetched from peers).',
      'The response format comes from `?format=` or else from `Accept` (the first of highest q naming a gateway type decides; `format` wins):',
      '- deserialized (default): a UnixFS file (its detected type: the name, or `filename`, names it unless that would make active content look passive; active types such as HTML or SVG as attachment with `Content-Security-Policy: sandbox` unless the operator allows them), a directory (its `index.html`, else an HTML listing; without a trailing `/` a 301 to it), raw and identity blocks as bytes (identity CIDs of at most 128 bytes; larger ones are a 400), dag-json/dag-cbor/json/cbor blocks as their bytes with their media type;',
      '- `raw` / `application/vnd.ipld.raw`: the block of the CID alone (no path);',
      '- `car` / `application/vnd.ipld.car`: a CARv1 of the path\'s blocks and, per `dag-scope`, the terminal block, the entity or the whole DAG (`entity-bytes` for a byte range of a file); `version=1`, `order=dfs|unk`, `dups=y|n`;',
      '- `dag-json`, `dag-cbor`, `json`, `cbor`: a block of that very codec, unconverted.',
      'Not supported: TAR (406), IPNS records (400: /ipfs only). Files and blocks support one byte range (`Range`, `If-Range`; several ranges get the whole entity with 200); every success has an `ETag` and honours `If-None-Match` (304). Content is immutable: `Cache-Control: public, max-age=29030400, immutable`.'
    ].join('\n'),
    parameters: Object.keys(gatewayParameters()).map(k => ref('parameters', k)),
    responses: {
      200: {
        description: 'The content in the selected format.',
        headers: hdrs(['ETag', 'Cache-Control', 'X-Ipfs-Path', 'X-Ipfs-Roots', 'Content-Location', 'Content-Disposition', 'Accept-Ranges']),
        ...body({
          'application/octet-stream': binary(),
          'text/html': { schema: { type: 'string', description: 'a directory listing (or a UnixFS HTML file)' } },
          'application/vnd.ipld.raw': binary(),
          'application/vnd.ipld.car': binary(),
          'application/vnd.ipld.dag-json': binary(),
          'application/vnd.ipld.dag-cbor': binary(),
          'application/json': binary(),
          'application/cbor': binary(),
          '*/*': binary()
        })
      },
      206: {
        description: 'One byte range of a file or block (`Range`).',
        headers: hdrs(['Content-Range', 'ETag', 'Cache-Control', 'X-Ipfs-Path', 'X-Ipfs-Roots', 'Accept-Ranges']),
        ...body({ '*/*': binary() })
      },
      301: { description: 'A directory asked for without a trailing `/`: `Location` is the same URL with it.', headers: { Location: ref('headers', 'Location') } },
      304: { description: '`If-None-Match` matches the ETag of the selected representation.', headers: hdrs(['ETag', 'Cache-Control']) },
      400: err('Not a valid CID or path segment (`.`, `..`, bad percent-encoding), an unknown `format`, a bad `dag-scope` or `entity-bytes` (or entity-bytes with another dag-scope, or entirely outside the file), `format=raw` with a path, an IPNS record asked for, a codec that cannot be deserialized, or a service-worker registration.'),
      404: err('The CID is not served by this gateway (no live pin, per the operator\'s policy), not held by this node, or a block under the path is missing.'),
      410: err('The CID, the path, or a block under it is denied by this service (the operator\'s takedowns or denylists, `GONE`; the details say why). A response already streaming when it reaches a denied block is cut.'),
      406: err('The format cannot be produced: TAR, an unsupported CAR variant (version, order, dups), a typed format for a block of another codec, a symlink or UnixFS metadata asked for deserialized, content that cannot be deserialized, or `dag-scope=all` over a codec whose links cannot be walked.'),
      412: err('`Cache-Control: only-if-cached` and the root block is not held by this node.'),
      416: err('The `Range` starts past the end of the file or block.', { 'Content-Range': ref('headers', 'ContentRange') })
    }
  })
}

// ---- service -------------------------------------------------------------------

function health (): Obj {
  return operation('get', {
    id: 'getHealth',
    tag: 'service',
    summary: 'Liveness with real checks',
    description: 'The ledger answers a read, the block store takes a write (a file in blocks/, or an object in the S3 bucket; with S3 the local staging folder too), libp2p is started. A 503 names the failing check.',
    responses: {
      200: response('Every check passed.', schema('Health')),
      503: response('A check failed (`status: failing`; the failing check carries `error`, a short public message: the error itself is logged), or the server is starting or shutting down (a Failure).', { anyOf: [schema('Health'), schema('Failure')] })
    }
  })
}

function ready (): Obj {
  return operation('get', {
    id: 'getReady',
    tag: 'service',
    summary: 'Readiness for load balancers: alive and able to take paid writes',
    description: 'The health checks plus `payments`, whose `state` is `ready`, `low-balance` (works; the settler needs gas soon), `starting`, `no-pay-to`, `no-facilitator`, `unreachable` (the RPC or facilitator does not answer), `unfunded` (the settler cannot pay gas) or `asset-misconfigured`. A node whose payments cannot work is alive (`/health` 200) but not ready (503).',
    responses: {
      200: response('Every check passed, payments included.', schema('Ready')),
      503: response('A check failed (`status: not-ready`; the failing check carries `error`), or the server is shutting down (a Failure).', { anyOf: [schema('Ready'), schema('Failure')] })
    }
  })
}

function agentCard (id: string, alias: string): Obj {
  return operation('get', {
    id,
    tag: 'service',
    summary: 'A2A AgentCard',
    description: `The A2A AgentCard (protocol 0.3.0): skills, URL, and the x402 extension (network, asset, pricing) in \`capabilities.extensions\`. Same document as \`${alias}\`.`,
    responses: { 200: response('The agent card.', schema('AgentCard'), { 'Cache-Control': ref('headers', 'CacheControlPublic') }) }
  })
}

function jwks (): Obj {
  return operation('get', {
    id: 'getJwks',
    tag: 'service',
    summary: 'Token signing keys',
    description: 'The public keys wallet and operator tokens are signed with (active and not yet retired), to verify a token offline.',
    responses: { 200: response('A JWK Set.', schema('Jwks'), { 'Cache-Control': ref('headers', 'CacheControlPublic') }) }
  })
}

function openApi (): Obj {
  return operation('get', {
    id: 'getOpenApi',
    tag: 'service',
    summary: 'This document',
    responses: {
      200: response('The OpenAPI 3.1 description of this API.', { type: 'object', required: ['openapi', 'info', 'paths'] }, { 'Cache-Control': ref('headers', 'CacheControlPublic') })
    }
  })
}

// ---- components --------------------------------------------------------------

/** the request shapes defined once as zod schemas (validation uses the same), by component name */
const SCHEMAS = z.registry<{ id: string }>()
SCHEMAS.add(Pin, { id: 'Pin' }).add(Origins, { id: 'Origins' }).add(PinMeta, { id: 'PinMeta' })
  .add(Status, { id: 'Status' }).add(TextMatchingStrategy, { id: 'TextMatchingStrategy' })
  .add(PinStatusSchema, { id: 'PinStatus' }).add(PinResults, { id: 'PinResults' }).add(Delegates, { id: 'Delegates' }).add(StatusInfo, { id: 'StatusInfo' })

/** JSON Schema 2020-12 of the zod-defined shapes, as components.schemas entries (built fresh each time) */
function fromSchemas (o: OpenApiInput): Obj {
  const { schemas } = z.toJSONSchema(SCHEMAS, { io: 'input', uri: (id) => `#/components/schemas/${id}` })
  const out: Obj = {}
  for (const [name, s] of Object.entries(schemas)) {
    const { $schema: _s, $id: _i, ...rest } = s as Obj
    out[name] = rest
  }
  // the one example that depends on the settings
  ;(((out.StatusInfo as Obj).properties as Obj).network as Obj).examples = [o.network]
  return out
}

function schemas (o: OpenApiInput): Obj {
  const str = (description: string, extra: Obj = {}): Obj => ({ type: 'string', description, ...extra })
  const int = (description: string, extra: Obj = {}): Obj => ({ type: 'integer', description, ...extra })
  const object = (required: string[], properties: Obj, extra: Obj = {}): Obj => ({ type: 'object', required, properties, ...extra })
  const requirements = schema('X402PaymentRequirements')
  return {
    // the Pinning Service API v1.0.0
    // the request shapes described once, as zod schemas: derived here
    ...fromSchemas(o),
    Failure: object(['error'], {
      error: object(['reason', 'details'], {
        reason: str('Mandatory string identifying the type of error', { examples: [...REASON_LIST] }),
        details: str('Longer description of the error, for humans')
      })
    }, { description: 'Response for a failed request (every error of this API)' }),

    // x402 v2
    PaymentRequired: {
      description: 'The body of a 402 challenge: the Failure plus the terms in readable form (the machine-readable terms are the PAYMENT-REQUIRED header)',
      allOf: [
        schema('Failure'),
        object(['x402Version', 'price', 'size', 'months', 'formula', 'howToPay'], {
          x402Version: { const: 2 },
          price: object(['amount', 'usdc', 'asset', 'network', 'payTo'], {
            amount: str('the exact price in atomic units (10^-6 USDC)', { pattern: DIGITS }),
            usdc: str('the price in USDC', { pattern: USDC }),
            asset: str('the EIP-3009 token', { pattern: ADDRESS, examples: [o.asset] }),
            network: str('CAIP-2 network', { examples: [o.network] }),
            payTo: str('the address paid', { pattern: ADDRESS })
          }),
          size: str('the bytes the price is computed on', { pattern: DIGITS }),
          months: int('the months quoted', { minimum: 1, maximum: o.maxMonths }),
          formula: str('the price formula'),
          howToPay: str('how to pay, in words'),
          sizeSource: str('where the size came from (X-Upload-Size, Content-Length, the root block, X-Pin-Size, or none: minimum price)'),
          maxBytes: str('pins by CID: the most DAG bytes the pin may hold at this price', { pattern: DIGITS }),
          pinned_until_now: str('renewals: the current end', { format: 'date-time' }),
          pinned_until_after: str('renewals: the end once paid', { format: 'date-time' })
        })
      ]
    },
    X402PaymentRequirements: object(['scheme', 'network', 'asset', 'amount', 'payTo', 'maxTimeoutSeconds', 'extra'], {
      scheme: { const: 'exact' },
      network: { const: o.network },
      asset: str('the EIP-3009 token', { pattern: ADDRESS, examples: [o.asset] }),
      amount: str('exact amount in atomic units', { pattern: DIGITS }),
      payTo: str('receiving address', { pattern: ADDRESS }),
      maxTimeoutSeconds: int('how long a signed payment stays valid', { minimum: 1 }),
      extra: object(['name', 'version'], {
        name: str('EIP-712 domain name of the asset', { examples: ['USD Coin'] }),
        version: str('EIP-712 domain version of the asset', { examples: ['2'] })
      })
    }, { description: 'One way to pay (x402 v2 PaymentRequirements)' }),
    X402PaymentRequired: object(['x402Version', 'resource', 'accepts'], {
      x402Version: { const: 2 },
      error: str('why payment is required'),
      resource: object(['url'], { url: str('the resource paid for', { format: 'uri' }), description: { type: 'string' }, mimeType: { type: 'string' } }),
      accepts: { type: 'array', items: requirements, minItems: 1 },
      extensions: { type: 'object' }
    }, { description: 'The decoded PAYMENT-REQUIRED header (x402 v2 PaymentRequired)' }),
    X402PaymentPayload: object(['x402Version', 'accepted', 'payload'], {
      x402Version: { const: 2 },
      resource: { type: 'object' },
      accepted: requirements,
      payload: object(['signature', 'authorization'], {
        signature: str('EIP-712 signature of the authorization', { pattern: '^0x[0-9a-fA-F]+$' }),
        authorization: object(['from', 'to', 'value', 'validAfter', 'validBefore', 'nonce'], {
          from: str('the payer', { pattern: ADDRESS }),
          to: str('payTo', { pattern: ADDRESS }),
          value: str('amount, atomic units', { pattern: DIGITS }),
          validAfter: str('unix seconds', { pattern: DIGITS }),
          validBefore: str('unix seconds', { pattern: DIGITS }),
          nonce: str('32-byte nonce; payer:nonce identifies the payment', { pattern: '^0x[0-9a-fA-F]{64}$' })
        })
      }, { description: 'an EIP-3009 transferWithAuthorization' }),
      extensions: { type: 'object' }
    }, { description: 'The decoded PAYMENT-SIGNATURE header (x402 v2 PaymentPayload, scheme exact)' }),
    X402SettleResponse: object(['success', 'transaction', 'network'], {
      success: { type: 'boolean' },
      transaction: str('the settlement transaction hash'),
      network: str('CAIP-2 network', { examples: [o.network] }),
      payer: str('the payer', { pattern: ADDRESS })
    }, { description: 'The decoded PAYMENT-RESPONSE header (x402 v2 SettleResponse)' }),

    // uploads
    UploadRequest: object(['file'], {
      file: { type: 'string', contentMediaType: 'application/octet-stream', description: `the file, at most ${o.uploadMaxBytes} bytes; its filename is kept as the pin's name` }
    }, { description: 'multipart/form-data with exactly one part, named file', additionalProperties: false }),
    UploadResult: object(['requestid', 'cid', 'size', 'dag_size', 'status', 'created', 'pinned_until', 'months', 'owner', 'price', 'gateway_url'], {
      requestid: str('the pin\'s requestid (GET /pins/{requestid})', { format: 'uuid' }),
      cid: str('CIDv1 of the file (raw leaves, 1 MiB chunks)', { examples: ['bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'] }),
      name: str('the uploaded filename (sanitized)', { maxLength: 255 }),
      size: int('file bytes', { minimum: 0 }),
      dag_size: int('bytes of all blocks', { minimum: 0 }),
      status: { const: 'pinned' },
      created: str('RFC 3339 with microseconds', { format: 'date-time' }),
      pinned_until: str('paid until', { format: 'date-time' }),
      months: int('months bought', { minimum: 1, maximum: o.maxMonths }),
      owner: str('the payer, lowercase', { pattern: LOWER_ADDRESS }),
      price: object(['amount', 'usdc', 'asset', 'network', 'transaction'], {
        amount: str('atomic units', { pattern: DIGITS }),
        usdc: str('in USDC', { pattern: USDC }),
        asset: str('the token', { pattern: ADDRESS }),
        network: str('CAIP-2 network'),
        transaction: str('the settlement transaction')
      }),
      gateway_url: str('where the content is served', { format: 'uri' }),
      replayed: { type: 'boolean', const: true, description: 'present on a retry with a payment already settled for this content' },
      token_hint: str('on a replay: how to get a new wallet token')
    }, { description: 'The pin an upload created' }),

    // service
    Health: object(['status', 'version', 'uptimeSeconds', 'checks'], {
      status: { type: 'string', enum: ['ok', 'failing'] },
      version: str('pind version'),
      uptimeSeconds: int('seconds since start', { minimum: 0 }),
      checks: {
        type: 'object',
        properties: { ledger: schema('HealthCheck'), blockstore: schema('HealthCheck'), libp2p: schema('HealthCheck') },
        additionalProperties: schema('HealthCheck')
      }
    }),
    HealthCheck: object(['ok'], { ok: { type: 'boolean' }, error: str('why the check failed') }),
    Ready: object(['status', 'checks'], {
      status: { type: 'string', enum: ['ready', 'not-ready'] },
      checks: {
        type: 'object',
        required: ['payments'],
        properties: {
          payments: object(['ok', 'state'], {
            ok: { type: 'boolean' },
            state: { type: 'string', enum: ['ready', 'low-balance', 'starting', 'no-pay-to', 'no-facilitator', 'unreachable', 'unfunded', 'asset-misconfigured'] },
            error: str('why paid writes cannot work now')
          })
        },
        additionalProperties: schema('HealthCheck')
      }
    }),
    AgentCard: object(['protocolVersion', 'name', 'url', 'version', 'capabilities', 'skills'], {
      protocolVersion: { type: 'string', examples: ['0.3.0'] },
      name: { type: 'string' },
      description: { type: 'string' },
      url: { type: 'string', format: 'uri' },
      version: { type: 'string' },
      documentationUrl: { type: 'string', format: 'uri' },
      capabilities: { type: 'object', description: 'extensions holds the x402 extension with network, asset and pricing' },
      securitySchemes: { type: 'object' },
      skills: {
        type: 'array',
        items: object(['id', 'name', 'description'], {
          id: { type: 'string' },
          name: { type: 'string' },
          description: { type: 'string' },
          tags: { type: 'array', items: { type: 'string' } },
          examples: { type: 'array', items: { type: 'string' } },
          inputModes: { type: 'array', items: { type: 'string' } },
          outputModes: { type: 'array', items: { type: 'string' } }
        })
      }
    }, { description: 'A2A AgentCard (loosely described; see the A2A protocol 0.3.0)', additionalProperties: true }),
    Jwks: object(['keys'], {
      keys: {
        type: 'array',
        items: object(['kty', 'crv', 'x', 'kid', 'alg', 'use'], {
          kty: { const: 'OKP' },
          crv: { const: 'Ed25519' },
          x: str('public key, base64url'),
          kid: str('key id (the JWT header kid)'),
          alg: { const: 'EdDSA' },
          use: { const: 'sig' }
        })
      }
    }, { description: 'JWK Set (RFC 7517) of the token signing keys' }),

    // Sign-In with Ethereum
    SiweChallengeRequest: object(['address'], { address: str('the wallet address', { pattern: ADDRESS }) }),
    SiweChallenge: object(['message', 'nonce', 'expires_at'], {
      message: str('the EIP-4361 message to sign with personal_sign'),
      nonce: str('single-use nonce inside the message'),
      expires_at: str('the message expires then (10 minutes)', { format: 'date-time' })
    }),
    SiweTokenRequest: object(['message', 'signature'], {
      message: str('the challenge message, unchanged'),
      signature: str('personal_sign signature of the message', { pattern: '^0x[0-9a-fA-F]+$' })
    }),
    SiweToken: object(['token', 'expires_at', 'owner'], {
      token: str('the wallet token (JWT); use as Authorization: Bearer'),
      expires_at: str('when the token expires', { format: 'date-time' }),
      owner: str('the signed-in address, lowercase', { pattern: LOWER_ADDRESS })
    })
  }
}

function query (name: string, description: string, s: Obj, extra: Obj = {}): Obj {
  return { name, in: 'query', required: false, description, schema: s, ...extra }
}

function header (name: string, description: string, s: Obj): Obj {
  return { name, in: 'header', required: false, description, schema: s }
}

function path (name: string, description: string): Obj {
  return { name, in: 'path', required: true, description, schema: { type: 'string' } }
}

function parameters (o: OpenApiInput): Obj {
  return {
    // GET /pins, as in the Pinning Service API
    cid: query('cid', 'Return pin objects pinning any of these CIDs (1–10, comma-separated; CIDv0 and v1 match alike)',
      { type: 'array', items: { type: 'string' }, uniqueItems: true, minItems: 1, maxItems: 10 },
      { style: 'form', explode: false, example: ['Qm1', 'bafy2'] }),
    name: query('name', 'Return pin objects with this name (by default a case-sensitive, exact match; see match)', { type: 'string', maxLength: 255 }),
    match: query('match', 'Text matching strategy for name: exact (default), iexact, partial, ipartial', schema('TextMatchingStrategy')),
    status: query('status', 'Return pin objects with any of these statuses (comma-separated); default: pinned only',
      { type: 'array', items: schema('Status'), uniqueItems: true, minItems: 1, default: ['pinned'] },
      { style: 'form', explode: false, example: ['queued', 'pinning'] }),
    before: query('before', 'Return pin objects created before this RFC 3339 timestamp (paging: the created of the oldest result)', { type: 'string', format: 'date-time' }),
    after: query('after', 'Return pin objects created after this RFC 3339 timestamp', { type: 'string', format: 'date-time' }),
    limit: query('limit', 'Max records to return', { type: 'integer', minimum: 1, maximum: 1000, default: 10 }),
    meta: {
      name: 'meta',
      in: 'query',
      required: false,
      description: 'Return pin objects whose meta holds all these key/value pairs, as URL-encoded JSON (`meta={"app":"x"}`); the form `meta[app]=x` (what JS clients send) is accepted too',
      content: { 'application/json': { schema: schema('PinMeta') } }
    },
    requestid: path('requestid', 'The pin\'s requestid'),
    // paid writes
    DurationMonths: header('X-Pin-Duration-Months', `How many months to pin (or to add, for a renewal); default 1`, { type: 'integer', minimum: 1, maximum: o.maxMonths, default: 1 }),
    UploadSize: header('X-Upload-Size', `The file's size in bytes: the 402 is quoted on it (else on Content-Length), and the paid upload may carry at most that many file bytes`, { type: 'integer', minimum: 0, maximum: o.uploadMaxBytes }),
    PinSize: header('X-Pin-Size', 'The size of the whole DAG in bytes: the quote uses it when larger than what the root block declares, or when the root cannot be read in time', { type: 'integer', minimum: 0 }),
    // the gateway
    GatewayCid: path('cid', 'The root CID (CIDv0 or CIDv1 in any multibase)'),
    GatewayPath: path('path', 'A path inside the DAG: one or more URL-encoded segments separated by `/` (a trailing `/` names a directory); `.` and `..` are refused'),
    ...gatewayParameters()
  }
}

/** the gateway's query and header parameters (in components.parameters, each by this key) */
function gatewayParameters (): Obj {
  return {
    GatewayFormat: query('format', 'Response format; wins over Accept. `tar` answers 406, `ipns-record` 400', { type: 'string', enum: ['raw', 'car', 'dag-json', 'dag-cbor', 'json', 'cbor'] }),
    GatewayDagScope: query('dag-scope', 'format=car: the terminal block only, the entity (a file, a directory, or the block), or the whole DAG', { type: 'string', enum: ['block', 'entity', 'all'], default: 'all' }),
    GatewayEntityBytes: query('entity-bytes', 'format=car: a byte range `from:to` of a UnixFS file (negative counts from the end, `to` may be `*`); implies dag-scope=entity', { type: 'string', pattern: '^-?[0-9]{1,19}:(-?[0-9]{1,19}|\\*)$' }),
    GatewayCarVersion: query('car-version', 'format=car: CAR version (also the Accept parameter `version`)', { type: 'string', enum: ['1'] }),
    GatewayCarOrder: query('car-order', 'format=car: block order; dfs is always produced, which satisfies unk (also the Accept parameter `order`)', { type: 'string', enum: ['dfs', 'unk'] }),
    GatewayCarDups: query('car-dups', 'format=car: repeat duplicate blocks (also the Accept parameter `dups`)', { type: 'string', enum: ['y', 'n'], default: 'n' }),
    GatewayFilename: query('filename', 'The file name in Content-Disposition', { type: 'string' }),
    GatewayDownload: query('download', 'true: Content-Disposition attachment', { type: 'boolean' }),
    GatewayRange: header('Range', 'One byte range (`bytes=0-99`, `bytes=100-`, `bytes=-100`) of a file or block → 206; several ranges, other units or a malformed header get the whole entity (200)', { type: 'string' }),
    GatewayIfRange: header('If-Range', 'Range applies only if this is the current ETag', { type: 'string' }),
    GatewayIfNoneMatch: header('If-None-Match', 'ETags (or `*`) the client holds → 304', { type: 'string' }),
    GatewayCacheControl: header('Cache-Control', '`only-if-cached`: 412 instead of 404 when the root block is not held', { type: 'string' }),
    GatewayServiceWorker: header('Service-Worker', '`script` is refused (400) unless the operator allows active content, and always at a CID root', { type: 'string' })
  }
}

function headers (): Obj {
  const h = (description: string, s: Obj = { type: 'string' }): Obj => ({ description, schema: s })
  const base64Json = (name: string): Obj => ({ type: 'string', contentEncoding: 'base64', contentMediaType: 'application/json', contentSchema: schema(name) })
  return {
    PaymentRequired: h('The x402 v2 challenge: base64 of the JSON X402PaymentRequired (price in atomic units, asset, payTo, maxTimeoutSeconds, EIP-712 extra)', base64Json('X402PaymentRequired')),
    PaymentResponse: h('The x402 v2 settlement result: base64 of the JSON X402SettleResponse (transaction, network, payer); on the first success of a paid write', base64Json('X402SettleResponse')),
    WalletAuthToken: h('A wallet token (EdDSA JWT, sub = the payer\'s lowercase address) for the owner endpoints: send it as `Authorization: Bearer <token>`'),
    WalletAuthTokenExpires: h('When the wallet token expires', { type: 'string', format: 'date-time' }),
    Location: h('The URL of the pin (or, for 301, of the directory)', { type: 'string', format: 'uri-reference' }),
    RetryAfter: h('Seconds to wait before retrying', { type: 'integer', minimum: 0 }),
    BlockedBy: h('RFC 7725: who blocks the content, `<public URL of this service>; rel="blocked-by"`'),
    WwwAuthenticate: h('`Bearer`', { type: 'string', const: 'Bearer' }),
    CacheControlPublic: h('`public, max-age=300`'),
    XContentTypeOptions: h('`nosniff`', { type: 'string', const: 'nosniff' }),
    ETag: h('Names the representation: the CID, plus the format and its parameters'),
    CacheControl: h('`public, max-age=29030400, immutable`'),
    XIpfsPath: h('The requested content path'),
    XIpfsRoots: h('CIDs of every block on the path, comma-separated'),
    ContentLocation: h('When the format was negotiated with Accept: the URL naming this representation (with ?format=)'),
    ContentDisposition: h('inline or attachment, with the filename'),
    AcceptRanges: h('`bytes` for files and blocks, `none` for CARs and listings'),
    ContentRange: h('`bytes start-end/size` (206), or `bytes */size` (416)')
  }
}

function securitySchemes (o: OpenApiInput): Obj {
  return {
    bearer: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: 'The wallet auth token: an EdDSA JWT (keys at /.well-known/jwks.json) whose `sub` is the owner\'s lowercase address. It comes in `x-wallet-auth-token` of a paid write, or from Sign-In with Ethereum (`POST /auth/challenge`, `POST /auth/token`). Operator tokens (`pind keys mint --unpaid-pins`) carry the permission `pins:create-unpaid` and create, replace and renew pins without payment.'
    },
    x402: {
      type: 'apiKey',
      in: 'header',
      name: 'PAYMENT-SIGNATURE',
      description: [
        `An x402 v2 payment: base64 of the JSON X402PaymentPayload, scheme \`exact\` on ${o.network}, an EIP-3009 \`transferWithAuthorization\` of the asset \`${o.asset}\` signed by the payer (who needs no gas).`,
        '1. Send the write without it: the answer is 402 with the `PAYMENT-REQUIRED` header (base64 JSON: the exact `amount` in atomic units, `asset`, `payTo`, `maxTimeoutSeconds`, EIP-712 `extra` {name, version}) and a readable JSON body (price, size, months, formula, howToPay).',
        '2. Sign an authorization of exactly `amount` of `asset` to `payTo`, valid for `maxTimeoutSeconds`, and retry the same request with `PAYMENT-SIGNATURE` (any x402 v2 client, e.g. @x402/fetch, does both steps).',
        '3. The payment is verified before the work and settled after it; the success carries `PAYMENT-RESPONSE` (the transaction) and `x-wallet-auth-token`. If settlement fails, nothing is kept and the answer is 402 again.',
        'A payment (payer:nonce) pays for one request: presented again for the same request it answers the original result without charging twice; for another request it is refused (402).'
      ].join('\n')
    }
  }
}
