/**
 * How each paid route is called, as the bazaar extension of its 402 says
 * (src/payment/bazaar.ts): body type, the body's JSON Schema (derived from the
 * zod schema that validates it), headers, examples. Each body schema's
 * `examples` are requests pind accepts (test/e2e/discovery.test.ts sends
 * them, paid). The other discovery documents name the same operations
 * (src/service/discovery/paid-operations.ts).
 */
import { z } from 'zod/v4'
import { PaidRoute, type Json, type PaidRoutes } from '../payment/bazaar.js'
import { Pin } from '../service/pins/pin-request.js'
import { UploadRequest } from './multipart.js'

/** a CID in the examples (a small raw block; pinning it by CID is accepted and waits for a provider) */
const EXAMPLE_CID = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const EXAMPLE_REQUESTID = '0b9f5c5e-6f1a-4a7e-9a43-3c2d1e0f9a11'
const EXAMPLE_PAYER = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc'

export interface PaidRoutesInput {
  publicUrl: string
  network: string
  asset: string
  maxMonths: number
}

/**
 * The whole numbers 1..max (max < 1000) as a short pattern (a header is a string; the 402 is the
 * hottest answer): 24 gives `^(?:[1-9]|1[0-9]|2[0-4])$`.
 */
export function monthsPattern (max: number): string {
  if (!Number.isInteger(max) || max < 1 || max > 999) throw new RangeError(`months maximum ${max} is not a whole number from 1 to 999`)
  const digit = (lo: number, hi: number): string => lo === hi ? String(lo) : `[${lo}-${hi}]`
  const parts: string[] = []
  // 1..9, then each width up to max's: whole decades, then the last one's rest
  parts.push(digit(1, Math.min(9, max)))
  if (max >= 10) {
    const tens = Math.floor(Math.min(max, 99) / 10)
    const last = Math.min(max, 99) % 10
    if (tens > 1 || last === 9) parts.push(`${digit(1, last === 9 ? tens : tens - 1)}[0-9]`)
    if (last !== 9) parts.push(`${tens}${digit(0, last)}`)
  }
  if (max >= 100) {
    const hundreds = Math.floor(max / 100)
    const rest = max % 100
    if (hundreds > 1) parts.push(`${digit(1, hundreds - 1)}[0-9]{2}`)
    const tens = Math.floor(rest / 10)
    if (tens > 0) parts.push(`${hundreds}${digit(0, tens - 1)}[0-9]`)
    parts.push(`${hundreds}${tens}${digit(0, rest % 10)}`)
  }
  return `^(?:${parts.join('|')})$`
}

/**
 * A zod schema as a compact JSON Schema for a 402 (the hottest answer: its cost grows with its
 * size): the constraints alone, without `$schema`, descriptions and per-field examples (the
 * OpenAPI document has those), and `examples` of whole requests.
 */
function bodySchema (s: z.ZodType, examples: Json[]): Json {
  const { $schema: _s, ...rest } = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Json
  return { ...constraints(rest) as Json, examples }
}

function constraints (v: unknown): unknown {
  if (Array.isArray(v)) return v.map(constraints)
  if (v == null || typeof v !== 'object') return v
  return Object.fromEntries(Object.entries(v).filter(([k]) => k !== 'examples' && k !== 'description').map(([k, x]) => [k, constraints(x)]))
}

