/**
 * The MCP tools (POST /mcp): each one calls the service function its HTTP
 * route calls, with the same inputs the route would pass — the payment as
 * the PAYMENT-SIGNATURE header string, the client's address for its limits,
 * the wallet token verified by the same TokenService — so that the gate, the
 * ledger records, the settlement notes, the replay rules and the denials are
 * the HTTP path's own. Errors are answered through the same catalog
 * (error-catalog.ts); a challenge becomes the x402 MCP transport's
 * PaymentRequired (payment/mcp.ts). No MCP SDK here: server.ts, loaded on
 * the first request, registers these.
 */
import type { IncomingMessage } from 'node:http'
import { z } from 'zod/v4'
import { InvalidTokenError } from '../../auth/errors.js'
import { PIN_WITHOUT_PAYMENT } from '../../auth/permissions.js'
import type { TokenService, VerifiedToken } from '../../auth/tokens.js'
import { InputTooLargeError, InvalidInputError, PaymentRequiredError, UnauthorizedError, UnavailableError } from '../../kernel/errors.js'
import type { Logger } from '../../kernel/log.js'
import type { PinLedger } from '../../ledger/pins.js'
import type { Json } from '../../payment/bazaar.js'
import { McpPaidTool, MCP_PAYMENT_RESPONSE_META, mcpChallenge, paymentHeaderOf, settlementOf } from '../../payment/mcp.js'
import { createPin, type PinCreateDeps, type PinOutcome, type PinWrite } from '../../service/pins/pin-create.js'
import { parsePinQuery } from '../../service/pins/pin-query.js'
import { renewPin } from '../../service/pins/pin-renew.js'
import { parsePinRequest } from '../../service/pins/pin-request.js'
import { toPinStatus, type PinStatus } from '../../service/pins/pin-status.js'
import { withDenial } from '../../service/serving/denials.js'
import { usageOf } from '../../service/usage/usage.js'
import type { Refusal } from '../../service/serving/serve-policy.js'
import { CAR_TYPE, upload, type FileReader, type UploadDeps, type UploadOutcome } from '../../service/uploads/upload.js'
import { bearer } from '../bearer.js'
import { errorAnswer } from '../error-catalog.js'
import { ownerPin, replaceablePin } from '../routes/pins.js'
import { parseMonths } from '../write-headers.js'
import type { CID } from 'multiformats/cid'

/** the most bytes of content `upload_content` takes inline (decoded); larger files go to POST /upload */
export const MCP_INLINE_MAX_BYTES = 1024 * 1024

/** the largest POST /mcp body: the inline limit in base64, plus room for the rest of the call and its payment */
export function mcpBodyLimit (inlineMax: number): number {
  return Math.ceil(inlineMax / 3) * 4 + 64 * 1024
}

export interface McpToolDeps {
  publicUrl: string
  /** the endpoint's URL: the `resource.url` of its challenges */
  endpoint: string
  maxMonths: number
  /** decoded bytes `upload_content` takes (MCP_INLINE_MAX_BYTES, or less when uploads are smaller) */
  inlineMaxBytes: number
  ledger: Pick<PinLedger, 'get' | 'isLive' | 'list' | 'remove' | 'usage'>
  tokens: TokenService
  delegates: () => string[]
  refusal?: (cid: CID) => Refusal | undefined
  /** what POST /pins, POST /pins/{id} and POST /pins/{id}/renew are given */
  create: PinCreateDeps
  /** what POST /upload is given */
  upload: Omit<UploadDeps, 'gate'> & { gate?: UploadDeps['gate'] }
  log: Logger
}

/** one tools/call, as the route sees it */
export interface ToolCall {
  req: IncomingMessage
  /** the client's address (rate limits' notion) */
  client: string
  /** the call's `_meta` */
  meta: Record<string, unknown> | undefined
  /** the call turned out paid or authorized: it does not count against the unpaid-write limit (as on HTTP) */
  countAsPaid: () => void
}

export interface ToolResult {
  [key: string]: unknown
  content: Array<{ type: 'text', text: string }>
  structuredContent?: Json
  isError?: boolean
  _meta?: Json
}

