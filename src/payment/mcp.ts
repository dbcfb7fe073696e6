/**
 * x402 over MCP (spec: transports-v2-mcp.md): the payment travels in a tool
 * call's `_meta["x402/payment"]` as a PaymentPayload object, the challenge
 * comes back in the tool result's `structuredContent`, the settlement in the
 * result's `_meta["x402/payment-response"]`. The gate speaks in the HTTP
 * headers' encoding (base64 JSON): these turn one into the other, so that a
 * paid tool goes through exactly the gate and the services the HTTP routes
 * use. Also each tool's bazaar declaration (`input.type: "mcp"`).
 */
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload } from '@x402/core/types'
import type { Json } from './bazaar.js'

/** the `_meta` keys of the transport */
export const MCP_PAYMENT_META = 'x402/payment'
export const MCP_PAYMENT_RESPONSE_META = 'x402/payment-response'

/**
 * The PAYMENT-SIGNATURE header the HTTP path would get for this `_meta`: undefined when it carries
 * no payment. Anything else is encoded as it is: the gate answers a malformed payment with its
 * challenge, as it answers a malformed header.
 */
export function paymentHeaderOf (meta: Record<string, unknown> | undefined): string | undefined {
  const payment = meta?.[MCP_PAYMENT_META]
  if (payment == null) return undefined
  return encodePaymentSignatureHeader(payment as PaymentPayload)
}

/** a PAYMENT-RESPONSE header as the SettlementResponse object the MCP transport carries */
export function settlementOf (header: string): Json {
  return decodePaymentResponseHeader(header) as unknown as Json
}

/** challenges decoded and re-addressed lately, by header and tool (the gate keeps its challenges: so do these) */
const decoded = new Map<string, Json>()
const MAX_DECODED = 512

/**
 * A PAYMENT-REQUIRED header as the PaymentRequired object of an MCP tool result, addressed to the
 * MCP endpoint (`resource.url`) and declaring the tool to the bazaar instead of the HTTP route.
 * The terms (`accepts`) are the gate's, unchanged: the payment is checked against them alone.
 */
export function mcpChallenge (header: string, resourceUrl: string, tool: McpPaidTool): Json {
  const key = `${tool.name}\0${resourceUrl}\0${header}`
  const kept = decoded.get(key)
  if (kept != null) return kept
  const pr = decodePaymentRequiredHeader(header) as unknown as Json & { resource?: Json, extensions?: Json }
  const made: Json = {
    ...pr,
    resource: { ...pr.resource, url: resourceUrl },
    extensions: { ...pr.extensions, ...tool.extensions }
  }
  if (decoded.size >= MAX_DECODED) decoded.delete(decoded.keys().next().value as string)
  decoded.set(key, made)
  return made
}

export interface McpToolSpec {
  /** the tool's name (what `tools/call` names) */
  name: string
  description: string
  /** the JSON Schema of its arguments, as `tools/list` gives it */
  inputSchema: Json
  example: Json
  output: { example: Json }
}

/**
 * A paid tool's bazaar declaration (extensions-bazaar.md, "MCP Tools"). The spec names the tool
 * `tool`; @x402/extensions 2.27 (its declareDiscoveryExtension and validators) names it
 * `toolName`: both are given, and both are in the schema (which forbids unknown fields).
 * `declared` false (--bazaar false): the tool's challenges carry no bazaar extension.
 */
export class McpPaidTool {
  readonly name: string
  readonly extensions: Json

  constructor (s: McpToolSpec, declared = true) {
    this.name = s.name
    if (!declared) {
      this.extensions = {}
      return
    }
    const input = { type: 'mcp', tool: s.name, toolName: s.name, description: s.description, transport: 'streamable-http', inputSchema: s.inputSchema, example: s.example }
    this.extensions = {
      bazaar: {
        info: { input, output: { type: 'json', example: s.output.example } },
        schema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: {
            input: {
              type: 'object',
              properties: {
                type: { type: 'string', const: 'mcp' },
                tool: { type: 'string' },
                toolName: { type: 'string' },
                description: { type: 'string' },
                transport: { type: 'string', enum: ['streamable-http', 'sse'] },
                inputSchema: { type: 'object' },
                example: { type: 'object' }
              },
              required: ['type', 'tool', 'toolName', 'inputSchema'],
              additionalProperties: false
            },
            output: {
              type: 'object',
              properties: { type: { type: 'string' }, example: { type: 'object' } },
              required: ['type']
            }
          },
          required: ['input']
        }
      }
    }
  }
}
