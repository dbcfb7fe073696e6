/**
 * The OpenAPI 3.1 description of the HTTP API, served at GET /openapi.json.
 * A plain object built once at start from the settings that shape it (public
 * URL, payment network and asset, limits). Each module of ./routes describes
 * its own operations next to the routes it registers (its `*Operations`);
 * this file assembles them with the components: the schemas and the query
 * and header parameters (derived from the zod schemas that validate requests
 * and type the bodies and the x402 headers; what depends on the settings is
 * added afterwards), the response headers and the security schemes.
 * test/unit/http/openapi.test.ts fails when a registered route has no path
 * item.
 */

import { z } from 'zod/v4'
import { PinQueryParams, Status, TextMatchingStrategy } from '../service/pins/pin-query.js'
import { Origins, Pin, PinMeta } from '../service/pins/pin-request.js'
import { Delegates, PinResults, PinStatusSchema, StatusInfo } from '../service/pins/pin-status.js'
import { AgentCard } from '../service/discovery/agent-card.js'
import { CheckResult, Health } from '../service/health/health.js'
import { Ready } from '../service/health/readiness.js'
import { UploadResult } from '../service/uploads/upload.js'
import { TicketResult } from '../service/uploads/upload-ticket.js'
import { PaymentTerms } from '../payment/gate.js'
import { X402PaymentPayload, X402PaymentRequired, X402PaymentRequirements, X402SettleResponse } from '../payment/x402-shapes.js'
import { SiweChallengeRequest, SiweTokenRequest } from '../auth/siwe.js'
import { Jwks } from '../auth/keystore.js'
import { UploadRequest } from './multipart.js'
import { WriteHeaders } from './write-headers.js'
import { Failure, REASONS } from './error-catalog.js'
import { COMMON, commonResponse, parameterKey, path, ref, schema, type Obj, type OpenApiInput } from './openapi-parts.js'
import { GatewayQuery } from './gateway/request.js'
import { PAID_OPERATIONS, paymentInfo } from '../service/discovery/paid-operations.js'
import { agentCardOperations } from './routes/agent-card.js'
import { discoveryOperations } from './routes/discovery.js'
import { authOperations, SiweChallenge, SiweToken } from './routes/auth.js'
import { gatewayOperations, gatewayParameters } from './routes/gateway.js'
import { healthOperations } from './routes/health.js'
import { jwksOperations } from './routes/jwks.js'
import { openApiOperations } from './routes/openapi.js'
import { mcpOperations } from './routes/mcp.js'
import { pinOperations } from './routes/pins.js'
import { uploadOperations } from './routes/upload.js'
import { usageOperations } from './routes/usage.js'
import { Usage } from '../service/usage/usage.js'

export type { OpenApiInput } from './openapi-parts.js'

/** every reason an error body can carry: the error catalog's */
const REASON_LIST = Object.keys(REASONS)

