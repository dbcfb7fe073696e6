/**
 * Sign-In with Ethereum: a new wallet token without paying again.
 *   POST /auth/challenge {"address":"0x…"} → {message, nonce, expires_at}
 *   POST /auth/token {"message":"…","signature":"0x…"} → {token, expires_at} (+ x-wallet-auth-token)
 */
import type { IncomingMessage } from 'node:http'
import { SiweError, type SiweChallenges } from '../../auth/siwe.js'
import type { TokenService } from '../../auth/tokens.js'
import { InvalidInputError, UnauthorizedError } from '../../errors.js'
import { readJson } from '../json-body.js'
import { sendJson } from '../respond.js'
import type { Router } from '../router.js'

export interface AuthRoutesDeps {
  siwe: SiweChallenges
  tokens: TokenService
  /** the key per-client limits count by (the client's address, proxies considered) */
  clientOf: (req: IncomingMessage) => string
}

export function authRoutes (router: Router, d: AuthRoutesDeps): void {
  router.add('POST', '/auth/challenge', async ({ req, res }) => {
    const body = await readJson(req, 4096) as { address?: unknown }
    // a SiweError is a bad address (400), a SiweBusyError too many open challenges (429): src/http/error-catalog.ts
    const c = d.siwe.challenge(body?.address as string, d.clientOf(req))
    sendJson(res, 200, { message: c.message, nonce: c.nonce, expires_at: c.expiresAt })
  })

  router.add('POST', '/auth/token', async ({ req, res, countAsPaid }) => {
    const body = await readJson(req, 16_384) as { message?: unknown, signature?: unknown }
    let owner: string
    try {
      owner = await d.siwe.verify(body?.message as string, body?.signature as string)
    } catch (err) {
      if (err instanceof SiweError) throw new UnauthorizedError(err.message)
      throw new InvalidInputError('the message is not a valid Sign-In with Ethereum message')
    }
    const t = await d.tokens.issue(owner)
    countAsPaid() // a valid signed sign-in: authorized, not an unpaid attempt
    sendJson(res, 200, { token: t.token, expires_at: t.expiresAt.toISOString(), owner }, {
      'x-wallet-auth-token': t.token,
      'x-wallet-auth-token-expires': t.expiresAt.toISOString()
    })
  })
}