export interface Tool {
  name: string
  title: string
  description: string
  /** the arguments' zod shape (the SDK validates them and gives tools/list their JSON Schema) */
  shape: z.ZodRawShape
  /** counted as a write (the unpaid-write limit) rather than a read */
  write: boolean
  /** paid with x402: its bazaar declaration */
  paid?: McpPaidTool
  run: (args: Record<string, unknown>, call: ToolCall) => Promise<ToolResult>
}

const EXAMPLE_CID = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const EXAMPLE_REQUESTID = '0b9f5c5e-6f1a-4a7e-9a43-3c2d1e0f9a11'

const TOKEN_NOTE = 'The wallet token (x-wallet-auth-token) a paid pin_cid or upload_content returned as wallet_token, or one from Sign-In with Ethereum (POST /auth/challenge, then POST /auth/token, free). Instead of this argument, the MCP request may carry it as `Authorization: Bearer <token>`.'
const PAYMENT_NOTE = 'Paid with x402 (MCP transport): called without payment it answers isError with the x402 PaymentRequired object in structuredContent (and as JSON in content[0].text); sign one of its `accepts` (EIP-3009, the exact amount) and call again with the same arguments and the PaymentPayload in `_meta["x402/payment"]`. The paid result carries `_meta["x402/payment-response"]`. Calling again with the same payment and the same arguments returns the same result and charges nothing more; a payment made for other arguments is refused.'

