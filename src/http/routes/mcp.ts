/**
 * POST /mcp: the MCP endpoint (streamable HTTP, stateless), paid per call
 * with x402's MCP transport. The tools (mcp/tools.ts) call the services the
 * HTTP routes call; the MCP SDK (mcp/server.ts) is loaded on the first
 * request, not at start. GET and DELETE answer 405: a stateless server has
 * no stream to open and no session to end.
 *
 * Limits, as for the HTTP routes each call stands for: the body is read
 * with a bound (the inline upload limit in base64, plus the rest); one
 * JSON-RPC message per request (no batches: one request, one limit unit);
 * a paid tool, a quote and delete_pin count as writes (the unpaid-write
 * limit, given back once the call turns out paid or authorized), the rest
 * (initialize, tools/list, reads of pins) as reads. A body over 64 KiB is
 * counted as a write before it is read, a refused message as a write.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { MCP_PATH } from '../../service/discovery/paid-operations.js'
import { readJson } from '../json-body.js'
import type { Router } from '../router.js'
import { failure, jsonBody, jsonBodyErrors, operation, response, type OpenApiInput, type PathItems } from '../openapi-parts.js'
import { MCP_INLINE_MAX_BYTES, mcpBodyLimit, mcpTools, type McpToolDeps, type Tool } from '../mcp/tools.js'

export interface McpRouteDeps extends Omit<McpToolDeps, 'inlineMaxBytes' | 'endpoint'> {
  /** what per-client limits count by */
  clientOf: (req: IncomingMessage) => string
  /** the per-client limits, which leave POST /mcp to this route (RateLimits.admittedByRoute) */
  limits?: McpLimits
  uploadMaxBytes: number
}

/** what a counted write holds (http/rate-limit.ts Admission) */
interface Admission { refund: () => void, done: () => void }

/** The per-client limits (http/rate-limit.ts), as the route applies them. */
export interface McpLimits {
  /** one unit of the client's read limit; throws TooManyRequestsError over it */
  read: (req: IncomingMessage) => void
  /** one unit of the unpaid-write limit, given back by `refund` once the call turned out paid or authorized */
  write: (req: IncomingMessage, credentials: boolean) => Admission
}

export function mcpRoutes (router: Router, d: McpRouteDeps): void {
  /** built on the first request (registering a route uses none of its deps) */
  let built: { limit: number, endpoint: string, list: Tool[], byName: Map<string, Tool> } | undefined
  const setup = (): NonNullable<typeof built> => {
    const inlineMaxBytes = Math.min(MCP_INLINE_MAX_BYTES, d.uploadMaxBytes)
    const endpoint = `${d.publicUrl}${MCP_PATH}`
    const list = mcpTools({ ...d, inlineMaxBytes, endpoint })
    return { limit: mcpBodyLimit(inlineMaxBytes), endpoint, list, byName: new Map(list.map(t => [t.name, t])) }
  }
  let sdk: Promise<typeof import('../mcp/server.js')> | undefined
  router.add('POST', MCP_PATH, async ({ req, res, url, countAsPaid }) => {
    const tools = built ??= setup()
    // which limit a call counts against is known once its body is read: a body that may be large
    // (only an inline upload is) is counted as a write before it is read, so that no client reads
    // big bodies into this process past its unpaid-write limit. One may run ahead of an empty
    // allowance at a time (its payment is inside), as a request with a PAYMENT-SIGNATURE header may.
    let admission: Admission | undefined
    const admitWrite = (credentials: boolean): Admission | undefined => {
      const a = d.limits?.write(req, credentials)
      if (a != null) res.on('close', () => { a.done() })
      return a
    }
    const declared = Number(req.headers['content-length'])
    if (!(declared <= SMALL_BODY)) admission = admitWrite(true)
    const refused = (message: string): void => {
      admission ??= admitWrite(false) // a refused message is an unpaid write
      rpcError(res, 400, -32600, message)
    }
    const body = await readJson(req, tools.limit)
    if (Array.isArray(body)) { refused('JSON-RPC batches are not accepted here: send one message per request'); return }
    if (body == null || typeof body !== 'object') { refused('the body must be one JSON-RPC message (an object)'); return }
    // no tool takes more than a few levels: a deeper message is refused before anything walks it
    if (nestedDeeper(body, MAX_DEPTH)) { refused(`the message is nested more than ${MAX_DEPTH} levels deep`); return }
    const client = d.clientOf(req)
    const message = body as { method?: unknown, params?: { name?: unknown, _meta?: Record<string, unknown> } }
    const tool = message.method === 'tools/call' && typeof message.params?.name === 'string' ? tools.byName.get(message.params.name) : undefined
    // a write counts against the unpaid-write limit until it turns out paid or authorized, as its
    // HTTP route does; anything else (initialize, tools/list, pin reads) against the read limit
    let paid = countAsPaid
    if (tool?.write === true) {
      const a = admission ?? admitWrite(message.params?._meta?.['x402/payment'] != null || req.headers.authorization != null)
      if (a != null) paid = () => { a.refund() }
    } else {
      admission?.refund()
      d.limits?.read(req)
    }
    const { handleMcp } = await (sdk ??= import('../mcp/server.js'))
    await handleMcp({ tools: tools.list, endpoint: tools.endpoint, log: d.log }, { req, res, body, url, client, countAsPaid: paid })
  })
}

