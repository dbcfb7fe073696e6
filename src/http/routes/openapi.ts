/**
 * GET /openapi.json: the OpenAPI 3.1 description of this API
 * (src/http/openapi.ts). The document never changes while the server runs,
 * so it is serialized once; given as a function, it is built at the first
 * request, keeping the zod-to-JSON-schema work out of serve's start.
 */
import type { Router } from '../router.js'
import { operation, ref, response, type Obj, type PathItems } from '../openapi-parts.js'

export function openApiRoutes (router: Router, doc: Record<string, unknown> | (() => Record<string, unknown>)): void {
  let serialized: Buffer | undefined = typeof doc === 'function' ? undefined : Buffer.from(JSON.stringify(doc))
  router.add('GET', '/openapi.json', ({ req, res }) => {
    const body = serialized ??= Buffer.from(JSON.stringify((doc as () => Record<string, unknown>)()))
    // the headers sendJson (../respond.ts) writes, with a public cache: it takes a
    // value to serialize, and this body is already bytes
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': body.byteLength,
      'cache-control': 'public, max-age=300',
      'access-control-allow-origin': '*'
    })
    res.end(req.method === 'HEAD' ? undefined : body)
  })
}

// ---- the OpenAPI description of this route (src/http/openapi.ts) -----------

export function openApiOperations (): PathItems {
  return { '/openapi.json': { get: openApiOp() } }
}

function openApiOp (): Obj {
  return operation('get', {
    id: 'getOpenApi',
    tag: 'service',
    summary: 'This document',
    responses: {
      200: response('The OpenAPI 3.1 description of this API.', { type: 'object', required: ['openapi', 'info', 'paths'] }, { 'Cache-Control': ref('headers', 'CacheControlPublic') })
    }
  })
}
