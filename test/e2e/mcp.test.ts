/**
 * Issue 38, part 3: POST /mcp, an MCP endpoint paid per call over x402's MCP
 * transport, driven by clients no one here wrote: the official MCP SDK client
 * (Client + StreamableHTTPClientTransport) against the real pind (bundle) on
 * the dev chain, paying with @x402/core's client and @x402/evm's exact scheme
 * (test/helpers/mcp-client.ts wires them as the transport spec says).
 * - tools/list: every tool, described, with an input schema.
 * - An unpaid paid tool: isError, the PaymentRequired in structuredContent and
 *   (the same JSON) in content[0].text, addressed to /mcp, declaring the tool
 *   to the bazaar (input.type "mcp", accepted by @x402/extensions' validator).
 * - Paid: the payer's balance moves by exactly the quoted amount; the result
 *   carries `_meta["x402/payment-response"]` and a wallet token; the content is
 *   served by the gateway; the same payment again answers the same result and
 *   charges nothing; for other content or another tool it is refused.
 * - Owner tools with the token (argument or Authorization), another wallet's
 *   token finds nothing; renew paid; delete.
 * - Limits: inline content over the limit refused before any quote; bad
 *   arguments are tool errors naming the problem; batches refused; GET and
 *   DELETE /mcp answer 405.
 */
import { randomBytes } from 'node:crypto'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { PaymentRequired } from '@x402/core/types'
import { extractDiscoveryInfo, validateDiscoveryExtension, validateDiscoveryExtensionSpec, type DiscoveryExtension } from '@x402/extensions/bazaar'
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { carOf, dagOf } from '../helpers/car.js'
import { call, callPaying, mcpClient, paymentRequiredOf } from '../helpers/mcp-client.js'
import { chainArgs, clientFor } from '../helpers/paying-client.js'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'

let chain: DevChain
let pind: PindProcess
let client: Client
/** from the paid upload: its pin, CID and the payer's token */
let uploaded: { requestid: string, cid: string, token: string, payment: unknown }
const text = `hello from an MCP client ${randomBytes(8).toString('hex')}\n`

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  const { args, env } = chainArgs(chain)
  pind = await startPind({ args, env: { ...env, PIND_LOG_LEVEL: 'info' } })
  client = await mcpClient(pind.url)
})

afterAll(async () => {
  await client?.close()
  await pind?.stop()
  await chain?.stop()
})

const PAID = ['pin_cid', 'upload_content', 'replace_pin', 'renew_pin']

