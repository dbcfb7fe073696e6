/**
 * Issue 38, discovery: the real pind (bundle) on the dev chain, paid with @x402/fetch.
 * - Every paid route's 402 carries the x402 `bazaar` extension, which @x402/extensions' own
 *   validators accept (the info against its schema, the spec's rules, the routeTemplate) and
 *   from which a facilitator extracts the resource to catalogue, as it would from the
 *   payment payload an x402 client echoes.
 * - Its JSON Schemas against real requests: every example request (each `examples` entry of
 *   the body schema, and the info's own example) is accepted by pind once paid; every
 *   request the schema rejects (checked with the same validator) gets a 4xx that is not a
 *   402, even when the client pays whatever it is asked.
 * - /.well-known/x402, the OpenAPI `x-payment-info`, llms.txt and the agent card agree on
 *   the paid operations, and their links resolve.
 * - The landing page in Debian's chromium (test/helpers/browser.ts: nothing leaves
 *   loopback): rendered, every link resolves; a screenshot is kept as
 *   test-results/landing.png (git-ignored).
 * One chain, one pind, one browser.
 */
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import type { PaymentRequired } from '@x402/core/types'
import { toClientEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { extractDiscoveryInfo, isValidRouteTemplate, validateDiscoveryExtension, validateDiscoveryExtensionSpec, type BodyDiscoveryExtension, type DiscoveryExtension } from '@x402/extensions/bazaar'
import { x402Client } from '@x402/fetch'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { launchBrowser, type TestBrowser } from '../helpers/browser.js'
import { chainArgs, payingFetch } from '../helpers/paying-client.js'
import { ROOT, startPind, type PindProcess } from '../helpers/pind.js'

const SCREENSHOT = join(ROOT, 'test-results', 'landing.png')
const CID = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const ROUTES = ['pin', 'replace', 'renew', 'upload', 'ticket'] as const
type Route = typeof ROUTES[number]

type Json = Record<string, any>
interface Input { type: 'http', method: string, bodyType: 'json' | 'form-data', body: Json, headers: Record<string, string>, pathParams?: Record<string, string> }

let chain: DevChain
let pind: PindProcess
let pay: typeof fetch
/** the pin the owner routes (replace, renew) act on, and its owner's token */
let requestid: string
let token: string
/** each route's 402 challenge, decoded */
const challenges = new Map<Route, PaymentRequired>()
/** the size of each PAYMENT-REQUIRED header */
const headerBytes = new Map<Route, number>()

const bazaarOf = (r: Route): BodyDiscoveryExtension => (challenges.get(r)?.extensions as Json).bazaar as BodyDiscoveryExtension
const inputOf = (r: Route): Input => bazaarOf(r).info.input as unknown as Input

/** the unpaid request that gets each route's 402 (the owner routes on the pin made in beforeAll) */
async function unpaid (r: Route): Promise<Response> {
  const json = (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${pind.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  switch (r) {
    case 'pin': return await json('/pins', { cid: CID })
    case 'replace': return await json(`/pins/${requestid}`, { cid: CID }, { authorization: `Bearer ${token}` })
    case 'renew': return await json(`/pins/${requestid}/renew`, {}, { authorization: `Bearer ${token}` })
    case 'upload': {
      const form = new FormData()
      form.append('file', new Blob(['x']), 'x.txt')
      return await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'x-upload-size': '1' }, body: form })
    }
    case 'ticket': return await fetch(`${pind.url}/upload/tickets`, { method: 'POST', headers: { 'x-upload-size': '1048576' } })
  }
}

