/** GET /usage: the token owner's pins and payments (free). */
import type { TokenService } from '../../auth/tokens.js'
import type { PinLedger } from '../../ledger/pins.js'
import { usageOf } from '../../service/usage/usage.js'
import { bearer } from '../bearer.js'
import { sendJson } from '../respond.js'
import type { Router } from '../router.js'
import { bearerOnly, operation, response, schema, unauthorized, type Obj, type PathItems } from '../openapi-parts.js'

export interface UsageRoutesDeps {
  ledger: Pick<PinLedger, 'usage'>
  tokens: TokenService
}

export function usageRoutes (router: Router, d: UsageRoutesDeps): void {
  router.add('GET', '/usage', async ({ req, res }) => {
    const { owner } = await bearer(req, d.tokens)
    sendJson(res, 200, await usageOf(d.ledger, owner), { 'cache-control': 'no-store' })
  })
}

// ---- the OpenAPI description of this route (src/http/openapi.ts) -----------

export function usageOperations (): PathItems {
  return { '/usage': { get: usageOp() } }
}

function usageOp (): Obj {
  return operation('get', {
    id: 'getUsage',
    tag: 'pins',
    summary: 'Your pins and payments',
    description: 'Free. The token owner\'s pins by status, the DAG bytes of the pinned ones, the total paid per network, and the soonest expiry of a live pin.',
    security: bearerOnly(),
    responses: {
      200: response('The wallet\'s usage.', schema('Usage')),
      401: unauthorized('No, a malformed, expired, revoked or unknown-key bearer token.')
    }
  })
}
