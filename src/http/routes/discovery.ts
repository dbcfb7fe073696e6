/**
 * Discovery for people and agents: GET / (the landing page), GET /llms.txt
 * and GET /.well-known/x402 (the paid resources). Each document is built from
 * the settings at the first request and served from the same bytes after.
 */
import type { ServerResponse } from 'node:http'
import type { Router } from '../router.js'
import { operation, ref, response, type Obj, type PathItems } from '../openapi-parts.js'

export interface DiscoveryDocuments {
  landing: () => string
  llmsTxt: () => string
  x402: () => Record<string, unknown>
}

/** the landing page's policy: no script, no resource from elsewhere */
const LANDING_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

export function discoveryRoutes (router: Router, docs: DiscoveryDocuments): void {
  const once = (make: () => string): () => Buffer => { let b: Buffer | undefined; return () => (b ??= Buffer.from(make())) }
  const landing = once(docs.landing)
  const llms = once(docs.llmsTxt)
  const x402 = once(() => JSON.stringify(docs.x402()))
  const send = (res: ServerResponse, type: string, body: Buffer, extra: Record<string, string> = {}): void => {
    res.writeHead(200, {
      'content-type': type,
      'content-length': body.byteLength,
      'cache-control': 'public, max-age=300',
      'x-content-type-options': 'nosniff',
      ...extra
    })
    res.end(res.req.method === 'HEAD' ? undefined : body)
  }
  router.add('GET', '/', ({ res }) => { send(res, 'text/html; charset=utf-8', landing(), { 'content-security-policy': LANDING_CSP }) })
  router.add('GET', '/llms.txt', ({ res }) => { send(res, 'text/markdown; charset=utf-8', llms(), { 'access-control-allow-origin': '*' }) })
  router.add('GET', '/.well-known/x402', ({ res }) => { send(res, 'application/json; charset=utf-8', x402(), { 'access-control-allow-origin': '*' }) })
}

// ---- the OpenAPI description of these routes (src/http/openapi.ts) ----------

export function discoveryOperations (): PathItems {
  const cache = { 'Cache-Control': ref('headers', 'CacheControlPublic') }
  return {
    '/': {
      get: operation('get', {
        id: 'getLandingPage',
        tag: 'service',
        summary: 'The landing page',
        description: 'For people: what the service is, the price, how an agent pays, and links to the OpenAPI document, the agent card, llms.txt and /.well-known/x402.',
        responses: { 200: { description: 'An HTML page.', headers: cache, content: { 'text/html': { schema: { type: 'string' } } } } }
      })
    },
    '/llms.txt': {
      get: operation('get', {
        id: 'getLlmsTxt',
        tag: 'service',
        summary: 'The API for language models (llms.txt)',
        description: 'Markdown: what to call, in what order, what it costs and how to pay.',
        responses: { 200: { description: 'Markdown text.', headers: cache, content: { 'text/markdown': { schema: { type: 'string' } } } } }
      })
    },
    '/.well-known/x402': {
      get: operation('get', {
        id: 'getX402Resources',
        tag: 'service',
        summary: 'The paid resources (x402 discovery)',
        description: '`resources`: the URLs of the paid routes without parameters; `items`: every paid operation with its method, URL (`routeTemplate` for parameterised ones), headers and price model (as `x-payment-info`). Each 402 also carries the x402 `bazaar` extension describing its request.',
        responses: { 200: response('The paid resources.', x402Schema(), cache) }
      })
    }
  }
}

function x402Schema (): Obj {
  return {
    type: 'object',
    required: ['version', 'x402Version', 'resources', 'items'],
    properties: {
      version: { const: 1 },
      x402Version: { const: 2 },
      resources: { type: 'array', items: { type: 'string', format: 'uri' } },
      items: { type: 'array', items: { type: 'object', required: ['method', 'resource', 'payment'], properties: { method: { type: 'string' }, resource: { type: 'string' }, routeTemplate: { type: 'string' }, operationId: { type: 'string' }, description: { type: 'string' }, headers: { type: 'array', items: { type: 'string' } }, payment: { type: 'object' } } } },
      instructions: { type: 'string' },
      links: { type: 'object', additionalProperties: { type: 'string', format: 'uri' } }
    }
  }
}
