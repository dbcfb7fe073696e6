/**
 * The client's address for rate limits and logs. X-Forwarded-For is
 * believed only when the connection comes from a configured proxy; then the
 * right-most address that is not itself a trusted proxy is the client.
 */
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'

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

/**
 * What per-client limits count by: an IPv4 address as it is, an IPv6
 * address by its /64 prefix (one host is routinely given a whole /64, so
 * counting each address would give one client 2^64 allowances).
 */
export function clientKey (ip: string): string {
  if (isIP(ip) !== 6) return ip
  const groups = expandIpv6(ip.replace(/%.*$/, ''))
  return `${groups.slice(0, 4).map(g => g.toString(16)).join(':')}::/64`
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 part counts as two). */
function expandIpv6 (ip: string): number[] {
  const parse = (part: string): number[] => part === ''
    ? []
    : part.split(':').flatMap(g => {
      if (!g.includes('.')) return [parseInt(g, 16)]
      const [a, b, c, d] = g.split('.').map(Number) as [number, number, number, number]
      return [(a << 8) | b, (c << 8) | d]
    })
  const at = ip.indexOf('::')
  if (at < 0) return parse(ip)
  const head = parse(ip.slice(0, at))
  const tail = parse(ip.slice(at + 2))
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail]
}

/** ::ffff:1.2.3.4 → 1.2.3.4 */
export function normalize (addr: string): string {
  return addr.startsWith('::ffff:') ? addr.slice(7) : addr
}
