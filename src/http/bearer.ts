/**
 * The owner behind `Authorization: Bearer <wallet token>`; 401 otherwise.
 */
import type { IncomingMessage } from 'node:http'
import { InvalidTokenError } from '../auth/errors.js'
import type { TokenService, VerifiedToken } from '../auth/tokens.js'
import { UnauthorizedError } from '../kernel/errors.js'

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
