/**
 * Sign-In with Ethereum: a new wallet token without paying again.
 *   POST /auth/challenge {"address":"0x…"} → {message, nonce, expires_at}
 *   POST /auth/token {"message":"…","signature":"0x…"} → {token, expires_at} (+ x-wallet-auth-token)
 */
import type { IncomingMessage } from 'node:http'
import { z } from 'zod/v4'
import { LOWER_ADDRESS, text } from '../../kernel/api-shapes.js'
import { SiweError, type SiweChallenges } from '../../auth/siwe.js'
import type { TokenService } from '../../auth/tokens.js'
import { InvalidInputError, UnauthorizedError } from '../../kernel/errors.js'
import { readJson } from '../json-body.js'
import { sendJson } from '../respond.js'
import type { Router } from '../router.js'
import { failure, jsonBody, jsonBodyErrors, operation, ref, response, schema, tokenHeaders, type Obj, type PathItems, unauthorized } from '../openapi-parts.js'

/** the answer of POST /auth/challenge (OpenAPI: SiweChallenge, derived from this) */
export const SiweChallenge = z.object({
  message: text('the EIP-4361 message to sign with personal_sign'),
  nonce: text('single-use nonce inside the message'),
  expires_at: text('the message expires then (10 minutes)', { format: 'date-time' })
})

/** the answer of POST /auth/token (OpenAPI: SiweToken, derived from this) */
export const SiweToken = z.object({
  token: text('the wallet token (JWT); use as Authorization: Bearer'),
  expires_at: text('when the token expires', { format: 'date-time' }),
  owner: text('the signed-in address, lowercase', { pattern: LOWER_ADDRESS })
})

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
    const answer: z.output<typeof SiweChallenge> = { message: c.message, nonce: c.nonce, expires_at: c.expiresAt }
    sendJson(res, 200, answer)
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
    const answer: z.output<typeof SiweToken> = { token: t.token, expires_at: t.expiresAt.toISOString(), owner }
    sendJson(res, 200, answer, {
      'x-wallet-auth-token': t.token,
      'x-wallet-auth-token-expires': t.expiresAt.toISOString()
    })
  })
}

// ---- the OpenAPI description of these routes (src/http/openapi.ts) ----------

export function authOperations (): PathItems {
  return {
    '/auth/challenge': { post: siweChallengeOp() },
    '/auth/token': { post: siweTokenOp() }
  }
}

function siweChallengeOp (): Obj {
  return operation('post', {
    id: 'siweChallenge',
    tag: 'auth',
    summary: 'Ask for a Sign-In with Ethereum message',
    description: 'Free. The message carries a single-use nonce valid 10 minutes, bound to this service\'s domain and URI and to the payment chain. Sign it with the wallet (`personal_sign`) and send it to `POST /auth/token`.',
    requestBody: jsonBody('The wallet address.', schema('SiweChallengeRequest'), 4096),
    responses: {
      ...jsonBodyErrors(4096, '`address` is not a 0x address.'),
      200: response('The message to sign.', schema('SiweChallenge')),
      429: failure('This client address (IPv6: its /64) already holds 16 open challenges (`TOO_MANY_REQUESTS`): sign one of them, or retry after `Retry-After` seconds; or over the rate limit for unpaid writes.', { 'Retry-After': ref('headers', 'RetryAfter') })
    }
  })
}

function siweTokenOp (): Obj {
  return operation('post', {
    id: 'siweToken',
    tag: 'auth',
    summary: 'Exchange a signed message for a wallet token',
    description: 'EOA signatures only (no ERC-1271). The nonce is consumed whatever the outcome.',
    requestBody: jsonBody('The challenge message and its signature.', schema('SiweTokenRequest'), 16_384),
    responses: {
      ...jsonBodyErrors(16_384, 'the message is not a Sign-In with Ethereum message.'),
      200: response('A new wallet token (also in `x-wallet-auth-token`).', schema('SiweToken'), tokenHeaders()),
      401: unauthorized('`message` or `signature` missing or malformed; an unknown, used or expired nonce; another address, chain, URI or domain than the challenge; or a signature that does not match the address.')
    }
  })
}
