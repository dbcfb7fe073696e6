/**
 * CORS for browser clients, x402 ones included: they must be allowed to send
 * PAYMENT-SIGNATURE, Authorization and SIGN-IN-WITH-X, and to read PAYMENT-REQUIRED,
 * PAYMENT-RESPONSE and the wallet token. No cookies are used (tokens travel
 * in Authorization), so allowing any origin (`*`, the default) exposes
 * nothing a non-browser client could not already do.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'

const ALLOW_HEADERS = 'authorization, sign-in-with-x, content-type, payment-signature, x-payment, x-pin-duration-months, x-upload-size, x-pin-size, range, if-none-match'
const EXPOSE_HEADERS = 'payment-required, payment-response, x-wallet-auth-token, x-wallet-auth-token-expires, location, content-range, content-length, etag, x-ipfs-path, x-ipfs-roots, retry-after'
const ALLOW_METHODS = 'GET, HEAD, POST, DELETE, OPTIONS'

export interface CorsPolicy {
  /** allowed origins; '*' for any; empty: CORS off */
  origins: string[]
}

/**
 * Adds CORS headers for an allowed Origin. Answers a preflight (OPTIONS with
 * Access-Control-Request-Method) itself and returns true when it did.
 */
export function applyCors (req: IncomingMessage, res: ServerResponse, policy: CorsPolicy): boolean {
  const origin = req.headers.origin
  if (origin == null || policy.origins.length === 0) return false
  const any = policy.origins.includes('*')
  if (!any && !policy.origins.includes(origin)) return false
  res.setHeader('access-control-allow-origin', any ? '*' : origin)
  if (!any) res.setHeader('vary', 'Origin')
  res.setHeader('access-control-expose-headers', EXPOSE_HEADERS)
  if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] != null) {
    res.writeHead(204, {
      'access-control-allow-methods': ALLOW_METHODS,
      'access-control-allow-headers': ALLOW_HEADERS,
      'access-control-max-age': '600',
      'content-length': '0'
    })
    res.end()
    return true
  }
  return false
}
