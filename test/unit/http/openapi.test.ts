/**
 * GET /openapi.json: the document is OpenAPI 3.1 in shape, every $ref
 * resolves, every route the modules of src/http/routes register (as the
 * router lists them) has its operations (a new route without documentation
 * fails here), the bodies pind builds
 * match their schemas, and the route serves it.
 */
import { readdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Jwks, KeyStore } from '../../../src/auth/keystore.js'
import { errorAnswer } from '../../../src/http/error-catalog.js'
import { errorBody } from '../../../src/http/error-response.js'
import { openApiRoutes } from '../../../src/http/routes/openapi.js'
import { paidRoutes } from '../../../src/http/paid-routes.js'
import { Router } from '../../../src/http/router.js'
import type { PinRecord } from '../../../src/ledger/records.js'
import { createLogger } from '../../../src/kernel/log.js'
import { PaymentGate } from '../../../src/payment/gate.js'
import { X402PaymentRequired } from '../../../src/payment/x402-shapes.js'
import { buildAgentCard } from '../../../src/service/discovery/agent-card.js'
import { checkHealth } from '../../../src/service/health/health.js'
import { checkReadiness } from '../../../src/service/health/readiness.js'
import { openApiDocument } from '../../../src/http/openapi.js'
import { toPinStatus } from '../../../src/service/pins/pin-status.js'

type Obj = Record<string, unknown>

const input = {
  publicUrl: 'https://pin.example.com',
  version: '9.9.9',
  network: 'eip155:167000',
  asset: '0x07d83526730c7438048D55A4fc0b850e2aaB6f0b' as const,
  maxMonths: 24,
  uploadMaxBytes: 104_857_600
}
const doc = openApiDocument(input)

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const

/** the routes src/http/routes/*.ts register (method, router pattern) */
const ROUTES: Array<[string, string]> = [
  ['GET', '/'],
  ['GET', '/llms.txt'],
  ['GET', '/.well-known/x402'],
  ['GET', '/.well-known/agent-card.json'],
  ['GET', '/.well-known/agent.json'],
  ['GET', '/.well-known/jwks.json'],
  ['GET', '/health'],
  ['GET', '/ready'],
  ['GET', '/ipfs/*'],
  ['GET', '/openapi.json'],
  ['GET', '/pins'],
  ['GET', '/usage'],
  ['GET', '/pins/:requestid'],
  ['DELETE', '/pins/:requestid'],
  ['POST', '/auth/challenge'],
  ['POST', '/auth/token'],
  ['POST', '/pins'],
  ['POST', '/pins/:requestid'],
  ['POST', '/pins/:requestid/renew'],
  ['POST', '/upload'],
  ['POST', '/mcp'],
  ['POST', '/upload/tickets'],
  ['GET', '/upload/tickets/:ticket']
]

/** route modules whose routes are not on the public router, so not in this document: module → where they are served */
const NOT_PUBLIC: Record<string, string> = {
  'metrics.ts': 'GET /metrics, on the admin socket and the --metrics-listen address only'
}

/** stands for any dependency: registering a route must not use its dependencies, only handling a request does */
const inert: any = new Proxy({}, { get: (_t, key) => key === 'toJSON' ? () => ({}) : inert })

/** the routes the modules of src/http/routes register, as their router lists them */
async function registeredRoutes (): Promise<Array<[string, string]>> {
  const dir = new URL('../../../src/http/routes/', import.meta.url)
  const router = new Router()
  for (const file of readdirSync(dir).filter(f => f.endsWith('.ts') && NOT_PUBLIC[f] == null)) {
    const mod = await import(new URL(file, dir).href) as Record<string, unknown>
    const register = Object.entries(mod).filter(([name, v]) => typeof v === 'function' && name.endsWith('Routes'))
    expect(register.length, `${file} should export its routes as a function named *Routes`).toBeGreaterThan(0)
    for (const [, fn] of register) (fn as (r: Router, ...deps: unknown[]) => void)(router, inert, inert)
  }
  return router.list().map(r => [r.method, r.pattern])
}

/** the OpenAPI paths a router pattern stands for */
function openApiPaths (pattern: string): string[] {
  if (pattern === '/ipfs/*') return ['/ipfs/{cid}', '/ipfs/{cid}/{path}']
  if (pattern.includes('*')) throw new Error(`map the wildcard route ${pattern} to its OpenAPI paths in this test`)
  return [pattern.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]
}

