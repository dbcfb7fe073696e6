/**
 * The dial gate of the libp2p node (src/ipfs/routing/libp2p-options.ts), in
 * a real libp2p node built with pind's own limitsOptions: what
 * `isDialable` says is what the dial queue would do, after libp2p's own
 * /dnsaddr resolution and before any transport — so nothing is dialled here,
 * private ranges included (the addresses are only judged).
 */
import { noise } from '@libp2p/noise'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import type { Libp2p } from '@libp2p/interface'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2pOptions } from 'libp2p'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { limitsOptions, type Limits } from '../../../src/ipfs/routing/libp2p-options.js'

const ID = '12D3KooWGRUVh6ynrGz7PBxXqjDbnsdmu6KzgqF7mvzeoEZbdShD'

/** TXT records of `_dnsaddr.<name>`, as libp2p's dnsaddr resolver asks for them (no DNS server is asked) */
const TXT: Record<string, string[]> = {
  '_dnsaddr.hostile.example': [`/dns4/LOCALHOST/tcp/4001/p2p/${ID}`, `/dns4/localhost./tcp/4001/p2p/${ID}`, `/ip4/10.0.0.1/tcp/4001/p2p/${ID}`, `/ip4/127.0.0.1/tcp/4001/p2p/${ID}`],
  '_dnsaddr.bootstrap.example': [`/ip4/8.8.8.8/tcp/4001/p2p/${ID}`]
}
const fakeDns = {
  query: async (name: string) => ({
    Status: 0, TC: false, RD: true, RA: true, AD: false, CD: false, Question: [{ name, type: 16 }],
    Answer: (TXT[name] ?? []).map(a => ({ name, type: 16, TTL: 60, data: `dnsaddr=${a}` }))
  })
}

const nodes: Libp2p[] = []
async function node (limits: Partial<Limits>): Promise<Libp2p> {
  const n = await createLibp2p({
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    dns: fakeDns as unknown as Libp2pOptions['dns'],
    ...limitsOptions({ maxConnections: 10, inboundRate: 5, refusePrivateDials: true, exemptDials: [], ...limits })
  })
  nodes.push(n)
  return n
}
const dialable = async (n: Libp2p, addr: string): Promise<boolean> => await n.isDialable(multiaddr(addr))

let publicNode: Libp2p

beforeAll(async () => {
  publicNode = await node({
    exemptDials: [`/dns4/peer.operator.example/tcp/4001/p2p/${ID}`, '/ip4/10.0.0.5/tcp/4001', `/dnsaddr/bootstrap.example/p2p/${ID}`]
  })
})

afterAll(async () => {
  for (const n of nodes) await n.stop()
})

describe('the dial gate on the public network', () => {
  it('refuses every DNS name from the network, whatever it resolves to: localhost., LOCALHOST, foo.localhost, public-looking names', async () => {
    for (const addr of [
      '/dns4/localhost./tcp/4001', '/dns4/LOCALHOST/tcp/4001', `/dns4/LOCALHOST/tcp/4001/p2p/${ID}`, '/dns4/LocalHost./tcp/22',
      '/dns/foo.localhost/tcp/4001', '/dns6/localhost./tcp/4001', '/dns4/localhost/tcp/4001', '/dns4/metadata.google.internal/tcp/80',
      '/dns4/ipfs.example.com/tcp/4001', `/dns6/ipfs.example.com/tcp/4001/p2p/${ID}`
    ]) expect(await dialable(publicNode, addr), addr).toBe(false)
  })

  it('refuses loopback, private, link-local and IPv4-mapped or -compatible addresses (judged, never dialled)', async () => {
    for (const addr of [
      '/ip4/127.0.0.1/tcp/4001', '/ip4/10.1.2.3/tcp/4001', '/ip4/169.254.169.254/tcp/80', '/ip4/192.168.1.1/tcp/4001', '/ip4/172.16.0.1/tcp/4001',
      '/ip4/100.64.0.1/tcp/4001', '/ip4/0.0.0.0/tcp/4001', '/ip6/::1/tcp/4001', '/ip6/::ffff:127.0.0.1/tcp/4001', '/ip6/::ffff:10.0.0.1/tcp/4001',
      '/ip6/::127.0.0.1/tcp/4001', '/ip6/fe80::1/tcp/4001', '/ip6/fd00::1/tcp/4001', `/ip4/10.0.0.6/tcp/4001/p2p/${ID}`
    ]) expect(await dialable(publicNode, addr), addr).toBe(false)
  })

  it('judges what a /dnsaddr names: a hostile one that names loopback and private addresses yields nothing dialable', async () => {
    expect(await dialable(publicNode, '/dnsaddr/hostile.example')).toBe(false)
    expect(await dialable(publicNode, `/dnsaddr/hostile.example/p2p/${ID}`)).toBe(false)
    // the operator's /dnsaddr bootstrap (as --bootstrap public) works: it names public IP addresses
    expect(await dialable(publicNode, `/dnsaddr/bootstrap.example/p2p/${ID}`)).toBe(true)
  })

  it('dials public IP addresses, and the operator\'s own peers as configured (a name, a private address)', async () => {
    for (const addr of ['/ip4/8.8.8.8/tcp/4001', `/ip4/1.1.1.1/tcp/4001/p2p/${ID}`, '/ip6/2606:4700:4700::1111/tcp/4001']) {
      expect(await dialable(publicNode, addr), addr).toBe(true)
    }
    expect(await dialable(publicNode, `/dns4/peer.operator.example/tcp/4001/p2p/${ID}`)).toBe(true)
    expect(await dialable(publicNode, '/dns4/peer.operator.example/tcp/4001')).toBe(true)
    expect(await dialable(publicNode, `/ip4/10.0.0.5/tcp/4001/p2p/${ID}`)).toBe(true)
    // …but not another port of the same host
    expect(await dialable(publicNode, '/dns4/peer.operator.example/tcp/22')).toBe(false)
  })

  it('on a private network (--routing-private-addresses, --origin-addresses any, or routing off) gates nothing', async () => {
    const open = await node({ refusePrivateDials: false })
    for (const addr of ['/dns4/LOCALHOST/tcp/4001', '/ip4/10.1.2.3/tcp/4001', '/ip4/127.0.0.1/tcp/4001', '/ip4/8.8.8.8/tcp/4001']) {
      expect(await dialable(open, addr), addr).toBe(true)
    }
  })
})
