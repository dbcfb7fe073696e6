import type { KeyStore } from '../../auth/keystore.js'
import { sendJson } from '../respond.js'
import type { Router } from '../router.js'
import { operation, ref, response, schema, type Obj, type PathItems } from '../openapi-parts.js'

/** GET /.well-known/jwks.json: the public keys wallet tokens are signed with (active and not yet retired). */
export function jwksRoutes (router: Router, keystore: KeyStore): void {
  router.add('GET', '/.well-known/jwks.json', async ({ res }) => {
    await keystore.refresh()
    sendJson(res, 200, keystore.jwks(), { 'cache-control': 'public, max-age=300' })
  })
}

// ---- the OpenAPI description of this route (src/http/openapi.ts) -----------

export function jwksOperations (): PathItems {
  return { '/.well-known/jwks.json': { get: jwksOp() } }
}

function jwksOp (): Obj {
  return operation('get', {
    id: 'getJwks',
    tag: 'service',
    summary: 'Token signing keys',
    description: 'The public keys wallet and operator tokens are signed with (active and not yet retired), to verify a token offline.',
    responses: { 200: response('A JWK Set.', schema('Jwks'), { 'Cache-Control': ref('headers', 'CacheControlPublic') }) }
  })
}