function resolvePointer (ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`external or malformed $ref ${ref}`)
  let node: unknown = doc
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~')
    if (node == null || typeof node !== 'object' || !(key in node)) throw new Error(`unresolved $ref ${ref}`)
    node = (node as Obj)[key]
  }
  return node
}

/** follows $ref chains */
function deref<T = Obj> (node: unknown): T {
  let n = node as Obj
  for (let i = 0; typeof n?.$ref === 'string' && i < 10; i++) n = resolvePointer(n.$ref) as Obj
  return n as T
}

function walk (node: unknown, visit: (n: Obj, at: string) => void, at = '#'): void {
  if (Array.isArray(node)) { node.forEach((v, i) => { walk(v, visit, `${at}/${i}`) }); return }
  if (node == null || typeof node !== 'object') return
  visit(node as Obj, at)
  for (const [k, v] of Object.entries(node)) walk(v, visit, `${at}/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`)
}

/** every object and array in a tree */
function identities (root: unknown, out = new Set<unknown>()): Set<unknown> {
  if (root == null || typeof root !== 'object') return out
  out.add(root)
  for (const v of Object.values(root)) identities(v, out)
  return out
}

function operations (): Array<{ path: string, method: string, op: Obj, item: Obj }> {
  const out: Array<{ path: string, method: string, op: Obj, item: Obj }> = []
  for (const [path, item] of Object.entries(doc.paths as Record<string, Obj>)) {
    for (const method of METHODS) if (item[method] != null) out.push({ path, method, op: item[method] as Obj, item })
  }
  return out
}

/**
 * Just enough JSON Schema 2020-12 to check pind's real bodies against their
 * schemas; also flags properties a schema does not document (unless it
 * allows additional ones), so a new field in a body fails until documented.
 */
