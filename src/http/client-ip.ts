/**
 * The client's address for rate limits and logs. X-Forwarded-For is
 * believed only when the connection comes from a configured proxy; then the
 * right-most address that is not itself a trusted proxy is the client.
 */
import type { IncomingMessage } from 'node:http'

export function clientIp (req: IncomingMessage, trustedProxies: ReadonlySet<string>): string {
  const peer = normalize(req.socket.remoteAddress ?? 'unknown')
  if (trustedProxies.size === 0 || !trustedProxies.has(peer)) return peer
  const header = req.headers['x-forwarded-for']
  const chain = (Array.isArray(header) ? header.join(',') : header ?? '').split(',').map(s => normalize(s.trim())).filter(s => s !== '')
  for (let i = chain.length - 1; i >= 0; i--) {
    const hop = chain[i] as string
    if (!trustedProxies.has(hop)) return hop
  }
  return chain[0] ?? peer
}

/** ::ffff:1.2.3.4 → 1.2.3.4 */
function normalize (addr: string): string {
  return addr.startsWith('::ffff:') ? addr.slice(7) : addr
}
