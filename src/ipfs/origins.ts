/**
 * Which addresses a pin request's `origins` may make this node dial. The
 * request chooses them, so by default (`public`) only public addresses are
 * dialled, over TCP (the node's only transport):
 *   - /ip4 and /ip6 addresses outside the loopback, private, shared,
 *     link-local, documentation, multicast and reserved ranges (IPv6: global
 *     unicast 2000::/3 only, less its special blocks);
 *   - /dns, /dns4 and /dns6 names, resolved here, and the public address they
 *     resolve to is what is dialled: a name cannot aim a dial at this
 *     machine or its network.
 * /unix paths, /dnsaddr (whose TXT records name further addresses) and any
 * other shape are never dialled. `any` (an operator's choice, and the tests',
 * whose origins run on loopback) dials every origin as given.
 *
 * Origins are looked at in order, and at most `max` are taken: that bounds
 * the dials (and DNS lookups) one request can cause.
 */
import { lookup } from 'node:dns/promises'
import { BlockList, isIPv4, isIPv6 } from 'node:net'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'

/** the setting --origin-addresses */
export type OriginPolicy = 'public' | 'any'

export interface OriginDials {
  /** what to dial */
  addrs: Multiaddr[]
  /** origins not dialled, and why */
  skipped: Array<{ addr: string, why: string }>
}

const NOT_PUBLIC = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.31.196.0', 24], ['192.52.193.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16],
  ['192.175.48.0', 24], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) NOT_PUBLIC.addSubnet(net, prefix, 'ipv4')
/** IETF protocol assignments (Teredo, benchmarking, ORCHID…), documentation, 6to4 (embeds an IPv4 address) */
for (const [net, prefix] of [['2001::', 23], ['2001:db8::', 32], ['2002::', 16]] as const) NOT_PUBLIC.addSubnet(net, prefix, 'ipv6')
const GLOBAL_UNICAST = new BlockList()
GLOBAL_UNICAST.addSubnet('2000::', 3, 'ipv6')

/** Is this IP address one a request may make us dial? */
export function isPublicAddress (ip: string): boolean {
  if (isIPv4(ip)) return !NOT_PUBLIC.check(ip, 'ipv4')
  if (isIPv6(ip)) return GLOBAL_UNICAST.check(ip, 'ipv6') && !NOT_PUBLIC.check(ip, 'ipv6')
  return false
}

const DNS_FAMILY: Record<string, 0 | 4 | 6> = { dns: 0, dns4: 4, dns6: 6 }

export async function dialableOrigins (origins: string[], o: { policy: OriginPolicy, max: number, signal: AbortSignal }): Promise<OriginDials> {
  const out: OriginDials = { addrs: [], skipped: [] }
  const taken: Array<{ addr: string, ma: Multiaddr }> = []
  for (const addr of origins) {
    let ma: Multiaddr
    try { ma = multiaddr(addr) } catch { out.skipped.push({ addr, why: 'not a multiaddr' }); continue }
    const why = o.policy === 'any' ? undefined : unusable(ma)
    if (why != null) { out.skipped.push({ addr, why }); continue }
    if (taken.length >= o.max) { out.skipped.push({ addr, why: `past the first ${o.max} usable origins` }); continue }
    taken.push({ addr, ma })
  }
  await Promise.all(taken.map(async ({ addr, ma }) => {
    try {
      out.addrs.push(o.policy === 'any' ? ma : await resolvePublic(ma, o.signal))
    } catch (err) {
      out.skipped.push({ addr, why: (err as Error).message })
    }
  }))
  return out
}

/** Why a public-only policy never dials this multiaddr (undefined: it may, once a name resolves to a public address). */
function unusable (ma: Multiaddr): string | undefined {
  const [host, port, ...rest] = ma.getComponents()
  if (host == null || port?.name !== 'tcp' || rest.some(c => c.name !== 'p2p') || rest.length > 1) return 'only /ip4, /ip6 or /dns* with /tcp (and /p2p) are dialled'
  if (host.name === 'ip4' || host.name === 'ip6') return isPublicAddress(host.value ?? '') ? undefined : 'not a public address'
  if (host.name in DNS_FAMILY) return undefined
  return `/${host.name} origins are not dialled`
}

/** The multiaddr with its DNS name replaced by a public address the name resolves to. */
async function resolvePublic (ma: Multiaddr, signal: AbortSignal): Promise<Multiaddr> {
  const [host, ...rest] = ma.getComponents()
  if (host == null || !(host.name in DNS_FAMILY)) return ma
  const family = DNS_FAMILY[host.name] as 0 | 4 | 6
  signal.throwIfAborted()
  const found = await Promise.race([
    lookup(host.value ?? '', { all: true, family }),
    new Promise<never>((_resolve, reject) => { signal.addEventListener('abort', () => { reject(new Error('name lookup timed out')) }, { once: true }) })
  ]).catch((err: NodeJS.ErrnoException) => { throw new Error(`name lookup failed (${err.code ?? err.message})`) })
  const ip = found.find(a => isPublicAddress(a.address))
  if (ip == null) throw new Error('the name resolves to no public address')
  return multiaddr(`/ip${ip.family}/${ip.address}${rest.map(c => `/${c.name}${c.value != null ? `/${c.value}` : ''}`).join('')}`)
}