/** The tools, built once per endpoint (their schemas and bazaar declarations). */
export function mcpTools (d: McpToolDeps): Tool[] {
  const months = z.int().min(1).max(d.maxMonths).optional()
    .describe(`How many months to pin for, 1 to ${d.maxMonths}; default 1. The price is proportional to size x months.`)
  const token = z.string().max(8192).optional().describe(TOKEN_NOTE)
  const requestid = z.string().min(1).max(100).describe('The pin\'s requestid (from pin_cid, upload_content or list_pins).')
  const pinFields = {
    cid: z.string().min(1).max(200).describe('The CID to pin (CIDv0 or CIDv1; codecs dag-pb, raw, dag-cbor, dag-json or json; sha2-256/512).'),
    name: z.string().max(255).optional().describe('A name for the pin, up to 255 characters (list_pins can filter by it).'),
    origins: z.array(z.string().max(1000)).max(20).optional().describe('Up to 20 multiaddrs of peers that have the content (each ending in /p2p/<peer id>); they are dialled first.'),
    meta: z.record(z.string(), z.string()).optional().describe('Your own string key/values stored with the pin (list_pins can filter by them).'),
    size: z.int().min(0).optional().describe('The size of the whole DAG in bytes, when you know it and the service may not find the root block in time (as X-Pin-Size on HTTP). The price is on the larger of this and what the root block declares.')
  }
  const example = (cid = EXAMPLE_CID): Json => ({ cid, name: 'site', months: Math.min(6, d.maxMonths) })
  const pinStatusExample: Json = { requestid: EXAMPLE_REQUESTID, status: 'queued', created: '2026-11-22T03:20:38.955123Z', pin: { cid: EXAMPLE_CID, name: 'site' }, delegates: ['/ip4/203.0.113.1/tcp/4001/p2p/12D3KooW…'], info: { pinned_until: '2027-05-22T03:20:38.955Z', months: '6' } }

  const shown = (status: PinStatus): PinStatus => d.refusal != null ? withDenial(status, d.refusal) : status
  /** the owner behind the `wallet_token` argument, else the request's Authorization header */
  const owner = async (args: Record<string, unknown>, call: ToolCall): Promise<VerifiedToken> => {
    const t = args.wallet_token
    if (typeof t === 'string') {
      try {
        return await d.tokens.verify(t.trim())
      } catch (err) {
        if (err instanceof InvalidTokenError) throw new UnauthorizedError(`wallet_token: ${err.message}`)
        throw err
      }
    }
    if (call.req.headers.authorization == null) throw new UnauthorizedError('this tool needs your wallet token: pass it as wallet_token, or send the MCP request with Authorization: Bearer <token>')
    return await bearer(call.req, d.tokens)
  }
  const optionalOwner = async (args: Record<string, unknown>, call: ToolCall): Promise<VerifiedToken | undefined> =>
    typeof args.wallet_token === 'string' || call.req.headers.authorization != null ? await owner(args, call) : undefined
  const monthsOf = (args: Record<string, unknown>): number => parseMonths(args.months == null ? undefined : String(args.months), d.maxMonths)
  const pinWrite = (args: Record<string, unknown>, call: ToolCall): PinWrite => {
    const request = parsePinRequest({ cid: args.cid, ...(args.name != null ? { name: args.name } : {}), ...(args.origins != null ? { origins: args.origins } : {}), ...(args.meta != null ? { meta: args.meta } : {}) })
    const w: PinWrite = { request, months: monthsOf(args), client: call.client }
    if (typeof args.size === 'number') {
      if (args.size > Number.MAX_SAFE_INTEGER) throw new InvalidInputError('size must be a whole number of bytes')
      w.claimedBytes = args.size
    }
    const payment = paymentHeaderOf(call.meta)
    if (payment != null) w.paymentHeader = payment
    return w
  }

  const tools: Tool[] = []
  /** a paid tool: its bazaar declaration from its own arguments' schema */
  const paid = (t: Omit<Tool, 'paid' | 'write'> & { example: Json, output: Json }): Tool => {
    const { example: ex, output, ...rest } = t
    // declared to the bazaar when the HTTP routes are (--bazaar)
    const tool: Tool = { ...rest, write: true, paid: new McpPaidTool({ name: t.name, description: t.description, inputSchema: inputSchemaOf(t.shape), example: ex, output: { example: output } }, d.create.paidRoutes != null) }
    tools.push(tool)
    return tool
  }
  const free = (t: Omit<Tool, 'paid'>): void => { tools.push(t) }

  paid({
    name: 'pin_cid',
    title: 'Pin a CID (paid)',
    description: [
      'Pin content that already exists on IPFS by its CID, for a number of months. Answers at once with the pin (status queued); the service then fetches the DAG in the background (queued → pinning → pinned, or failed), from `origins` first. Poll get_pin with the returned requestid.',
      'Price: on the size the root block declares (looked up briefly), or on `size` when larger or when the root cannot be read in time; with neither, the minimum price. The pin holds at most the bytes paid for (info.max_bytes). Payment is settled when the pin is accepted and is not refunded if the content cannot be fetched. Use get_price_quote first to see the price for free.',
      PAYMENT_NOTE,
      'The first paid result carries a wallet_token for the payer: keep it, the owner tools (get_pin, list_pins, get_usage, delete_pin, replace_pin, renew_pin) need it. An operator token with pins:create-unpaid (wallet_token argument) pins without payment.'
    ].join('\n\n'),
    shape: { ...pinFields, months, wallet_token: token },
    example: example(),
    output: { pin: pinStatusExample, wallet_token: 'eyJ…', wallet_token_expires: '2026-12-22T03:20:38.955Z' },
    run: async (args, call) => {
      const w = pinWrite(args, call)
      const auth = await optionalOwner(args, call)
      if (auth != null) w.auth = auth
      const r = await createPin(w, d.create)
      call.countAsPaid()
      return pinResult(r)
    }
  })

  paid({
    name: 'upload_content',
    title: 'Upload content and pin it (paid)',
    description: [
      `Upload a file given inline (at most ${d.inlineMaxBytes} bytes once decoded) and pin it for a number of months. It is imported as UnixFS (CIDv1, raw leaves, 1 MiB chunks: the IPIP-499 unixfs-v1-2025 profile), or with format "car" pinned as the CAR's one root DAG. Answers with the CID, status pinned, and gateway_url where it is served (${d.publicUrl}/ipfs/<cid>).`,
      'The price is on the decoded size x months. Larger files: POST /upload on the HTTP API (multipart, same payment). Content over the limit is refused before any payment.',
      PAYMENT_NOTE,
      'The first paid result carries a wallet_token for the payer: keep it for the owner tools.'
    ].join('\n\n'),
    shape: {
      content: z.string().describe(`The file's content: text (encoding "utf8", the default) or base64 (encoding "base64"); at most ${d.inlineMaxBytes} bytes once decoded.`),
      encoding: z.enum(['utf8', 'base64']).optional().describe('How `content` is encoded; default utf8.'),
      filename: z.string().min(1).max(255).optional().describe('The file\'s name, kept with the pin.'),
      format: z.enum(['file', 'car']).optional().describe('"file" (default): import the bytes as one UnixFS file. "car": the bytes are a CAR (v1 or v2) with exactly one root, pinned as the DAG it holds.'),
      months
    },
    example: { content: 'hello, pind\n', filename: 'hello.txt', months: Math.min(6, d.maxMonths) },
    output: { cid: EXAMPLE_CID, status: 'pinned', size: 12, gateway_url: `${d.publicUrl}/ipfs/${EXAMPLE_CID}`, wallet_token: 'eyJ…' },
    run: async (args, call) => {
      const bytes = decodeContent(args.content as string, (args.encoding as string | undefined) ?? 'utf8', d.inlineMaxBytes)
      const name = typeof args.filename === 'string' ? args.filename : undefined
      const type = args.format === 'car' ? CAR_TYPE : undefined
      const file: FileReader = async (consume, limits) => {
        if (bytes.length > limits.maxBodyBytes) throw new InputTooLargeError(`the content is ${bytes.length} bytes, more than the ${limits.maxBodyBytes} paid for`)
        return await consume({ ...(name != null ? { name } : {}), ...(type != null ? { type } : {}), bytes: once(bytes) })
      }
      if (d.upload.gate == null) throw new UnavailableError('payments are not configured on this server (no pay-to address or facilitator); writes are disabled', 3600)
      const payment = paymentHeaderOf(call.meta)
      const r = await upload({ months: monthsOf(args), fileBytes: bytes.length, file, ...(payment != null ? { payment } : {}) }, { ...d.upload, gate: d.upload.gate })
      call.countAsPaid()
      return uploadResult(r)
    }
  })

  free({
    name: 'get_price_quote',
    title: 'Price quote (free)',
    description: 'What pin_cid, upload_content or renew_pin would cost, without paying: the same quote the paid call answers with (amount in atomic units of the asset, 10^-6 USDC, and in USDC; the size it is computed on and where that size came from). For "pin" give cid (and size when known); for "upload" give bytes; for "renew" give requestid and your wallet token.',
    shape: {
      operation: z.enum(['pin', 'upload', 'renew']).describe('Which paid tool to price.'),
      cid: pinFields.cid.optional(),
      size: pinFields.size,
      origins: pinFields.origins,
      bytes: z.int().min(0).optional().describe('upload: the file\'s size in bytes.'),
      requestid: requestid.optional(),
      months,
      wallet_token: token
    },
    write: true, // a quote is what a 402 is on HTTP: an unpaid write (a pin's quote may probe the network for its root)
    run: async (args, call) => {
      const m = monthsOf(args)
      let quoted: Promise<unknown>
      switch (args.operation) {
        case 'pin': {
          if (typeof args.cid !== 'string') throw new InvalidInputError('operation "pin" needs cid')
          const w = pinWrite({ ...args, months: m }, { ...call, meta: undefined })
          quoted = createPin(w, d.create)
          break
        }
        case 'upload': {
          if (typeof args.bytes !== 'number') throw new InvalidInputError('operation "upload" needs bytes (the file\'s size)')
          if (d.upload.gate == null) throw new UnavailableError('payments are not configured on this server (no pay-to address or facilitator); writes are disabled', 3600)
          const never: FileReader = async () => { throw new InvalidInputError('a quote reads no content') }
          quoted = upload({ months: m, fileBytes: args.bytes, file: never }, { ...d.upload, gate: d.upload.gate })
          break
        }
        default: {
          if (typeof args.requestid !== 'string') throw new InvalidInputError('operation "renew" needs requestid (and your wallet token)')
          const auth = await owner(args, call)
          if (auth.permissions.includes(PIN_WITHOUT_PAYMENT)) throw new InvalidInputError('nothing to quote: this wallet token renews without payment')
          quoted = renewPin({ requestid: args.requestid, months: m, auth }, d.create)
        }
      }
      try {
        await quoted
      } catch (err) {
        if (err instanceof PaymentRequiredError && err.terms != null) return ok({ quote: err.terms as Json })
        throw err
      }
      // an operator token: nothing to pay (and, for a pin, it was made: the call is the pin)
      throw new InvalidInputError('nothing to quote: this wallet token pins without payment')
    }
  })

  free({
    name: 'get_pin',
    title: 'Get a pin\'s status',
    description: 'A pin of yours by requestid: its status (queued, pinning, pinned, failed), its CID, name and meta, and info (pinned_until, status_details with fetch progress or the reason for failure, the amount paid). Another wallet\'s pin is not found.',
    shape: { requestid, wallet_token: token },
    write: false,
    run: async (args, call) => {
      const { owner: who } = await owner(args, call)
      return ok({ pin: shown(toPinStatus(await ownerPin(d.ledger, who, args.requestid as string), d.delegates())) })
    }
  })

  free({
    name: 'list_pins',
    title: 'List your pins',
    description: 'Your pins matching every filter given, newest first (the IPFS Pinning Service API\'s GET /pins). Without status, only pinned pins are listed. count counts every pin matching the filters; to page, call again with before = the created time of the oldest result until count equals what you have.',
    shape: {
      cid: z.array(z.string().max(200)).min(1).max(10).optional().describe('Only pins of any of these CIDs (1 to 10; CIDv0 and v1 match alike).'),
      name: z.string().max(255).optional().describe('Only pins with this name (see match).'),
      match: z.enum(['exact', 'iexact', 'partial', 'ipartial']).optional().describe('How name is matched: exact (default), iexact (case-insensitive), partial (substring), ipartial.'),
      status: z.array(z.enum(['queued', 'pinning', 'pinned', 'failed'])).min(1).max(4).optional().describe('Only pins with any of these statuses; default ["pinned"].'),
      before: z.string().max(64).optional().describe('Only pins created before this RFC 3339 time.'),
      after: z.string().max(64).optional().describe('Only pins created after this RFC 3339 time.'),
      limit: z.int().min(1).max(1000).optional().describe('At most this many results, 1 to 1000; default 10.'),
      meta: z.record(z.string(), z.string()).optional().describe('Only pins whose meta has all of these key/values.'),
      wallet_token: token
    },
    write: false,
    run: async (args, call) => {
      const { owner: who } = await owner(args, call)
      const q = new URLSearchParams()
      if (Array.isArray(args.cid)) q.set('cid', args.cid.join(','))
      if (Array.isArray(args.status)) q.set('status', args.status.join(','))
      if (args.meta != null) q.set('meta', JSON.stringify(args.meta))
      for (const k of ['name', 'match', 'before', 'after']) if (typeof args[k] === 'string') q.set(k, args[k])
      if (typeof args.limit === 'number') q.set('limit', String(args.limit))
      const { count, results } = await d.ledger.list(who, parsePinQuery(q))
      const delegates = d.delegates()
      return ok({ count, results: results.map(p => shown(toPinStatus(p, delegates))) })
    }
  })

  free({
    name: 'get_usage',
    title: 'Your usage',
    description: 'Your wallet\'s pins by status, the DAG bytes of the pinned ones, what you paid per network, and the soonest expiry of a live pin.',
    shape: { wallet_token: token },
    write: false,
    run: async (args, call) => {
      const { owner: who } = await owner(args, call)
      return ok(await usageOf(d.ledger, who) as unknown as Json)
    }
  })

  free({
    name: 'delete_pin',
    title: 'Remove a pin',
    description: 'Unpin one of your pins at once: its content stops being served and a fetch in progress is cancelled. Not refunded.',
    shape: { requestid, wallet_token: token },
    write: true,
    run: async (args, call) => {
      const { owner: who } = await owner(args, call)
      const pin = await ownerPin(d.ledger, who, args.requestid as string)
      await d.ledger.remove(pin.requestid, 'unpinned')
      call.countAsPaid() // authorized, as on HTTP
      return ok({ removed: pin.requestid })
    }
  })

  paid({
    name: 'replace_pin',
    title: 'Replace a pin (paid)',
    description: [
      'Replace one of your pins with a new pin (new CID, name, origins or meta): a new pin with a new requestid, priced and paid like pin_cid; the old requestid is gone from then on. The old pin\'s blocks stay until the replacement is pinned or fails. No new wallet token is issued.',
      PAYMENT_NOTE
    ].join('\n\n'),
    shape: { requestid, ...pinFields, months, wallet_token: token },
    example: { requestid: EXAMPLE_REQUESTID, ...example(), wallet_token: '<wallet token>' },
    output: { pin: pinStatusExample },
    run: async (args, call) => {
      const auth = await owner(args, call)
      const w = pinWrite(args, call)
      w.auth = auth
      w.replaces = await replaceablePin(d.ledger, auth.owner, args.requestid as string)
      const r = await createPin(w, d.create)
      call.countAsPaid()
      return pinResult(r)
    }
  })

  paid({
    name: 'renew_pin',
    title: 'Extend a pin (paid)',
    description: [
      `Add months to one of your pins: pinned until max(pinned_until, now) + months, at most ${d.maxMonths} months ahead of now. Priced like a new pin on the bytes its creation was priced on. An expired pin can be renewed during the grace period; a failed one cannot.`,
      PAYMENT_NOTE
    ].join('\n\n'),
    shape: { requestid, months, wallet_token: token },
    example: { requestid: EXAMPLE_REQUESTID, months: Math.min(6, d.maxMonths), wallet_token: '<wallet token>' },
    output: { pin: { ...pinStatusExample, status: 'pinned' } },
    run: async (args, call) => {
      const auth = await owner(args, call)
      const payment = paymentHeaderOf(call.meta)
      const r = await renewPin({ requestid: args.requestid as string, months: monthsOf(args), auth, ...(payment != null ? { paymentHeader: payment } : {}) }, d.create)
      call.countAsPaid()
      return pinResult(r)
    }
  })

  return tools
}

