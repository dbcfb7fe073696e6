/**
 * The pieces every operation of the OpenAPI document is written with: the
 * settings that shape it, references, responses, the common responses, the
 * security requirements. Each module of ./routes describes its own
 * operations with these, next to the routes it registers; ./openapi.ts
 * assembles the document.
 */

import type { AcceptedNetwork } from '../kernel/accepted-network.js'
import type { PriceSettings } from '../payment/pricing.js'

export type Obj = Record<string, unknown>

export interface OpenApiInput {
  publicUrl: string
  version: string
  network: string
  asset: string
  maxMonths: number
  uploadMaxBytes: number
  /** the prices and payee: each paid operation is marked with `x-payment-info` */
  payment?: { prices: PriceSettings, payTo?: string }
  /** every accepted network (the first = network, asset above), when there are several */
  accepts?: readonly AcceptedNetwork[]
}

/** path items by OpenAPI path, as a route module describes its routes */
export type PathItems = Record<string, Obj>

export type Method = 'get' | 'head' | 'post' | 'delete'

export const JSON_LIMIT = 64 * 1024

export function ref (kind: 'schemas' | 'parameters' | 'headers' | 'responses', name: string): Obj {
  return { $ref: `#/components/${kind}/${name}` }
}

export const schema = (name: string): Obj => ref('schemas', name)

export function json (s: Obj): Obj {
  return { 'application/json': { schema: s } }
}

/** a response; `body` is the JSON schema of its body (none when omitted) */
export function response (description: string, body?: Obj, hdrs?: Obj): Obj {
  return { description, ...(hdrs != null ? { headers: hdrs } : {}), ...(body != null ? { content: json(body) } : {}) }
}

/** an error response: the spec's Failure body */
export function failure (description: string, hdrs?: Obj): Obj {
  return response(description, schema('Failure'), hdrs)
}

export function unauthorized (description: string): Obj {
  return failure(description, { 'WWW-Authenticate': ref('headers', 'WwwAuthenticate') })
}

/** an owner endpoint's 401: besides WWW-Authenticate, a sign-in-with-x challenge (docs/siwx.md) */
export function signInRequired (description: string): Obj {
  return failure(`${description} \`PAYMENT-REQUIRED\` carries a fresh sign-in-with-x challenge (nothing to pay: \`accepts\` is empty): sign it and send it as \`SIGN-IN-WITH-X\`.`, {
    'WWW-Authenticate': ref('headers', 'WwwAuthenticate'),
    'PAYMENT-REQUIRED': ref('headers', 'SignInChallenge')
  })
}

export function paymentRequired (description: string): Obj {
  return response(
    `${description} With a challenge the body carries the readable terms (\`PaymentRequired\`) and \`PAYMENT-REQUIRED\` the x402 challenge; a payment already used for another request is refused with a plain \`Failure\` and no challenge.`,
    { anyOf: [schema('PaymentRequired'), schema('Failure')] },
    { 'PAYMENT-REQUIRED': ref('headers', 'PaymentRequired') }
  )
}

/** 503 of a paid write (payment backend), which also covers shutting down */
export function writesUnavailable (extra = ''): Obj {
  return failure(
    `Payments are not configured on this server (no pay-to address or facilitator: writes disabled, \`Retry-After: 3600\`), the payment backend is not reachable yet or could not verify the payment within 10 s, or an earlier request with this payment could not tell whether its settlement went through and the chain cannot tell yet (\`SERVICE_UNAVAILABLE\`; the same payment can be sent again)${extra}, or the server is shutting down (\`SHUTTING_DOWN\`). Retry after \`Retry-After\` seconds.`,
    { 'Retry-After': ref('headers', 'RetryAfter') }
  )
}

export function jsonBody (description: string, s: Obj, limit: number): Obj {
  return {
    required: true,
    description: `${description} \`Content-Type: application/json\`, at most ${limit} bytes.`,
    content: json(s)
  }
}

/** 400/413/415 that reading a JSON body can produce, merged with the operation's own 400 text */
export function jsonBodyErrors (limit: number, bad: string): Obj {
  return {
    400: failure(`The body is not valid JSON, or ${bad}`),
    413: failure(`The JSON body is larger than ${limit} bytes.`),
    415: failure('The body is not sent as `application/json`.')
  }
}

export interface Common { status: string, name: string, description: string, retryAfter: boolean, methods: Method[] }

/** responses any operation can produce, by method; in components.responses (HEAD copies have no body) */
export const COMMON: Common[] = [
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

export function commonResponse (c: Common, withBody: boolean): Obj {
  const hdrs = c.retryAfter ? { 'Retry-After': ref('headers', 'RetryAfter') } : undefined
  return response(c.description, withBody ? schema('Failure') : undefined, hdrs)
}

export interface OperationSpec {
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

export function operation (method: Method, s: OperationSpec): Obj {
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
export const bearerOnly = (): Obj[] => [{ bearer: [] }]
/** the owner's wallet token, or a Sign-In-With-X header */
export const ownerSignedIn = (): Obj[] => [{ bearer: [] }, { siwx: [] }]
/** paid, or an operator token with pins:create-unpaid */
export const paidOrOperator = (): Obj[] => [{ x402: [] }, { bearer: [] }]
/** the owner's token, plus a payment unless it is an operator token with pins:create-unpaid */
export const ownerPaid = (): Obj[] => [{ bearer: [], x402: [] }, { bearer: [] }]

export const tokenHeaders = (): Obj => ({
  'x-wallet-auth-token': ref('headers', 'WalletAuthToken'),
  'x-wallet-auth-token-expires': ref('headers', 'WalletAuthTokenExpires')
})

/** 451 Unavailable For Legal Reasons (RFC 7725), with `Link: <service>; rel="blocked-by"` */
export function legalReasons (description: string): Obj {
  return failure(description, { Link: ref('headers', 'BlockedBy') })
}

export function header (name: string, description: string, s: Obj): Obj {
  return { name, in: 'header', required: false, description, schema: s }
}

export function path (name: string, description: string): Obj {
  return { name, in: 'path', required: true, description, schema: { type: 'string' } }
}

/** the key in components.parameters of a query parameter defined in a zod object: `prefix` and the name in PascalCase */
export function parameterKey (prefix: string, name: string): string {
  return prefix === '' ? name : prefix + name.split('-').map(w => w.charAt(0).toUpperCase() + w.slice(1)).join('')
}