// ---- the OpenAPI description of this route (src/http/openapi.ts) -----------

export function mcpOperations (o: OpenApiInput): PathItems {
  const inline = Math.min(MCP_INLINE_MAX_BYTES, o.uploadMaxBytes)
  const limit = mcpBodyLimit(inline)
  return {
    [MCP_PATH]: {
      post: operation('post', {
        id: 'mcp',
        tag: 'mcp',
        summary: 'MCP endpoint (streamable HTTP, stateless), paid per tool call with x402',
        description: [
          'The Model Context Protocol over streamable HTTP, without sessions: each POST carries one JSON-RPC message (`initialize`, `tools/list`, `tools/call`, …; batches are refused) and is answered with JSON. The client must accept `application/json` and `text/event-stream`. GET and DELETE answer 405 (no stream, no session).',
          `Tools: \`pin_cid\`, \`upload_content\` (inline content of at most ${inline} bytes), \`replace_pin\` and \`renew_pin\` are paid; \`get_price_quote\`, \`get_pin\`, \`list_pins\`, \`get_usage\` and \`delete_pin\` are free. Paid tools follow x402's MCP transport: unpaid, the result has \`isError: true\` and the x402 PaymentRequired in \`structuredContent\` and \`content[0].text\`; the call with the PaymentPayload in \`_meta["x402/payment"]\` is verified, executed and settled exactly as the HTTP route it stands for, and carries \`_meta["x402/payment-response"]\`. Owner tools take the wallet token as \`Authorization: Bearer\` or as their \`wallet_token\` argument. See docs/mcp.md.`
        ].join('\n\n'),
        requestBody: jsonBody('One JSON-RPC 2.0 message.', { type: 'object', required: ['jsonrpc'], properties: { jsonrpc: { const: '2.0' }, id: { type: ['string', 'integer'] }, method: { type: 'string' }, params: { type: 'object' } } }, limit),
        responses: {
          ...jsonBodyErrors(limit, 'a batch (an array), or not a JSON-RPC message.'),
          200: response('The JSON-RPC response (a tool\'s failure, a payment required included, is a result with `isError: true`).', { type: 'object' }),
          202: { description: 'A notification or response was accepted (no body).' },
          406: failure('The Accept header does not list both `application/json` and `text/event-stream`.')
        }
      })
    }
  }
}

/** a body up to this size is read before it is counted (a read or a write, once known) */
const SMALL_BODY = 64 * 1024

/** how deep a message may nest (arrays and objects): a tool call with a payment is about 6 */
const MAX_DEPTH = 32

/** whether `v` nests deeper than `max` levels (walked without recursion, a bounded body) */
function nestedDeeper (v: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[v, 1]]
  while (stack.length > 0) {
    const [x, depth] = stack.pop() as [unknown, number]
    if (x == null || typeof x !== 'object') continue
    if (depth > max) return true
    for (const child of Object.values(x)) if (child != null && typeof child === 'object') stack.push([child, depth + 1])
  }
  return false
}

function rpcError (res: ServerResponse, status: number, code: number, message: string): void {
  const text = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } })
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}