/** the concrete request an input describes: its URL (the routeTemplate filled in), method, headers and body */
function requestOf (r: Route, input: Input): { url: string, init: RequestInit } {
  const template = bazaarOf(r).routeTemplate ?? new URL(challenges.get(r)!.resource.url).pathname
  const path = template.replace(/:([a-zA-Z_][a-zA-Z0-9_]*)/g, (_m, name: string) => encodeURIComponent(input.pathParams?.[name] ?? ''))
  // a header the example names with a placeholder is sent with the real value (the owner's token)
  const headers: Record<string, string> = Object.fromEntries(Object.entries(input.headers).map(([k, v]) => [k, k === 'Authorization' && v.includes('<') ? `Bearer ${token}` : v]))
  let body: FormData | string
  if (input.bodyType === 'form-data') {
    const form = new FormData()
    for (const [name, value] of Object.entries(input.body)) form.append(name, new Blob([String(value)]), `${name}.txt`)
    body = form
  } else {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(input.body)
  }
  return { url: `${pind.url}${path}`, init: { method: input.method, headers, body } }
}

/** does the route's bazaar schema accept this input? (the library's own validator) */
function schemaAccepts (r: Route, input: Input): { valid: boolean, errors?: string[] } {
  const ext = bazaarOf(r)
  return validateDiscoveryExtension({ ...ext, info: { ...ext.info, input } } as DiscoveryExtension)
}

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  const { args, env } = chainArgs(chain)
  // --pin-probe-timeout 0: a CID nobody has is quoted at once (at the minimum price)
  pind = await startPind({ args: [...args, '--pin-probe-timeout', '0'], env })
  pay = payingFetch(chain, chain.payers[0]!.privateKey)
  const made = await pay(`${pind.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid: CID, name: 'owned' }) })
  expect(made.status, await made.clone().text()).toBe(202)
  requestid = (await made.json() as { requestid: string }).requestid
  token = made.headers.get('x-wallet-auth-token') as string
  for (const r of ROUTES) {
    const res = await unpaid(r)
    expect(res.status, `${r}: ${await res.clone().text()}`).toBe(402)
    const header = res.headers.get('payment-required') as string
    headerBytes.set(r, header.length)
    challenges.set(r, decodePaymentRequiredHeader(header))
  }
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

describe('the bazaar extension of every 402', () => {
  it.each(ROUTES)('%s: valid by @x402/extensions, with the method, headers and (for a parameterised route) its template', (r) => {
    const pr = challenges.get(r)!
    const ext = bazaarOf(r)
    expect(validateDiscoveryExtension(ext as DiscoveryExtension)).toEqual({ valid: true })
    expect(validateDiscoveryExtensionSpec(ext as unknown as Json)).toEqual({ valid: true })
    const input = inputOf(r)
    expect(input).toMatchObject({ type: 'http', method: 'POST' })
    expect(Object.keys(input.headers)).toContain('X-Pin-Duration-Months')
    expect(ext.info.output).toMatchObject({ type: 'json', example: expect.any(Object) })
    expect(pr.resource).toMatchObject({ serviceName: 'pind', mimeType: 'application/json' })
    if (r === 'replace' || r === 'renew') {
      expect(ext.routeTemplate).toBe(r === 'replace' ? '/pins/:requestid' : '/pins/:requestid/renew')
      expect(isValidRouteTemplate(ext.routeTemplate)).toBe(true)
      expect(input.pathParams).toEqual({ requestid })
    } else {
      expect(ext.routeTemplate).toBeUndefined()
    }
  })

  it.each(ROUTES)('%s: a facilitator catalogues it from the payment payload an x402 client echoes', async (r) => {
    const client = x402Client.fromConfig({
      schemes: [{ network: 'eip155:167000', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(chain.payers[0]!.privateKey))) }],
      spendControls: { allowedAssets: [{ network: 'eip155:167000', asset: chain.usdc }] }
    })
    const payload = await client.createPaymentPayload(challenges.get(r)!)
    const found = extractDiscoveryInfo(payload, payload.accepted)
    // a parameterised route is catalogued once, under its template
    const template = bazaarOf(r).routeTemplate
    const url = challenges.get(r)!.resource.url
    expect(found).toMatchObject({ resourceUrl: template != null ? `${new URL(url).origin}${template}` : url, method: 'POST', x402Version: 2 })
    if (template != null) expect(found).toMatchObject({ routeTemplate: template })
  })

  it('keeps PAYMENT-REQUIRED well inside the 16 KiB a client reads of a response head (Node\'s default)', () => {
    console.log(`PAYMENT-REQUIRED bytes: ${JSON.stringify(Object.fromEntries(headerBytes))}`)
    for (const r of ROUTES) expect(headerBytes.get(r), r).toBeLessThan(8 * 1024)
  })

  it('the schema of X-Pin-Duration-Months admits exactly the months pind sells (1-24 by default)', () => {
    const input = inputOf('pin')
    const months = (m: string): boolean => schemaAccepts('pin', { ...input, headers: { 'X-Pin-Duration-Months': m } }).valid
    expect(['1', '9', '10', '24'].map(months)).toEqual([true, true, true, true])
    expect(['0', '25', '01', '1.5', 'six', ''].map(months)).toEqual([false, false, false, false, false, false])
  })
})

describe('the JSON Schemas against real requests', () => {
  it('every example request in the schemas is accepted by pind, paid', async () => {
    let sent = 0
    for (const r of ROUTES) {
      const input = inputOf(r)
      const examples = [input.body, ...((bazaarOf(r).schema.properties.input.properties.body as Json).examples as Json[] ?? [])]
      expect(examples.length, r).toBeGreaterThan(1)
      for (const body of examples) {
        const example: Input = { ...input, body, ...(input.pathParams != null ? { pathParams: { requestid } } : {}) }
        expect(schemaAccepts(r, example), `${r} ${JSON.stringify(body)}`).toEqual({ valid: true })
        const { url, init } = requestOf(r, example)
        const res = await pay(url, init)
        expect(res.status, `${r} ${JSON.stringify(body)}: ${await res.clone().text()}`).toBeGreaterThanOrEqual(200)
        expect(res.status).toBeLessThan(300)
        expect(res.headers.get('payment-response'), r).not.toBeNull()
        // a replacement's pin is the one the next owner route acts on
        if (r === 'replace') requestid = (await res.json() as { requestid: string }).requestid
        sent++
      }
    }
    expect(sent).toBeGreaterThanOrEqual(ROUTES.length * 2)
  })

  /** requests each route's schema rejects: what changes from the route's example */
  const rejected: Record<Route, Array<[string, (i: Input) => Input]>> = {
    pin: [
      ['no cid', i => ({ ...i, body: { name: 'x' } })],
      ['cid not a string', i => ({ ...i, body: { cid: 42 } })],
      ['name over 255 characters', i => ({ ...i, body: { cid: CID, name: 'n'.repeat(256) } })],
      ['a meta value not a string', i => ({ ...i, body: { cid: CID, meta: { app: 1 } } })],
      ['0 months', i => ({ ...i, headers: { ...i.headers, 'X-Pin-Duration-Months': '0' } })],
      ['25 months', i => ({ ...i, headers: { ...i.headers, 'X-Pin-Duration-Months': '25' } })],
      ['X-Pin-Size not a number', i => ({ ...i, headers: { ...i.headers, 'X-Pin-Size': 'big' } })]
    ],
    replace: [
      ['no Authorization', i => ({ ...i, headers: { 'X-Pin-Duration-Months': '1' } })],
      ['no cid', i => ({ ...i, body: {} })]
    ],
    renew: [
      ['no Authorization', i => ({ ...i, headers: { 'X-Pin-Duration-Months': '1' } })],
      ['months "six"', i => ({ ...i, headers: { ...i.headers, 'X-Pin-Duration-Months': 'six' } })]
    ],
    upload: [
      ['no file part', i => ({ ...i, body: { other: 'hello' } })],
      ['0 months', i => ({ ...i, headers: { ...i.headers, 'X-Pin-Duration-Months': '0' } })],
      ['X-Upload-Size not a number', i => ({ ...i, headers: { ...i.headers, 'X-Upload-Size': 'twelve' } })]
    ],
    ticket: [
      ['no X-Upload-Size', i => ({ ...i, headers: { 'X-Pin-Duration-Months': '1' } })],
      ['25 months', i => ({ ...i, headers: { ...i.headers, 'X-Pin-Duration-Months': '25' } })]
    ]
  }

  it.each(ROUTES)('%s: a request the schema rejects gets a 4xx with a reason, even paid', async (r) => {
    for (const [what, change] of rejected[r]) {
      const input = change({ ...inputOf(r), ...(inputOf(r).pathParams != null ? { pathParams: { requestid } } : {}) })
      expect(schemaAccepts(r, input).valid, `${r}: the schema accepts a request with ${what}`).toBe(false)
      const { url, init } = requestOf(r, input)
      // the paying client pays whatever 402 it is given: what comes back is pind's verdict on the request
      const res = await pay(url, init)
      const body = await res.json() as { error?: { reason?: string, details?: string } }
      expect(res.status, `${r} with ${what}: ${JSON.stringify(body)}`).toBeGreaterThanOrEqual(400)
      expect(res.status, `${r} with ${what}`).toBeLessThan(500)
      expect(res.status, `${r} with ${what}`).not.toBe(402)
      expect(body.error, `${r} with ${what}`).toMatchObject({ reason: expect.any(String), details: expect.any(String) })
      expect(res.headers.get('payment-response'), `${r} with ${what}: nothing is settled`).toBeNull()
    }
  })
})

describe('the discovery documents', () => {
  const get = async (path: string): Promise<Response> => await fetch(`${pind.url}${path}`)

  it('/.well-known/x402 lists the paid resources, and the OpenAPI document marks exactly those operations with x-payment-info', async () => {
    const res = await get('/.well-known/x402')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    const doc = await res.json() as { version: number, resources: string[], items: Array<{ method: string, resource: string, routeTemplate?: string, payment: Json }> }
    expect(doc.version).toBe(1)
    // every resource a 402 above named, by its URL or (parameterised) its template
    const named = ROUTES.map(r => bazaarOf(r).routeTemplate != null ? `${pind.url}${bazaarOf(r).routeTemplate!.replace(':requestid', '{requestid}')}` : challenges.get(r)!.resource.url)
    expect(doc.items.map(i => i.resource).sort()).toEqual([...named].sort())
    expect(doc.resources.sort()).toEqual(named.filter(u => !u.includes('{')).sort())
    for (const i of doc.items) expect(i.payment).toMatchObject({ protocol: 'x402', x402Version: 2, scheme: 'exact', network: 'eip155:167000', asset: chain.usdc, payTo: chain.payTo })

    const api = await (await get('/openapi.json')).json() as { paths: Record<string, Record<string, Json>> }
    const marked: string[] = []
    const with402: string[] = []
    for (const [path, item] of Object.entries(api.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (typeof op !== 'object' || op == null || op.responses == null) continue
        if (op['x-payment-info'] != null) {
          marked.push(`${method.toUpperCase()} ${pind.url}${path}`)
          expect(op['x-payment-info']).toEqual(doc.items.find(i => i.resource === `${pind.url}${path}`)?.payment)
        }
        if (op.responses['402'] != null) with402.push(`${method.toUpperCase()} ${pind.url}${path}`)
      }
    }
    expect(marked.sort()).toEqual(doc.items.map(i => `${i.method} ${i.resource}`).sort())
    // every operation that can answer 402 is a paid one
    expect(with402.sort()).toEqual(marked.sort())
    expect(api.paths['/llms.txt']).toBeDefined()
  })

  it('llms.txt: Markdown of a few hundred lines at most, naming every paid call, the price and how to pay; its links resolve', async () => {
    const res = await get('/llms.txt')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/markdown/)
    const text = await res.text()
    const lines = text.split('\n')
    expect(lines[0]).toBe('# pind')
    expect(lines.length).toBeGreaterThan(50)
    expect(lines.length).toBeLessThan(400)
    for (const path of ['/pins', '/pins/{requestid}', '/pins/{requestid}/renew', '/upload', '/upload/tickets']) expect(text).toContain(`POST ${pind.url}${path}\``)
    for (const word of ['PAYMENT-REQUIRED', 'PAYMENT-SIGNATURE', 'PAYMENT-RESPONSE', 'X-Pin-Duration-Months', '0.100000 USDC per GB per month', chain.usdc, 'eip155:167000']) expect(text).toContain(word)
    const links = [...text.matchAll(/\]\((http[^)]+)\)/g)].map(m => m[1]!)
    expect(links.length).toBe(4)
    for (const link of links) expect((await fetch(link)).status, link).toBe(200)
  })

  it('the agent card links the landing page, the OpenAPI document, llms.txt and /.well-known/x402', async () => {
    const card = await (await get('/.well-known/agent-card.json')).json() as { documentationUrl: string, capabilities: { extensions: Array<{ params: { discovery: Record<string, string> } }> } }
    const links = card.capabilities.extensions[0]!.params.discovery
    expect(Object.keys(links).sort()).toEqual(['agentCard', 'landing', 'llmsTxt', 'openapi', 'x402'])
    for (const link of [...Object.values(links), card.documentationUrl]) {
      expect(link.startsWith(pind.url), link).toBe(true)
      expect((await fetch(link)).status, link).toBe(200)
    }
  })
})

