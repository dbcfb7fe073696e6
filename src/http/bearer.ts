/**
 * Who sends a request to an owner endpoint: the owner behind
 * `Authorization: Bearer <wallet token>`, or the wallet a `SIGN-IN-WITH-X`
 * header signs in (src/auth/siwx.ts); 401 otherwise. Where sign-in is on,
 * every 401 of an owner endpoint carries a fresh sign-in-with-x challenge in
 * `PAYMENT-REQUIRED` (docs/siwx.md).
 */
import type { IncomingMessage } from 'node:http'
import { InvalidTokenError } from '../auth/errors.js'
import { SIWX_HEADER, SiwxError, type SignInWithX } from '../auth/siwx.js'
import type { TokenService, VerifiedToken } from '../auth/tokens.js'
import { SignInRequiredError, UnauthorizedError } from '../kernel/errors.js'

export async function bearer (req: IncomingMessage, tokens: TokenService): Promise<VerifiedToken> {
  const header = req.headers.authorization
  if (header == null || header === '') throw new UnauthorizedError('send Authorization: Bearer <x-wallet-auth-token from a paid write>')
  const m = /^Bearer ([^\s]+)$/i.exec(header)
  if (m == null) throw new UnauthorizedError('the Authorization header must be "Bearer <token>"')
  try {
    return await tokens.verify(m[1] as string)
  } catch (err) {
    if (err instanceof InvalidTokenError) throw new UnauthorizedError(err.message)
    throw err
  }
}

/** the longest path a sign-in challenge is made for: /pins/{requestid} with room to spare */
const MAX_CHALLENGE_PATH = 256

/**
 * The owner (lowercase address) of a request to an owner endpoint, by its
 * bearer token or its SIGN-IN-WITH-X header (not both). Without `siwx`,
 * bearer tokens only. `resource`: the request's path and query (a challenge
 * names the path alone).
 */
export async function owner (req: IncomingMessage, resource: string, tokens: TokenService, siwx?: SignInWithX): Promise<string> {
  if (siwx == null) return (await bearer(req, tokens)).owner
  const signed = req.headers[SIWX_HEADER]
  try {
    if (signed == null) return (await bearer(req, tokens)).owner
    if (req.headers.authorization != null) throw new UnauthorizedError('send Authorization: Bearer or SIGN-IN-WITH-X, not both')
    if (typeof signed !== 'string' || signed === '') throw new UnauthorizedError('the SIGN-IN-WITH-X header is empty')
    return await siwx.verify(signed, new URL(resource, 'http://x').pathname)
  } catch (err) {
    if (!(err instanceof UnauthorizedError || err instanceof SiwxError)) throw err
    const details = signed == null && req.headers.authorization == null
      ? 'send Authorization: Bearer <wallet token>, or sign in: sign the sign-in-with-x challenge in PAYMENT-REQUIRED and send it as SIGN-IN-WITH-X'
      : err instanceof SiwxError ? `${err.message} [${err.reason}]` : err.message
    // the challenge names the path alone (a signature is bound to the path; a query of up to 8 KiB
    // would make the header too large for clients); a path longer than any owner endpoint's gets none
    const path = new URL(resource, 'http://x').pathname
    if (path.length > MAX_CHALLENGE_PATH) throw new UnauthorizedError(details)
    throw new SignInRequiredError(details, await siwx.challenge(path, details))
  }
}