/** A tool's failure as its result: a challenge as x402's PaymentRequired, anything else through the error catalog. */
export function toolError (err: unknown, tool: Tool | undefined, endpoint: string, log: Logger): ToolResult {
  if (err instanceof PaymentRequiredError && err.challenge != null && tool?.paid != null) {
    const pr = mcpChallenge(err.challenge, endpoint, tool.paid)
    return { isError: true, structuredContent: pr, content: [{ type: 'text', text: JSON.stringify(pr) }] }
  }
  const a = errorAnswer(err)
  if (a.fault === true) log.error('MCP tool failed', { tool: tool?.name, error: err })
  const retry = a.headers['retry-after']
  const body: Json = { error: { reason: a.reason, details: a.details }, status: a.status, ...(retry != null ? { retry_after_seconds: Number(retry) } : {}) }
  return { isError: true, structuredContent: body, content: [{ type: 'text', text: `${a.reason}: ${a.details}${retry != null ? ` (retry after ${retry} s)` : ''}` }] }
}

function ok (result: Json, meta?: Json): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result, ...(meta != null ? { _meta: meta } : {}) }
}

function tokenFields (t: { token: string, expiresAt: Date } | undefined): Json {
  return t != null ? { wallet_token: t.token, wallet_token_expires: t.expiresAt.toISOString() } : {}
}

