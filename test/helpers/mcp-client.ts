/**
 * An MCP client that pays (x402's MCP transport, transports-v2-mcp.md), as
 * @x402/mcp's client does it (coinbase/x402 typescript/packages/mcp, not
 * published): the official SDK client (Client + StreamableHTTPClientTransport)
 * calls the tool; a result with isError and a PaymentRequired (structuredContent,
 * else content[0].text) is signed with @x402/core's client + @x402/evm's exact
 * scheme, and the call is made again with the PaymentPayload in
 * `_meta["x402/payment"]`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { PaymentPayload, PaymentRequired } from '@x402/core/types'
import type { DevChain } from '../../scripts/devchain/index.mjs'
import { clientFor } from './paying-client.js'

export type ToolResult = Awaited<ReturnType<Client['callTool']>> & { structuredContent?: Record<string, any>, _meta?: Record<string, any>, isError?: boolean, content: Array<{ type: string, text?: string }> }

/** A connected SDK client of `url`/mcp; `headers` go with every request (e.g. Authorization). */
export async function mcpClient (url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'pind-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }))
  return client
}

/** The PaymentRequired of a tool result, as a client finds it (structuredContent first, then content[0].text). */
export function paymentRequiredOf (r: ToolResult): PaymentRequired | undefined {
  if (r.isError !== true) return undefined
  const s = r.structuredContent
  if (s != null && s.x402Version != null && Array.isArray(s.accepts)) return s as PaymentRequired
  try {
    const parsed = JSON.parse(r.content[0]?.text ?? '')
    return parsed?.x402Version != null && Array.isArray(parsed.accepts) ? parsed : undefined
  } catch {
    return undefined
  }
}

export async function call (client: Client, name: string, args: Record<string, unknown>, payment?: PaymentPayload): Promise<ToolResult> {
  return await client.callTool({ name, arguments: args, ...(payment != null ? { _meta: { 'x402/payment': payment } } : {}) }) as ToolResult
}

/**
 * Calls a paid tool, pays what its first answer asks and calls again: the challenge, the payment
 * sent (to send again) and the paid result.
 */
export async function callPaying (client: Client, chain: DevChain, privateKey: `0x${string}`, name: string, args: Record<string, unknown>): Promise<{ challenge: PaymentRequired, payment: PaymentPayload, result: ToolResult }> {
  const first = await call(client, name, args)
  const challenge = paymentRequiredOf(first)
  if (challenge == null) throw new Error(`expected a payment required result, got ${JSON.stringify(first).slice(0, 500)}`)
  const payment = await clientFor(chain, privateKey).createPaymentPayload(challenge)
  return { challenge, payment, result: await call(client, name, args, payment) }
}
