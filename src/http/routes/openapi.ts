/**
 * GET /openapi.json: the OpenAPI 3.1 description of this API
 * (src/http/openapi.ts). The document never changes while the server runs,
 * so it is serialized once; given as a function, it is built at the first
 * request, keeping the zod-to-JSON-schema work out of serve's start (and, when
 * the function loads src/http/openapi.ts itself, the construction of the schemas
 * only the document uses).
 */
import type { Router } from '../router.js'
import { operation, ref, response, type Obj, type PathItems } from '../openapi-parts.js'

type Doc = Record<string, unknown>

export function openApiRoutes (router: Router, doc: Doc | (() => Doc | Promise<Doc>)): void {
  let serialized: Promise<Buffer> | undefined = typeof doc === 'function' ? undefined : Promise.resolve(Buffer.from(JSON.stringify(doc)))
  const build = async (): Promise<Buffer> => Buffer.from(JSON.stringify(await (doc as () => Doc | Promise<Doc>)()))
  router.add('GET', '/openapi.json', async ({ req, res }) => {
    // (a build that failed is tried again at the next request)
    const body = await (serialized ??= build().catch((err: unknown) => { serialized = undefined; throw err }))
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