function paidMeta (settlement: string | undefined, token: { token: string, expiresAt: Date } | undefined): Json | undefined {
  if (settlement == null) return undefined
  return { [MCP_PAYMENT_RESPONSE_META]: settlementOf(settlement), ...(token != null ? { 'pind/wallet-token': tokenFields(token) } : {}) }
}

function pinResult (r: PinOutcome): ToolResult {
  return ok({ pin: r.pin, ...tokenFields(r.token) }, paidMeta(r.settlement, r.token))
}

function uploadResult (r: UploadOutcome): ToolResult {
  return ok({ ...r.result, ...tokenFields(r.token) }, paidMeta(r.settlement, r.token))
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** `content` as bytes, refused over `max` bytes before anything else happens (no quote, no payment) */
function decodeContent (content: string, encoding: string, max: number): Uint8Array {
  if (encoding === 'base64') {
    const text = content.replace(/\s+/g, '')
    if (text.length % 4 !== 0 || !BASE64.test(text)) throw new InvalidInputError('content is not valid base64 (encoding "base64")')
    const size = text.length / 4 * 3 - (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0)
    if (size > max) throw new InputTooLargeError(tooLarge(size, max))
    return Buffer.from(text, 'base64')
  }
  const size = Buffer.byteLength(content, 'utf8')
  if (size > max) throw new InputTooLargeError(tooLarge(size, max))
  return Buffer.from(content, 'utf8')
}

function tooLarge (size: number, max: number): string {
  return `the content is ${size} bytes; upload_content takes at most ${max} bytes inline (nothing was charged): upload larger files with POST /upload (multipart) on the HTTP API`
}

async function * once (bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  if (bytes.length > 0) yield bytes
}

/** a tool's arguments as the JSON Schema tools/list gives (for its bazaar declaration) */
function inputSchemaOf (shape: z.ZodRawShape): Json {
  const { $schema: _s, ...schema } = z.toJSONSchema(z.object(shape), { io: 'input', unrepresentable: 'any' }) as Json
  return schema
}
