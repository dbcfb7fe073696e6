/**
 * The x402 v2 messages of the three payment headers, as zod schemas, scheme
 * `exact` on an EVM chain (EIP-3009). @x402/core builds and decodes the
 * headers; its own zod schemas (zod 3, `@x402/core/schemas`) take any scheme
 * and any payload, so these say what pind's headers carry:
 *   - PAYMENT-REQUIRED (X402PaymentRequired, each way to pay an
 *     X402PaymentRequirements) and PAYMENT-RESPONSE (X402SettleResponse):
 *     built by @x402/core from the gate's terms; the tests check real headers
 *     against these (test/unit/http/openapi.test.ts, test/e2e/upload.test.ts).
 *   - PAYMENT-SIGNATURE (X402PaymentPayload): its EIP-3009 part
 *     (Eip3009Payload, eip3009-payload.ts) is what gate.ts reads the payer and
 *     nonce from, checked with that schema before any verifier sees it.
 * Only the OpenAPI document (loaded at its first request) and the tests use
 * this module: its schemas are not built at serve's start.
 * OpenAPI: the schemas of the same names, derived from these (the network,
 * asset and settings-dependent examples are added by src/http/openapi.ts).
 */
import { z } from 'zod/v4'
import { ADDRESS, DIGITS, matching, text } from '../kernel/api-shapes.js'
import { Eip3009Payload } from './eip3009-payload.js'

export { Eip3009Payload }

/** JSON objects x402 passes through without pind reading them */
const Extensions = z.record(z.string(), z.unknown())

export const X402PaymentRequirements = z.object({
  scheme: z.literal('exact'),
  network: text('CAIP-2 network'),
  asset: matching('the EIP-3009 token', ADDRESS),
  amount: matching('exact amount in atomic units', DIGITS),
  payTo: matching('receiving address', ADDRESS),
  maxTimeoutSeconds: z.int().min(1).meta({ description: 'how long a signed payment stays valid' }),
  extra: z.object({
    name: text('EIP-712 domain name of the asset', { examples: ['USD Coin'] }),
    version: text('EIP-712 domain version of the asset', { examples: ['2'] })
  })
}).meta({ description: 'One way to pay (x402 v2 PaymentRequirements)' })

export const X402PaymentRequired = z.object({
  x402Version: z.literal(2),
  error: text('why payment is required').optional(),
  resource: z.object({
    url: text('the resource paid for', { format: 'uri' }),
    description: z.string().optional(),
    mimeType: z.string().optional(),
    serviceName: text('the bazaar\'s service name').optional(),
    tags: z.array(z.string()).meta({ description: 'the bazaar\'s topical tags' }).optional()
  }),
  accepts: z.array(X402PaymentRequirements).min(1),
  extensions: Extensions.meta({ description: '`bazaar`: the x402 discovery extension (extensions-bazaar.md): how the request is made (method, body type, the JSON Schema of the body, headers; `routeTemplate` for parameterised routes) and an output example' }).optional()
}).meta({ description: 'The decoded PAYMENT-REQUIRED header (x402 v2 PaymentRequired)' })

export const X402PaymentPayload = z.object({
  x402Version: z.literal(2),
  resource: Extensions.optional(),
  accepted: X402PaymentRequirements,
  payload: Eip3009Payload,
  extensions: Extensions.optional()
}).meta({ description: 'The decoded PAYMENT-SIGNATURE header (x402 v2 PaymentPayload, scheme exact)' })

export const X402SettleResponse = z.object({
  success: z.boolean(),
  transaction: text('the settlement transaction hash'),
  network: text('CAIP-2 network'),
  payer: matching('the payer', ADDRESS).optional()
}).meta({ description: 'The decoded PAYMENT-RESPONSE header (x402 v2 SettleResponse)' })