export function openApiDocument (o: OpenApiInput): Obj {
  const derived = fromZod(o)
  const paths: Record<string, Obj> = {
    ...pinOperations(o),
    ...uploadOperations(o),
    ...mcpOperations(o),
    ...usageOperations(),
    ...authOperations(),
    ...gatewayOperations(),
    ...healthOperations(),
    ...discoveryOperations(),
    ...agentCardOperations(),
    ...jwksOperations(),
    ...openApiOperations()
  }
  // each paid operation says how it is paid (the same terms as /.well-known/x402)
  const pay = o.payment
  if (pay != null) {
    for (const op of PAID_OPERATIONS) {
      const item = paths[op.path]?.[op.method.toLowerCase()] as Obj | undefined
      if (item == null) throw new Error(`no OpenAPI operation for the paid route ${op.method} ${op.path}`)
      item['x-payment-info'] = paymentInfo(op, { network: o.network, asset: o.asset, prices: pay.prices, ...(pay.payTo != null ? { payTo: pay.payTo } : {}), ...(o.accepts != null ? { accepts: o.accepts } : {}) })
    }
  }
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
      { name: 'mcp', description: 'The MCP endpoint: the same operations as tools for AI agents, paid per call with x402 (MCP transport).' },
      { name: 'auth', description: 'Sign-In with Ethereum (EIP-4361): a new wallet token without paying.' },
      { name: 'gateway', description: 'Path and trustless gateway for the content this node serves; free.' },
      { name: 'service', description: 'Discovery and liveness.' }
    ],
    paths,
    components: {
      schemas: schemas(derived.schemas),
      parameters: parameters(derived.parameters),
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
    `**Payments.** Writes (\`POST /upload\`, \`POST /pins\`, replacing and renewing a pin) are paid per request with **x402 v2** (scheme \`exact\`: an EIP-3009 \`transferWithAuthorization\` of USDC ${o.accepts != null && o.accepts.length > 1 ? `on any of ${o.accepts.map(a => `**${a.network}** (\`${a.asset}\`)`).join(', ')}: the 402 lists each in \`accepts\`, the same amount in each asset's atomic units)` : `\`${o.asset}\`) on **${o.network}**`}. ` +
      'The payer needs no account, no API key and no gas. A write without payment answers 402 with the price in the `PAYMENT-REQUIRED` header and a readable JSON body; the client signs and retries with `PAYMENT-SIGNATURE` (see the `x402` security scheme). ' +
      'The payment is verified before the work and settled after it; the success response carries `PAYMENT-RESPONSE` and a wallet token in `x-wallet-auth-token`.',
    '',
    `**Duration.** \`X-Pin-Duration-Months\` (1–${o.maxMonths}, default 1) on paid writes.`,
    '',
    '**Discovery.** Each paid operation is marked with `x-payment-info` (price model, network, asset), as listed by `GET /.well-known/x402`; every 402 carries the x402 `bazaar` extension (the request\'s method, body schema, headers and an output example). `GET /llms.txt` describes the API for language models, `GET /` for people.',
    '',
    '**Prepaid uploads.** `POST /upload/tickets` sells a single-use upload ticket, priced and paid as `POST /upload` would be for a file of `X-Upload-Size` bytes, settled at once. `POST /upload` with `X-Upload-Ticket` and the payer\'s wallet token then streams the file with no settlement in its way: its blocks go to the block store while the body arrives. A failed upload leaves the ticket usable.',
    '',
    '**Owner endpoints** (`GET /pins`, `GET`/`DELETE /pins/{requestid}`, replace, renew, `GET /upload/tickets/{ticket}`) take `Authorization: Bearer <wallet token>` (the `bearer` scheme); `GET /pins` and `GET`/`DELETE /pins/{requestid}` also take a signed `SIGN-IN-WITH-X` header (the `siwx` scheme), and their 401 carries the sign-in-with-x challenge. Another owner\'s requestid answers 404, never 403 (an upload with another wallet\'s ticket is the one 403).',
    '',
    `**Errors** always have the Pinning Service API shape \`{"error":{"reason","details"}}\` (the \`Failure\` schema). Reasons: ${REASON_LIST.map(r => `\`${r}\``).join(', ')}.`,
    '',
    '**Everywhere:** every GET also answers HEAD (same status and headers, no body). A path that exists answers other methods with 405 and `Allow`; an unknown path answers 404. ' +
      'A request head that is malformed answers 400, one that does not arrive within 20 s answers 408, one over 16 KiB or 100 fields answers 431. ' +
      'CORS preflights (OPTIONS with Access-Control-Request-Method) from allowed origins answer 204.'
  ].join('\n')
}

// ---- components --------------------------------------------------------------

/** the request and response shapes defined once as zod schemas (validation uses the same), by component name */
const SCHEMAS = z.registry<{ id: string }>()
SCHEMAS.add(Pin, { id: 'Pin' }).add(Origins, { id: 'Origins' }).add(PinMeta, { id: 'PinMeta' })
  .add(Status, { id: 'Status' }).add(TextMatchingStrategy, { id: 'TextMatchingStrategy' })
  .add(PinStatusSchema, { id: 'PinStatus' }).add(PinResults, { id: 'PinResults' }).add(Delegates, { id: 'Delegates' }).add(StatusInfo, { id: 'StatusInfo' })
  .add(UploadResult, { id: 'UploadResult' }).add(TicketResult, { id: 'UploadTicket' }).add(PaymentTerms, { id: 'PaymentTerms' })
  .add(SiweChallenge, { id: 'SiweChallenge' }).add(SiweToken, { id: 'SiweToken' })
  .add(SiweChallengeRequest, { id: 'SiweChallengeRequest' }).add(SiweTokenRequest, { id: 'SiweTokenRequest' })
  .add(X402PaymentRequirements, { id: 'X402PaymentRequirements' }).add(X402PaymentRequired, { id: 'X402PaymentRequired' })
  .add(X402PaymentPayload, { id: 'X402PaymentPayload' }).add(X402SettleResponse, { id: 'X402SettleResponse' })
  .add(UploadRequest, { id: 'UploadRequest' }).add(Jwks, { id: 'Jwks' }).add(Usage, { id: 'Usage' }).add(Failure, { id: 'Failure' })
  .add(Health, { id: 'Health' }).add(CheckResult, { id: 'HealthCheck' }).add(Ready, { id: 'Ready' }).add(AgentCard, { id: 'AgentCard' })
  // query and header parameters defined as a zod object: each field is a parameter in components.parameters, not a schema
  .add(PinQueryParams, { id: 'PinQueryParams' }).add(GatewayQuery, { id: 'GatewayQuery' }).add(WriteHeaders, { id: 'WriteHeaders' })
/** those zod objects: where their parameters are, and the key of each in components.parameters */
const PARAMETERS: Record<string, { in: 'query' | 'header', key: (name: string) => string }> = {
  PinQueryParams: { in: 'query', key: (name) => parameterKey('', name) },
  GatewayQuery: { in: 'query', key: (name) => parameterKey('Gateway', name) },
  WriteHeaders: { in: 'header', key: (name) => ({ 'X-Pin-Duration-Months': 'DurationMonths', 'X-Upload-Size': 'UploadSize', 'X-Pin-Size': 'PinSize' })[name] ?? name }
}

/** the fields of a field's JSON Schema that belong to its parameter, not to its schema */
const PARAMETER_FIELDS = ['description', 'style', 'explode', 'example']

/**
 * JSON Schema 2020-12 of the zod-defined shapes, as components.schemas
 * entries, and of the zod-defined query and header parameters, as
 * components.parameters entries (built fresh each time).
 */
function fromZod (o: OpenApiInput): { schemas: Obj, parameters: Obj } {
  const { schemas: all } = z.toJSONSchema(SCHEMAS, { io: 'input', uri: (id) => `#/components/schemas/${id}` })
  const schemas: Obj = {}
  const parameters: Obj = {}
  for (const [name, s] of Object.entries(all)) {
    const { $schema: _s, $id: _i, ...rest } = s as Obj
    const where = PARAMETERS[name]
    if (where == null) { schemas[name] = rest; continue }
    for (const [param, field] of Object.entries(rest.properties as Record<string, Obj>)) {
      // a field that is a component is its $ref alone (what zod repeats beside it is the component's own)
      const fieldSchema = typeof field.$ref === 'string' ? { $ref: field.$ref } : Object.fromEntries(Object.entries(field).filter(([k]) => !PARAMETER_FIELDS.includes(k)))
      const { description, ...style } = Object.fromEntries(Object.entries(field).filter(([k]) => PARAMETER_FIELDS.includes(k)))
      // a JSON object in the query string is a parameter with content, anything else has a schema
      const target = typeof fieldSchema.$ref === 'string' ? all[fieldSchema.$ref.split('/').pop() as string] : undefined
      const content = target?.type === 'object' ? { content: { 'application/json': { schema: fieldSchema } } } : { schema: fieldSchema }
      parameters[where.key(param)] = { name: param, in: where.in, required: false, description, ...content, ...style }
    }
  }
  // what depends on the settings
  const field = (name: string, ...path: string[]): Obj => path.reduce<Obj>((at, key) => (at.properties as Obj)[key] as Obj, schemas[name] as Obj)
  field('StatusInfo', 'network').examples = [o.network]
  field('UploadResult', 'months').maximum = o.maxMonths
  field('PaymentTerms', 'months').maximum = o.maxMonths
  field('PaymentTerms', 'price', 'asset').examples = [o.asset]
  field('PaymentTerms', 'price', 'network').examples = [o.network]
  ;(field('X402PaymentRequirements').properties as Obj).network = o.accepts != null && o.accepts.length > 1 ? { enum: o.accepts.map(a => a.network) } : { const: o.network }
  field('X402PaymentRequirements', 'asset').examples = [o.asset]
  field('X402SettleResponse', 'network').examples = [o.network]
  field('UploadRequest', 'file').description = `the file, at most ${o.uploadMaxBytes} bytes; its filename is kept as the pin's name`
  const headerSchema = (key: string): Obj => (parameters[key] as Obj).schema as Obj
  headerSchema('DurationMonths').maximum = o.maxMonths
  headerSchema('UploadSize').maximum = o.uploadMaxBytes
  return { schemas, parameters }
}