describe('the landing page in a browser', () => {
  let tb: TestBrowser | undefined
  afterAll(async () => { await tb?.close() })

  it('renders what the service is, its price and how an agent pays; every link resolves; a screenshot is saved', async () => {
    tb = await launchBrowser()
    const context = await tb.browser.newContext()
    const requested: string[] = []
    context.on('request', req => { requested.push(req.url()) })
    const page = await context.newPage()
    const res = await page.goto(`${pind.url}/`)
    expect(res?.status()).toBe(200)
    expect(await page.title()).toBe('pind: paid IPFS pinning')
    const text = await page.locator('body').innerText()
    for (const words of ['0.100000 USDC', 'per GB per month', 'How an agent pays', 'PAYMENT-SIGNATURE', 'POST /pins', 'POST /upload']) expect(text).toContain(words)
    // the inline stylesheet applies (the page's CSP allows it, and nothing else)
    expect(await page.evaluate('getComputedStyle(document.body).maxWidth')).not.toBe('none')
    const hrefs = await page.$$eval('a[href]', as => as.map(a => (a as unknown as { href: string }).href))
    expect(hrefs.length).toBeGreaterThanOrEqual(8)
    for (const href of [...new Set(hrefs)]) {
      expect(href.startsWith(pind.url), href).toBe(true)
      const r = await page.request.get(href)
      expect(r.status(), href).toBe(200)
    }
    // each machine-readable document opens as what it is
    await page.click('text=llms.txt >> nth=0')
    expect(page.url()).toBe(`${pind.url}/llms.txt`)
    expect(await page.locator('body').innerText()).toContain('# pind')
    await page.goBack()
    mkdirSync(join(ROOT, 'test-results'), { recursive: true })
    await page.screenshot({ path: SCREENSHOT, fullPage: true })
    expect(readFileSync(SCREENSHOT).subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    console.log(`landing page screenshot: ${SCREENSHOT}`)
    // the page asked for nothing but pind's own URLs (no font, script or image from elsewhere)
    expect(requested.length).toBeGreaterThan(1)
    expect(requested.filter(u => !u.startsWith(`${pind.url}/`))).toEqual([])
  })
})