function problems (value: unknown, s: Obj, at = '$', branch = false): string[] {
  s = deref(s)
  const out: string[] = []
  const allOf = (s.allOf as Obj[] | undefined) ?? []
  for (const sub of allOf) out.push(...problems(value, sub, at, true))
  if (Array.isArray(s.anyOf) && !(s.anyOf as Obj[]).some(sub => problems(value, sub, at).length === 0)) out.push(`${at}: matches no anyOf branch`)
  if ('const' in s && value !== s.const) out.push(`${at}: ${JSON.stringify(value)} is not ${JSON.stringify(s.const)}`)
  if (Array.isArray(s.enum) && !s.enum.includes(value)) out.push(`${at}: ${JSON.stringify(value)} not in enum`)
  const types = s.type == null ? [] : Array.isArray(s.type) ? s.type : [s.type]
  const typeOf = (v: unknown): string => v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v
  if (types.length > 0 && !types.some(t => t === typeOf(value) || (t === 'number' && typeof value === 'number'))) {
    return [...out, `${at}: ${typeOf(value)} is not ${types.join('|')}`]
  }
  if (typeof value === 'string') {
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern).test(value)) out.push(`${at}: "${value}" does not match ${s.pattern}`)
    if (s.format === 'date-time' && Number.isNaN(Date.parse(value))) out.push(`${at}: "${value}" is not a date-time`)
  }
  if (Array.isArray(value) && s.items != null) value.forEach((v, i) => { out.push(...problems(v, s.items as Obj, `${at}[${i}]`)) })
  if (value != null && typeof value === 'object' && !Array.isArray(value)) {
    const v = value as Obj
    for (const r of (s.required as string[] | undefined) ?? []) if (!(r in v)) out.push(`${at}: missing ${r}`)
    const props = (s.properties ?? {}) as Obj
    // documented: this schema's properties and those of its allOf branches (a branch alone documents only part)
    const documented = new Set([...Object.keys(props), ...allOf.flatMap(b => Object.keys((deref(b).properties ?? {}) as Obj))])
    for (const [k, sub] of Object.entries(v)) {
      if (k in props) out.push(...problems(sub, props[k] as Obj, `${at}.${k}`))
      else if (s.additionalProperties === false) out.push(`${at}: ${k} is not allowed`)
      else if (typeof s.additionalProperties === 'object') out.push(...problems(sub, s.additionalProperties as Obj, `${at}.${k}`))
      else if (!branch && s.additionalProperties !== true && documented.size > 0 && !documented.has(k)) out.push(`${at}: ${k} is not documented`)
    }
  }
  return out
}

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 in shape and plain JSON', () => {
    expect(doc.openapi).toBe('3.1.0')
    const info = doc.info as Obj
    expect(info.title).toBe('pind')
    expect(info.version).toBe('9.9.9')
    expect(info.description).toContain('x402 v2')
    expect(info.description).toContain('eip155:167000')
    expect(doc.servers).toEqual([{ url: 'https://pin.example.com' }])
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc)
    const components = doc.components as Record<string, Obj>
    for (const name of ['Pin', 'PinStatus', 'PinResults', 'Status', 'Failure', 'Delegates', 'Origins', 'PinMeta', 'StatusInfo', 'TextMatchingStrategy',
      'PaymentRequired', 'UploadResult', 'Health', 'AgentCard', 'SiweChallenge', 'SiweToken', 'Jwks']) {
      expect(components.schemas, name).toHaveProperty(name)
    }
    for (const name of Object.keys(components)) {
      expect(['schemas', 'responses', 'parameters', 'examples', 'requestBodies', 'headers', 'securitySchemes', 'links', 'callbacks', 'pathItems']).toContain(name)
      for (const key of Object.keys(components[name] as Obj)) expect(key).toMatch(/^[a-zA-Z0-9._-]+$/)
    }
    expect(components.securitySchemes?.bearer).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
    expect(components.securitySchemes?.x402).toMatchObject({ type: 'apiKey', in: 'header', name: 'PAYMENT-SIGNATURE' })
  })

  it('resolves every $ref within the document', () => {
    const refs: string[] = []
    walk(doc, (n) => { if ('$ref' in n) refs.push(n.$ref as string) })
    expect(refs.length).toBeGreaterThan(50)
    for (const ref of refs) expect(() => resolvePointer(ref), ref).not.toThrow()
  })

  it('has well-formed operations: unique ids, declared tags and schemes, path parameters, responses', () => {
    const ids = new Set<string>()
    const tags = new Set((doc.tags as Obj[]).map(t => t.name))
    const schemes = Object.keys((doc.components as Obj).securitySchemes as Obj)
    for (const { path, method, op, item } of operations()) {
      const where = `${method.toUpperCase()} ${path}`
      expect(path, where).toMatch(/^\//)
      expect(ids.has(op.operationId as string), `${where}: duplicate operationId`).toBe(false)
      ids.add(op.operationId as string)
      for (const t of op.tags as string[]) expect(tags.has(t), `${where}: tag ${t}`).toBe(true)
      for (const req of (op.security as Obj[] | undefined) ?? []) for (const name of Object.keys(req)) expect(schemes, where).toContain(name)

      const params = [...((item.parameters as Obj[] | undefined) ?? []), ...((op.parameters as Obj[] | undefined) ?? [])].map(p => deref(p))
      const keys = params.map(p => `${p.in as string}:${p.name as string}`)
      expect(new Set(keys).size, `${where}: duplicate parameters ${keys.join(', ')}`).toBe(keys.length)
      for (const p of params) {
        expect(['query', 'header', 'path', 'cookie'], where).toContain(p.in)
        expect('schema' in p !== 'content' in p, `${where}: ${p.name as string} needs schema or content`).toBe(true)
      }
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map(m => m[1])
      expect(params.filter(p => p.in === 'path').map(p => p.name).sort(), where).toEqual([...templated].sort())
      for (const p of params.filter(p => p.in === 'path')) expect(p.required, where).toBe(true)

      const responses = op.responses as Obj
      expect(Object.keys(responses).some(s => /^2\d\d$/.test(s)), `${where}: a success response`).toBe(true)
      for (const [status, r] of Object.entries(responses)) {
        expect(status, where).toMatch(/^([1-5]\d\d|[1-5]XX|default)$/)
        const resolved = deref(r)
        expect(typeof resolved.description, `${where} ${status}`).toBe('string')
        if (method === 'head') expect(resolved.content, `${where} ${status}: HEAD has no body`).toBeUndefined()
        if (/^[45]/.test(status) && method !== 'head' && status !== '503') {
          const content = resolved.content as Record<string, Obj>
          expect(Object.keys(content), `${where} ${status}`).toEqual(['application/json'])
        }
      }
      if (op.requestBody != null) expect(['post']).toContain(method)
    }
  })

  it('documents every route src/http/routes registers, and nothing else', async () => {
    const key = ([m, p]: [string, string]): string => `${m} ${p}`
    expect((await registeredRoutes()).map(key).sort()).toEqual(ROUTES.map(key).sort())

    const paths = doc.paths as Record<string, Obj>
    for (const [method, pattern] of ROUTES) {
      for (const path of openApiPaths(pattern)) {
        expect(paths[path]?.[method.toLowerCase()], `${method} ${path} (route ${pattern}) is not documented`).toBeDefined()
      }
    }
    for (const { path, method } of operations()) {
      // the router answers HEAD wherever it answers GET
      const routeMethod = method === 'head' ? 'GET' : method.toUpperCase()
      const route = ROUTES.find(([m, p]) => m === routeMethod && openApiPaths(p).includes(path))
      expect(route, `${method.toUpperCase()} ${path} is documented but no route serves it`).toBeDefined()
    }
  })

  it('documents the statuses the code answers', () => {
    const statuses = (path: string, method: string): string[] => Object.keys(((doc.paths as Record<string, Obj>)[path]?.[method] as Obj).responses as Obj)
    expect(statuses('/upload', 'post')).toEqual(expect.arrayContaining(['200', '201', '400', '401', '402', '403', '404', '408', '409', '410', '411', '413', '414', '429', '431', '500', '503']))
    expect(statuses('/upload/tickets', 'post')).toEqual(expect.arrayContaining(['200', '201', '400', '402', '411', '413', '503']))
    expect(statuses('/upload/tickets/{ticket}', 'get')).toEqual(expect.arrayContaining(['200', '401', '404']))
    expect(statuses('/pins', 'post')).toEqual(expect.arrayContaining(['202', '400', '401', '402', '413', '415', '429', '503']))
    expect(statuses('/pins/{requestid}', 'post')).toEqual(expect.arrayContaining(['202', '401', '402', '404', '409', '415']))
    expect(statuses('/pins/{requestid}/renew', 'post')).toEqual(expect.arrayContaining(['200', '400', '401', '402', '404', '409', '503']))
    expect(statuses('/pins/{requestid}', 'delete')).toEqual(['202', '401', '404', '414', '429', '431', '500', '503'])
    expect(statuses('/auth/token', 'post')).toEqual(expect.arrayContaining(['200', '400', '401', '413', '415']))
    for (const path of ['/ipfs/{cid}', '/ipfs/{cid}/{path}']) {
      for (const method of ['get', 'head']) {
        expect(statuses(path, method)).toEqual(expect.arrayContaining(['200', '206', '301', '304', '400', '404', '406', '412', '416']))
      }
    }
    expect(statuses('/health', 'get')).toEqual(expect.arrayContaining(['200', '503']))
  })

  it('carries the settings it was built with', () => {
    const c = doc.components as Record<string, Record<string, Obj>>
    const other = openApiDocument({ ...input, network: 'eip155:31337', maxMonths: 6, uploadMaxBytes: 1000 })
    const oc = other.components as Record<string, Record<string, Obj>>
    expect(c.parameters?.DurationMonths?.schema).toMatchObject({ minimum: 1, maximum: 24, default: 1 })
    expect(oc.parameters?.DurationMonths?.schema).toMatchObject({ maximum: 6 })
    expect(oc.parameters?.UploadSize?.schema).toMatchObject({ maximum: 1000 })
    expect((oc.schemas?.X402PaymentRequirements?.properties as Obj).network).toEqual({ const: 'eip155:31337' })
    // built fresh each time: no object or array is shared between documents
    const mine = identities(doc)
    expect([...identities(other)].filter(x => mine.has(x))).toEqual([])
  })
})

