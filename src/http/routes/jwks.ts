import type { KeyStore } from '../../auth/keystore.js'
import { sendJson } from '../respond.js'
import type { Router } from '../router.js'

/** GET /.well-known/jwks.json: the public keys wallet tokens are signed with (active and not yet retired). */
export function jwksRoutes (router: Router, keystore: KeyStore): void {
  router.add('GET', '/.well-known/jwks.json', async ({ res }) => {
    await keystore.refresh()
    sendJson(res, 200, keystore.jwks(), { 'cache-control': 'public, max-age=300' })
  })
}