describe('POST /mcp', () => {
  it('lists the tools, each described with an input schema', async () => {
    const { tools } = await client.listTools()
    expect(tools.map(t => t.name).sort()).toEqual(['delete_pin', 'get_pin', 'get_price_quote', 'get_usage', 'list_pins', 'pin_cid', 'renew_pin', 'replace_pin', 'upload_content'])
    for (const t of tools) {
      expect(t.description?.length ?? 0).toBeGreaterThan(60)
      expect(t.inputSchema.type).toBe('object')
      if (PAID.includes(t.name)) expect(t.description).toContain('_meta["x402/payment"]')
    }
    const upload = tools.find(t => t.name === 'upload_content')
    expect(upload?.inputSchema.required).toEqual(['content'])
    expect(upload?.description).toContain('1048576 bytes')
  })

  it('refuses an unpaid paid tool with the PaymentRequired in structuredContent and content[0].text', async () => {
    const r = await call(client, 'upload_content', { content: text, months: 2 })
    expect(r.isError).toBe(true)
    const pr = paymentRequiredOf(r)
    expect(pr).toBeDefined()
    expect(r.structuredContent).toEqual(JSON.parse(r.content[0]?.text ?? ''))
    expect(pr?.x402Version).toBe(2)
    expect(pr?.resource.url).toBe(`${pind.url}/mcp`)
    expect(pr?.accepts[0]).toMatchObject({ scheme: 'exact', network: 'eip155:167000', amount: '1000', payTo: chain.payTo })
    const bazaar = (pr?.extensions as Record<string, unknown>).bazaar as DiscoveryExtension
    expect(bazaar.info.input).toMatchObject({ type: 'mcp', tool: 'upload_content', toolName: 'upload_content', transport: 'streamable-http' })
    expect(validateDiscoveryExtension(bazaar)).toEqual({ valid: true })
    expect(validateDiscoveryExtensionSpec(bazaar as unknown as Record<string, unknown>)).toEqual({ valid: true })
    // what a facilitator catalogues from the payment a client makes of it: the tool at the endpoint
    const payload = await clientFor(chain, chain.payers[0]!.privateKey).createPaymentPayload(pr as PaymentRequired)
    expect(extractDiscoveryInfo(payload, payload.accepted)).toMatchObject({ resourceUrl: `${pind.url}/mcp`, toolName: 'upload_content', x402Version: 2 })
    // the declared input schema is the one tools/list gives (which names its draft)
    const { tools } = await client.listTools()
    const { $schema: _draft, ...listed } = (tools.find(t => t.name === 'upload_content')?.inputSchema ?? {}) as Record<string, unknown>
    expect((bazaar.info.input as unknown as { inputSchema: unknown }).inputSchema).toEqual(listed)
  })

  it('uploads paid content: the balance moves by exactly the quote, the result carries the settlement and a token, the gateway serves it', async () => {
    const payer = chain.payers[0]!
    const quote = await call(client, 'get_price_quote', { operation: 'upload', bytes: Buffer.byteLength(text), months: 2 })
    expect(quote.isError).toBeFalsy()
    const amount = BigInt(quote.structuredContent?.quote.price.amount)
    const before = await usdcBalance(chain, payer.address)
    const { challenge, payment, result } = await callPaying(client, chain, payer.privateKey, 'upload_content', { content: text, filename: 'hello.txt', months: 2 })
    expect(challenge.accepts[0]?.amount).toBe(amount.toString())
    expect(result.isError).toBeFalsy()
    expect(await usdcBalance(chain, payer.address)).toBe(before - amount)
    const settlement = result._meta?.['x402/payment-response']
    expect(settlement).toMatchObject({ success: true, network: 'eip155:167000' })
    expect(settlement.payer.toLowerCase()).toBe(payer.address.toLowerCase())
    const body = result.structuredContent as Record<string, any>
    expect(body).toMatchObject({ status: 'pinned', name: 'hello.txt', size: Buffer.byteLength(text), months: 2 })
    expect(body.wallet_token).toEqual(expect.any(String))
    expect(JSON.parse(result.content[0]?.text ?? '')).toEqual(body)
    const served = await fetch(`${pind.url}/ipfs/${body.cid as string}`)
    expect(served.status).toBe(200)
    expect(await served.text()).toBe(text)
    uploaded = { requestid: body.requestid, cid: body.cid, token: body.wallet_token, payment }
  })

  it('pins a CAR given inline in base64 (format car) as its root DAG, and refuses one without its root before settling', async () => {
    const payer = chain.payers[0]!
    const dag = await dagOf(randomBytes(700_000))
    const car = Buffer.from(await carOf([dag.root], dag.blocks))
    const before = await usdcBalance(chain, payer.address)
    const { challenge, result } = await callPaying(client, chain, payer.privateKey, 'upload_content', { content: car.toString('base64'), encoding: 'base64', format: 'car' })
    expect(result.isError, result.content[0]?.text).toBeFalsy()
    expect(result.structuredContent?.cid).toBe(dag.root.toString())
    expect(await usdcBalance(chain, payer.address)).toBe(before - BigInt(challenge.accepts[0]!.amount))
    const served = await fetch(`${pind.url}/ipfs/${dag.root.toString()}`)
    expect(served.status).toBe(200)
    expect((await served.arrayBuffer()).byteLength).toBe(700_000)

    const broken = Buffer.from(await carOf([dag.root], [])) // its root missing
    const refused = await callPaying(client, chain, payer.privateKey, 'upload_content', { content: broken.toString('base64'), encoding: 'base64', format: 'car', months: 2 })
    expect(refused.result.isError).toBe(true)
    expect(refused.result.content[0]?.text).toMatch(/^BAD_REQUEST: /)
    expect(await usdcBalance(chain, payer.address)).toBe(before - BigInt(challenge.accepts[0]!.amount))
  })

  it('answers the same payment sent again with the same result and no second charge; refuses it for other content or another tool', async () => {
    const payer = chain.payers[0]!
    const before = await usdcBalance(chain, payer.address)
    const again = await call(client, 'upload_content', { content: text, filename: 'hello.txt', months: 2 }, uploaded.payment as any)
    expect(again.isError).toBeFalsy()
    expect(again.structuredContent).toMatchObject({ requestid: uploaded.requestid, cid: uploaded.cid, replayed: true })
    expect(again.structuredContent?.wallet_token).toBeUndefined()
    expect(again._meta?.['x402/payment-response']).toBeUndefined()
    const other = await call(client, 'upload_content', { content: `${text}!`, months: 2 }, uploaded.payment as any)
    expect(other.isError).toBe(true)
    expect(other.content[0]?.text).toMatch(/PAYMENT_REQUIRED|already used/)
    const otherTool = await call(client, 'pin_cid', { cid: uploaded.cid, months: 2 }, uploaded.payment as any)
    expect(otherTool.isError).toBe(true)
    expect(otherTool.content[0]?.text).toMatch(/already used/)
    expect(await usdcBalance(chain, payer.address)).toBe(before)
  })

  it('pins a CID, then the owner tools work with the token as an argument or as Authorization, and only for its wallet', async () => {
    const payer = chain.payers[1]!
    const before = await usdcBalance(chain, payer.address)
    const quote = await call(client, 'get_price_quote', { operation: 'pin', cid: uploaded.cid, months: 1 })
    const amount = BigInt(quote.structuredContent?.quote.price.amount)
    const { result } = await callPaying(client, chain, payer.privateKey, 'pin_cid', { cid: uploaded.cid, name: 'by-mcp', meta: { app: 'test' }, months: 1 })
    expect(result.isError).toBeFalsy()
    expect(await usdcBalance(chain, payer.address)).toBe(before - amount)
    expect(result._meta?.['x402/payment-response']).toMatchObject({ success: true })
    const pin = result.structuredContent?.pin as Record<string, any>
    const token = result.structuredContent?.wallet_token as string
    expect(pin.pin).toMatchObject({ cid: uploaded.cid, name: 'by-mcp', meta: { app: 'test' } })

    const got = await call(client, 'get_pin', { requestid: pin.requestid, wallet_token: token })
    expect(got.isError).toBeFalsy()
    expect(got.structuredContent?.pin.requestid).toBe(pin.requestid)
    // the first payer's token does not see the second payer's pin
    const foreign = await call(client, 'get_pin', { requestid: pin.requestid, wallet_token: uploaded.token })
    expect(foreign.isError).toBe(true)
    expect(foreign.content[0]?.text).toMatch(/^NOT_FOUND: /)
    const none = await call(client, 'get_pin', { requestid: pin.requestid })
    expect(none.isError).toBe(true)
    expect(none.content[0]?.text).toMatch(/^UNAUTHORIZED: .*wallet_token/)

    const owner = await mcpClient(pind.url, { authorization: `Bearer ${token}` })
    try {
      const listed = await call(owner, 'list_pins', { status: ['queued', 'pinning', 'pinned'], name: 'by-mcp' })
      expect(listed.isError).toBeFalsy()
      expect(listed.structuredContent).toMatchObject({ count: 1, results: [{ requestid: pin.requestid }] })
      const usage = await call(owner, 'get_usage', {})
      expect(usage.isError).toBeFalsy()
      expect(JSON.stringify(usage.structuredContent)).toContain(amount.toString())
      const badFilter = await call(owner, 'list_pins', { before: 'yesterday' })
      expect(badFilter.isError).toBe(true)
      expect(badFilter.content[0]?.text).toMatch(/^BAD_REQUEST: .*before/)

      const renewBefore = await usdcBalance(chain, payer.address)
      const renewed = await callPaying(owner, chain, payer.privateKey, 'renew_pin', { requestid: pin.requestid, months: 2 })
      expect(renewed.result.isError).toBeFalsy()
      expect(renewed.result.structuredContent?.pin.info.months).toBe('3')
      expect(await usdcBalance(chain, payer.address)).toBe(renewBefore - BigInt(renewed.challenge.accepts[0]!.amount))

      const deleted = await call(owner, 'delete_pin', { requestid: pin.requestid })
      expect(deleted.isError).toBeFalsy()
      const gone = await call(owner, 'get_pin', { requestid: pin.requestid })
      expect(gone.content[0]?.text).toMatch(/^NOT_FOUND: /)
    } finally {
      await owner.close()
    }
  })

  it('replaces a pin (paid, the old requestid gone), answers a pin\'s payment sent again with the same pin, and a malformed payment with the challenge', async () => {
    const payer = chain.payers[0]!
    const cid = uploaded.cid
    const pinned = await callPaying(client, chain, payer.privateKey, 'pin_cid', { cid, name: 'first', months: 1, wallet_token: uploaded.token })
    expect(pinned.result.isError).toBeFalsy()
    const first = pinned.result.structuredContent?.pin as Record<string, any>
    // the challenge declares pin_cid to the bazaar
    expect(((pinned.challenge.extensions as Record<string, any>).bazaar as DiscoveryExtension).info.input).toMatchObject({ type: 'mcp', tool: 'pin_cid' })
    const before = await usdcBalance(chain, payer.address)
    const again = await call(client, 'pin_cid', { cid, name: 'first', months: 1, wallet_token: uploaded.token }, pinned.payment)
    expect(again.isError).toBeFalsy()
    expect(again.structuredContent?.pin.requestid).toBe(first.requestid)
    expect(again._meta?.['x402/payment-response']).toBeUndefined()
    expect(await usdcBalance(chain, payer.address)).toBe(before)

    // another wallet's token cannot replace or delete it
    const other = await callPaying(client, chain, chain.payers[1]!.privateKey, 'pin_cid', { cid, name: 'other', months: 1 })
    const otherToken = other.result.structuredContent?.wallet_token as string
    const foreignDelete = await call(client, 'delete_pin', { requestid: first.requestid, wallet_token: otherToken })
    expect(foreignDelete.content[0]?.text).toMatch(/^NOT_FOUND: /)
    const foreignReplace = await call(client, 'replace_pin', { requestid: first.requestid, cid, name: 'stolen', wallet_token: otherToken })
    expect(foreignReplace.content[0]?.text).toMatch(/^NOT_FOUND: /)

    const replaced = await callPaying(client, chain, payer.privateKey, 'replace_pin', { requestid: first.requestid, cid, name: 'second', months: 1, wallet_token: uploaded.token })
    expect(replaced.result.isError).toBeFalsy()
    expect(replaced.challenge.accepts[0]?.amount).toBe(pinned.challenge.accepts[0]?.amount)
    expect(await usdcBalance(chain, payer.address)).toBe(before - BigInt(replaced.challenge.accepts[0]!.amount))
    const second = replaced.result.structuredContent?.pin as Record<string, any>
    expect(second.requestid).not.toBe(first.requestid)
    expect(second.pin.name).toBe('second')
    expect(replaced.result.structuredContent?.wallet_token).toBeUndefined()
    expect((await call(client, 'get_pin', { requestid: first.requestid, wallet_token: uploaded.token })).content[0]?.text).toMatch(/^NOT_FOUND: /)

    // a payment that is not an x402 payload: the tool asks for payment, nothing is charged
    const junk = await call(client, 'pin_cid', { cid, months: 1 }, { x402Version: 2, payload: 'junk' } as any)
    expect(paymentRequiredOf(junk)?.error).toMatch(/does not match|not a valid/)
    expect(await usdcBalance(chain, payer.address)).toBe(before - BigInt(replaced.challenge.accepts[0]!.amount))
  })

  it('answers a payment that does not verify (the payer has no USDC) with a PaymentRequired naming the reason, and nothing is pinned', async () => {
    const broke = generatePrivateKey()
    const { result } = await callPaying(client, chain, broke, 'upload_content', { content: `${text} from a broke payer` })
    expect(result.isError).toBe(true)
    const pr = paymentRequiredOf(result)
    expect(pr?.error).toMatch(/the payment was refused: .*insufficient/)
    expect(pr?.accepts[0]?.amount).toBe('1000')
    expect(result.structuredContent).toEqual(JSON.parse(result.content[0]?.text ?? ''))
  })

  it('refuses inline content over the limit before any quote, and bad arguments with a clear message', async () => {
    const big = await call(client, 'upload_content', { content: Buffer.alloc(1024 * 1024 + 1, 7).toString('base64'), encoding: 'base64' })
    expect(big.isError).toBe(true)
    expect(paymentRequiredOf(big)).toBeUndefined()
    expect(big.content[0]?.text).toMatch(/^PAYLOAD_TOO_LARGE: the content is 1048577 bytes; upload_content takes at most 1048576 bytes inline/)

    const notBase64 = await call(client, 'upload_content', { content: 'not base64!', encoding: 'base64' })
    expect(notBase64.content[0]?.text).toMatch(/not valid base64/)
    const months = await call(client, 'upload_content', { content: 'x', months: 0 })
    expect(months.isError).toBe(true)
    expect(months.content[0]?.text).toMatch(/months/)
    const cid = await call(client, 'pin_cid', { cid: 'not-a-cid' })
    expect(cid.isError).toBe(true)
    expect(cid.content[0]?.text).toMatch(/^BAD_REQUEST: .*cid/i)
    const unknown = await call(client, 'no_such_tool', {})
    expect(unknown.isError).toBe(true)
    expect(unknown.content[0]?.text).toMatch(/no_such_tool/)
  })

  it('answers GET and DELETE with 405; a batch, a message nested too deeply and a body over the limit with an error', async () => {
    for (const method of ['GET', 'DELETE']) {
      const r = await fetch(`${pind.url}/mcp`, { method, headers: { accept: 'text/event-stream' } })
      expect(r.status).toBe(405)
      expect(r.headers.get('allow')).toContain('POST')
    }
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    const list = { jsonrpc: '2.0', method: 'tools/list', params: {} }
    const batch = await fetch(`${pind.url}/mcp`, { method: 'POST', headers, body: JSON.stringify(Array.from({ length: 50 }, (_, i) => ({ ...list, id: i }))) })
    expect(batch.status).toBe(400)
    expect((await batch.json() as { error: { message: string } }).error.message).toMatch(/batches are not accepted/)
    const deep = await fetch(`${pind.url}/mcp`, { method: 'POST', headers, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pin_cid","arguments":{"cid":"x"},"_meta":{"x402/payment":${'['.repeat(100_000)}${']'.repeat(100_000)}}}}` })
    expect(deep.status).toBe(400)
    expect((await deep.json() as { error: { message: string } }).error.message).toMatch(/nested more than 32 levels/)
    const huge = await fetch(`${pind.url}/mcp`, { method: 'POST', headers, body: JSON.stringify({ ...list, id: 1, params: { pad: 'x'.repeat(2 * 1024 * 1024) } }) })
    expect(huge.status).toBe(413)
  })

  it('is named by the discovery documents: /.well-known/x402 (every tool, the paid ones with their terms), llms.txt, the agent card, the landing page', async () => {
    const { tools } = await client.listTools()
    const x402 = await (await fetch(`${pind.url}/.well-known/x402`)).json() as { mcp: { endpoint: string, transport: string, tools: Array<{ tool: string, payment?: Record<string, unknown> }> } }
    expect(x402.mcp.endpoint).toBe(`${pind.url}/mcp`)
    expect(x402.mcp.tools.map(t => t.tool).sort()).toEqual(tools.map(t => t.name).sort())
    expect(x402.mcp.tools.filter(t => t.payment != null).map(t => t.tool).sort()).toEqual([...PAID].sort())
    const llms = await (await fetch(`${pind.url}/llms.txt`)).text()
    for (const t of tools) expect(llms).toContain(`\`${t.name}\``)
    expect(llms).toContain(`"url":"${pind.url}/mcp"`)
    const card = await (await fetch(`${pind.url}/.well-known/agent-card.json`)).json() as { skills: Array<{ id: string, description: string }> }
    expect(card.skills.find(s => s.id === 'mcp')?.description).toContain(`${pind.url}/mcp`)
    expect(await (await fetch(`${pind.url}/`)).text()).toContain('/mcp</code>')
  })
})

describe('POST /mcp and the operator\'s denials', () => {
  it('refuses a pin of denied content before any quote, and its upload after verifying the payment and before settling it: nothing is charged', async () => {
    const denied = await runPind(['deny', 'add', uploaded.cid, '--reason', 'test takedown', '--data-dir', pind.dataDir])
    expect(denied.code, denied.err).toBe(0)
    const pin = await call(client, 'pin_cid', { cid: uploaded.cid })
    expect(pin.isError).toBe(true)
    expect(paymentRequiredOf(pin)).toBeUndefined()
    expect(pin.content[0]?.text).toMatch(/^UNAVAILABLE_FOR_LEGAL_REASONS: /)
    const payer = chain.payers[1]!
    const before = await usdcBalance(chain, payer.address)
    const { result } = await callPaying(client, chain, payer.privateKey, 'upload_content', { content: text })
    expect(result.isError).toBe(true)
    expect(result.content[0]?.text).toMatch(/^UNAVAILABLE_FOR_LEGAL_REASONS: /)
    expect(result.structuredContent?.status).toBe(451)
    expect(await usdcBalance(chain, payer.address)).toBe(before)
    expect(await runPind(['deny', 'rm', uploaded.cid, '--data-dir', pind.dataDir])).toMatchObject({ code: 0 })
  })
})

describe('POST /mcp under the per-client limits', () => {
  it('counts paid tools and quotes against the unpaid-write limit, and initialize, tools/list and reads against the read limit', async () => {
    const limited = await startPind({ args: ['--rate-limit-unpaid', '3', '--rate-limit-reads', '1000'] })
    try {
      const c = await mcpClient(limited.url) // initialize and its notification: reads
      for (let i = 0; i < 5; i++) await c.listTools() // reads
      // a refused message counts as an unpaid write, as a refused HTTP write does
      const batch = await fetch(`${limited.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '[]' })
      expect(batch.status).toBe(400)
      const refusals: string[] = []
      for (let i = 0; i < 2; i++) {
        // no payments configured on this one: each is a tool error, and each counts
        const r = await call(c, 'pin_cid', { cid: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy' })
        refusals.push(r.content[0]?.text ?? '')
      }
      expect(refusals.every(t => t.startsWith('SERVICE_UNAVAILABLE: payments are not configured'))).toBe(true)
      await expect(call(c, 'upload_content', { content: 'x' })).rejects.toThrow(/TOO_MANY_REQUESTS.*unpaid write requests/)
      // reads still go through
      expect((await c.listTools()).tools.length).toBe(9)
      const read = await call(c, 'get_pin', { requestid: 'x', wallet_token: 'not-a-token' })
      expect(read.content[0]?.text).toMatch(/^UNAUTHORIZED: /)
      // a large body is counted before it is read: one may run ahead of the empty allowance (its payment
      // would be inside), and having turned out unpaid it is owed: the next is refused unread
      const big = 'x'.repeat(200_000)
      expect((await call(c, 'upload_content', { content: big })).content[0]?.text).toMatch(/^SERVICE_UNAVAILABLE: /)
      await expect(call(c, 'upload_content', { content: big })).rejects.toThrow(/TOO_MANY_REQUESTS/)
      await c.close()
    } finally {
      await limited.stop()
    }
  })
})