function schemas (derived: Obj): Obj {
  return {
    // the shapes described once, as zod schemas: derived here
    ...derived,
    // x402 v2
    PaymentRequired: {
      description: 'The body of a 402 challenge: the Failure plus the terms in readable form (the machine-readable terms are the PAYMENT-REQUIRED header)',
      allOf: [schema('Failure'), schema('PaymentTerms')]
    }
  }
}

function parameters (derived: Obj): Obj {
  return {
    // GET /pins (as in the Pinning Service API), the gateway's query and the headers of paid writes: derived from the zod schemas
    ...derived,
    requestid: path('requestid', 'The pin\'s requestid'),
    // the gateway
    GatewayCid: path('cid', 'The root CID (CIDv0 or CIDv1 in any multibase)'),
    GatewayPath: path('path', 'A path inside the DAG: one or more URL-encoded segments separated by `/` (a trailing `/` names a directory); `.` and `..` are refused'),
    ...gatewayParameters()
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
    SignInChallenge: h('A sign-in-with-x challenge: base64 of the JSON x402 v2 PaymentRequired with `accepts: []` and `extensions["sign-in-with-x"]` ({info: {domain, uri, version, nonce, issuedAt, expirationTime, statement, resources}, supportedChains: [{chainId, type: "eip191"}], schema}); see the `siwx` security scheme', { type: 'string', contentEncoding: 'base64', contentMediaType: 'application/json' }),
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
    siwx: {
      type: 'apiKey',
      in: 'header',
      name: 'SIGN-IN-WITH-X',
      description: [
        `Sign-In-With-X (the x402 \`sign-in-with-x\` extension: CAIP-122, an EIP-4361 message on ${o.network}) on \`GET /pins\`, \`GET\` and \`DELETE /pins/{requestid}\`, instead of a bearer token.`,
        '1. Call the endpoint without credentials: the 401 carries `PAYMENT-REQUIRED`, base64 of an x402 v2 PaymentRequired with `accepts: []` and `extensions["sign-in-with-x"]` (a fresh 32-hex nonce, issued now, expiring in 5 minutes, bound to this service\'s domain and URI).',
        '2. Build the EIP-4361 message from those fields and your address, sign it with `personal_sign` (an EOA; an EIP-1271 contract wallet through its signer; an EIP-6492 signature for a wallet not deployed yet), and send base64 of the JSON fields plus `address` and `signature` as `SIGN-IN-WITH-X` (@x402/extensions\' `createSIWxClientHook` or `createSIWxPayload` + `encodeSIWxHeader` do this).',
        'Each header is good for one request: its nonce is used then, on every front end. Refused with 401: a used nonce, another domain or URI origin, a URI whose path is not the request path, another chain, `issuedAt` over 5 minutes old or in the future, past `expirationTime`, before `notBefore`, a signature that is not the address\'s, a header over 8192 characters.'
      ].join('\n')
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