describe('schemas match the bodies pind builds', () => {
  const schemaOf = (name: string): Obj => ref(`#/components/schemas/${name}`)
  const ref = (r: string): Obj => ({ $ref: r })
  const record = (over: Partial<PinRecord>): PinRecord => ({
    requestid: '0b9c6a9e-2f0e-4c4e-9a43-3b1f0d2d9a10',
    owner: '0x1111111111111111111111111111111111111111',
    cid: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy',
    origins: [],
    meta: {},
    status: 'pinned',
    created: '2026-11-22T03:20:38.955123Z',
    createdUs: 1_795_000_000_000_000,
    months: 3,
    pinnedUntil: '2027-02-22T03:20:38.955Z',
    source: 'upload',
    payment: { id: 'a:b', payer: '0x1111111111111111111111111111111111111111', amount: '1000', network: 'eip155:167000', asset: input.asset, tx: '0xabc', settledAt: '2026-11-22T03:20:39.000Z', method: 'x402' },
    ...over
  })
  const delegates = ['/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWPeer']

  it('PinStatus and PinResults', () => {
    const uploaded = toPinStatus(record({ name: 'a.txt', dagSize: 10, fileSize: 4 }), delegates)
    const byCid = toPinStatus(record({
      status: 'queued', source: 'pin', maxBytes: 1_000_000, statusDetails: 'queued for fetching', origins: ['/ip4/1.2.3.4/tcp/4001/p2p/12D3KooWOrigin'], meta: { app: 'x' },
      payment: { id: 'operator-token:j', payer: '0x1111111111111111111111111111111111111111', amount: '0', network: 'eip155:167000', asset: input.asset, method: 'operator-token' }
    }), delegates)
    for (const status of [uploaded, byCid]) expect(problems(status, schemaOf('PinStatus'))).toEqual([])
    expect(problems({ count: 2, results: [uploaded, byCid] }, schemaOf('PinResults'))).toEqual([])
  })

  it('Failure', () => {
    expect(problems(errorBody('NOT_FOUND', 'no such pin'), schemaOf('Failure'))).toEqual([])
    expect(problems({ error: { reason: 'X' } }, schemaOf('Failure'))).not.toEqual([])
  })

  it('Health and Ready', async () => {
    const health = await checkHealth({
      readLedger: async () => 1,
      probeBlockstore: async () => {},
      libp2pStatus: () => 'stopping',
      startedAt: Date.now(),
      checks: [{ name: 'routing', failure: 'routing is not started', run: () => { throw new Error('no routing peer') } }]
    })
    expect(health.status).toBe('failing')
    expect(problems(health, schemaOf('Health'))).toEqual([])
    const ready = await checkReadiness(async () => health, () => ({ state: 'no-pay-to', ok: false, message: 'no --pay-to' }))
    expect(problems(ready, schemaOf('Ready'))).toEqual([])
  })

  it('AgentCard', () => {
    const card = buildAgentCard({
      publicUrl: input.publicUrl,
      network: input.network,
      asset: input.asset,
      assetName: 'USD Coin',
      assetVersion: '2',
      prices: { rate: 100_000n, minimum: 1000n, maximum: 100_000_000n, maxMonths: 24 },
      uploadMaxBytes: input.uploadMaxBytes
    })
    expect(problems(card, schemaOf('AgentCard'))).toEqual([])
  })

  it('PaymentRequired (the 402 body) and the PAYMENT-REQUIRED header', async () => {
    // a facilitator that only says what it supports: enough for the gate to quote
    const facilitator = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ kinds: [{ x402Version: 2, scheme: 'exact', network: input.network }], extensions: [], signers: {} }))
    })
    await new Promise<void>(resolve => { facilitator.listen(0, '127.0.0.1', resolve) })
    const gate = new PaymentGate({
      network: input.network,
      asset: input.asset,
      assetName: 'USD Coin',
      assetVersion: '2',
      payTo: '0x2222222222222222222222222222222222222222',
      maxTimeoutSeconds: 900,
      prices: { rate: 100_000n, minimum: 1000n, maximum: 100_000_000n, maxMonths: 24 },
      facilitator: { kind: 'remote', url: `http://127.0.0.1:${(facilitator.address() as AddressInfo).port}` }
    }, createLogger({ level: 'error', write: () => {} }))
    try {
      await gate.start()
      expect(gate.isReady()).toBe(true)
      const quote = {
        amount: 3000n,
        months: 3,
        bytes: 10_000_000n,
        resourceUrl: `${input.publicUrl}/pins`,
        description: 'Pin bafy… for 3 month(s)',
        notes: { sizeSource: 'the X-Pin-Size header', maxBytes: '10000000' },
        discovery: { route: paidRoutes({ publicUrl: input.publicUrl, network: input.network, asset: input.asset, maxMonths: 24 }).pin, path: '/pins' }
      }
      const err = errorAnswer(await gate.challenge(quote, 'this write must be paid'))
      expect(err.status).toBe(402)
      const body = JSON.parse(err.body.toString())
      expect(problems(body, schemaOf('PaymentRequired'))).toEqual([])
      const header = JSON.parse(Buffer.from(err.headers['payment-required'] as string, 'base64').toString('utf8')) as unknown
      expect(problems(header, schemaOf('X402PaymentRequired'))).toEqual([])
      // and the zod schema the document derives it from (@x402/core builds the header, pind only describes it)
      expect(X402PaymentRequired.safeParse(header).error?.issues ?? []).toEqual([])
      expect(Object.keys((header as { extensions: object }).extensions)).toEqual(['bazaar'])
    } finally {
      gate.stop()
      await new Promise<void>(resolve => { facilitator.close(() => { resolve() }) })
    }
  })

  it('Jwks (a real key store\'s set, built from jose\'s exports)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pind-openapi-jwks-'))
    try {
      const store = await KeyStore.open(join(dir, 'keys'))
      await store.rotate()
      const jwks = store.jwks()
      expect(jwks.keys).toHaveLength(2)
      expect(Jwks.safeParse(jwks).error?.issues ?? []).toEqual([])
      expect(problems(jwks, schemaOf('Jwks'))).toEqual([])
      expect(Jwks.safeParse({ keys: [{ ...jwks.keys[0], kty: 'EC' }] }).success).toBe(false)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('the validator catches an undocumented field', () => {
    const status = { ...toPinStatus(record({}), delegates), surprise: 1 }
    expect(problems(status, schemaOf('PinStatus'))).toEqual(['$: surprise is not documented'])
  })
})