/** The bazaar declarations of the paid routes, built once at start. */
export function paidRoutes (o: PaidRoutesInput): PaidRoutes {
  const months = { type: 'string', pattern: monthsPattern(o.maxMonths) }
  const bytes = { type: 'string', pattern: '^[0-9]{1,16}$' }
  const bearer = { type: 'string', pattern: '^Bearer [^ ]+$' }
  const exampleMonths = String(Math.min(6, o.maxMonths))
  const pinStatus = {
    requestid: EXAMPLE_REQUESTID,
    status: 'queued',
    created: '2026-11-22T03:20:38.955123Z',
    pin: { cid: EXAMPLE_CID, name: 'site' },
    delegates: [],
    info: { pinned_until: '2027-05-22T03:20:38.955Z', months: exampleMonths, amount_paid: '1000' }
  }
  const pinBody = bodySchema(Pin, [{ cid: EXAMPLE_CID, meta: { app: 'docs' } }])
  const noBody = { type: 'object', description: 'no body is read', examples: [{}] }
  const pinHeaders = { 'X-Pin-Duration-Months': months, 'X-Pin-Size': bytes }
  return {
    pin: new PaidRoute({
      key: 'pin',
      method: 'POST',
      route: '/pins',
      bodyType: 'json',
      body: { cid: EXAMPLE_CID, name: 'site' },
      bodySchema: pinBody,
      headers: { 'X-Pin-Duration-Months': exampleMonths },
      headerSchemas: pinHeaders,
      output: { example: pinStatus }
    }),
    replace: new PaidRoute({
      key: 'replace',
      method: 'POST',
      route: '/pins/:requestid',
      bodyType: 'json',
      body: { cid: EXAMPLE_CID, name: 'site' },
      bodySchema: pinBody,
      headers: { Authorization: 'Bearer <x-wallet-auth-token>', 'X-Pin-Duration-Months': exampleMonths },
      headerSchemas: { Authorization: bearer, ...pinHeaders },
      requiredHeaders: ['Authorization'],
      output: { example: pinStatus }
    }),
    renew: new PaidRoute({
      key: 'renew',
      method: 'POST',
      route: '/pins/:requestid/renew',
      bodyType: 'json',
      body: {},
      bodySchema: noBody,
      headers: { Authorization: 'Bearer <x-wallet-auth-token>', 'X-Pin-Duration-Months': exampleMonths },
      headerSchemas: { Authorization: bearer, 'X-Pin-Duration-Months': months },
      requiredHeaders: ['Authorization'],
      output: { example: { ...pinStatus, status: 'pinned' } }
    }),
    upload: new PaidRoute({
      key: 'upload',
      method: 'POST',
      route: '/upload',
      bodyType: 'form-data',
      body: { file: 'hello, pind\n' },
      bodySchema: bodySchema(UploadRequest, [{ file: 'hello, pind\n' }]),
      headers: { 'X-Pin-Duration-Months': exampleMonths, 'X-Upload-Size': '12' },
      headerSchemas: { 'X-Pin-Duration-Months': months, 'X-Upload-Size': bytes },
      output: {
        example: {
          requestid: EXAMPLE_REQUESTID,
          cid: EXAMPLE_CID,
          name: 'hello.txt',
          size: 12,
          dag_size: 12,
          status: 'pinned',
          created: '2026-11-22T03:20:38.955123Z',
          pinned_until: '2027-05-22T03:20:38.955Z',
          months: 6,
          owner: EXAMPLE_PAYER,
          price: { amount: '1000', usdc: '0.001', asset: o.asset, network: o.network, transaction: '0x…' },
          gateway_url: `${o.publicUrl}/ipfs/${EXAMPLE_CID}`
        }
      }
    }),
    ticket: new PaidRoute({
      key: 'ticket',
      method: 'POST',
      route: '/upload/tickets',
      bodyType: 'json',
      body: {},
      bodySchema: noBody,
      headers: { 'X-Pin-Duration-Months': exampleMonths, 'X-Upload-Size': '1048576' },
      headerSchemas: { 'X-Pin-Duration-Months': months, 'X-Upload-Size': bytes },
      requiredHeaders: ['X-Upload-Size'],
      output: {
        example: {
          ticket: '5f0c6a0e-2b7d-4c1e-8f4a-9d3b2a1c0e7f',
          bytes: 1048576,
          months: 6,
          amount: '1000',
          usdc: '0.001',
          asset: o.asset,
          network: o.network,
          payer: EXAMPLE_PAYER,
          expiresAt: '2026-12-22T03:20:38.955Z',
          used: false,
          failedBytes: 0,
          upload_url: `${o.publicUrl}/upload`
        }
      }
    })
  }
}
