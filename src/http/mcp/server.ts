/**
 * The MCP server behind POST /mcp, on @modelcontextprotocol/sdk's streamable
 * HTTP transport, stateless (no session: each POST is answered on its own,
 * with JSON). Loaded by routes/mcp.ts on the first request, never at start
 * (start-up time). A server and a transport per request, over tools built
 * once (tools.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type { Logger } from '../../kernel/log.js'
import { VERSION } from '../../kernel/version.js'
import { toolError, type Tool, type ToolCall } from './tools.js'

/** the request headers the transport reads */
const PASSED = ['accept', 'content-type', 'mcp-protocol-version', 'authorization', 'host']

export interface McpRequest {
  req: IncomingMessage
  res: ServerResponse
  /** the JSON-RPC message, read and checked by the route */
  body: unknown
  url: URL
  client: string
  countAsPaid: () => void
}

export interface McpEndpoint {
  tools: Tool[]
  endpoint: string
  log: Logger
}

const INSTRUCTIONS = 'pind pins content on IPFS for a number of months, paid per call with x402 (USDC, EIP-3009). Pin an existing CID with pin_cid, or upload small content inline with upload_content; get_price_quote prices either for free. The first paid call returns a wallet_token: pass it to get_pin, list_pins, get_usage, delete_pin, replace_pin and renew_pin (or send it as Authorization: Bearer). Pinned content is served at <this server>/ipfs/<cid>.'

export async function handleMcp (e: McpEndpoint, m: McpRequest): Promise<void> {
  const server = new McpServer({ name: 'pind', version: VERSION }, { instructions: INSTRUCTIONS, capabilities: { tools: {} } })
  for (const tool of e.tools) {
    server.registerTool(tool.name, {
      title: tool.title,
      description: tool.description,
      inputSchema: tool.shape,
      annotations: { readOnlyHint: !tool.write, destructiveHint: tool.name === 'delete_pin' || tool.name === 'replace_pin', idempotentHint: tool.paid != null || !tool.write, openWorldHint: false }
    }, async (args: Record<string, unknown>, extra) => {
      const call: ToolCall = { req: m.req, client: m.client, meta: extra._meta as Record<string, unknown> | undefined, countAsPaid: m.countAsPaid }
      try {
        return await tool.run(args, call)
      } catch (err) {
        return toolError(err, tool, e.endpoint, e.log)
      }
    })
  }
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
  await server.connect(transport)
  try {
    const headers = new Headers()
    for (const h of PASSED) {
      const v = m.req.headers[h]
      if (typeof v === 'string') headers.set(h, v)
    }
    const answer = await transport.handleRequest(new Request(m.url, { method: 'POST', headers }), { parsedBody: m.body })
    const out = Buffer.from(await answer.arrayBuffer())
    const head: Record<string, string> = { 'content-length': String(out.length), 'cache-control': 'no-store' }
    answer.headers.forEach((v, k) => { if (k !== 'content-length') head[k] = v })
    m.res.writeHead(answer.status, head)
    m.res.end(out)
  } finally {
    await server.close().catch(() => {})
  }
}