describe('GET /openapi.json', () => {
  let server: Server
  let base: string

  beforeAll(async () => {
    const router = new Router()
    openApiRoutes(router, doc)
    const log = createLogger({ level: 'error', write: () => {} })
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost')
      const m = router.match(req.method ?? 'GET', url.pathname)
      void m.handler({ req, res, url, params: m.params, log, route: m.pattern, countAsPaid: () => {} })
    })
    await new Promise<void>(resolve => { server.listen(0, '127.0.0.1', resolve) })
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  afterAll(async () => {
    await new Promise<void>(resolve => { server.close(() => { resolve() }) })
  })

  it('serves the document as JSON with a public cache', async () => {
    const r = await fetch(`${base}/openapi.json`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(r.headers.get('cache-control')).toBe('public, max-age=300')
    const text = await r.text()
    expect(Number(r.headers.get('content-length'))).toBe(Buffer.byteLength(text))
    expect(JSON.parse(text)).toEqual(doc)
  })

  it('answers HEAD with the headers and no body', async () => {
    const r = await fetch(`${base}/openapi.json`, { method: 'HEAD' })
    expect(r.status).toBe(200)
    expect(Number(r.headers.get('content-length'))).toBe(Buffer.byteLength(JSON.stringify(doc)))
    expect(await r.text()).toBe('')
  })

  it('given a function (serve loads the document\'s module with it), builds the document at the first request only, and again after a build failed', async () => {
    const router = new Router()
    let calls = 0
    openApiRoutes(router, async () => {
      calls++
      if (calls === 1) throw new Error('not yet')
      return doc
    })
    const log = createLogger({ level: 'error', write: () => {} })
    const answer = async (): Promise<{ status: number, body: string }> => {
      const m = router.match('GET', '/openapi.json')
      let status = 0
      let body = ''
      const res = { writeHead: (s: number) => { status = s }, end: (b?: Buffer) => { body = b?.toString() ?? '' } }
      try {
        await m.handler({ req: { method: 'GET' }, res, url: new URL('http://localhost/openapi.json'), params: m.params, log, route: m.pattern, countAsPaid: () => {} } as never)
      } catch (err) {
        return { status: -1, body: (err as Error).message }
      }
      return { status, body }
    }
    expect(calls).toBe(0)
    expect(await answer()).toEqual({ status: -1, body: 'not yet' })
    const ok = await answer()
    expect(ok.status).toBe(200)
    expect(JSON.parse(ok.body)).toEqual(doc)
    expect((await answer()).body).toBe(ok.body)
    expect(calls).toBe(2)
  })
})
