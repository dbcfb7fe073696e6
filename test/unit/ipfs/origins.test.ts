import { describe, expect, it } from 'vitest'
import { dialableOrigins, isPublicAddress } from '../../../src/ipfs/origins.js'

const ID = '12D3KooWGRUVh6ynrGz7PBxXqjDbnsdmu6KzgqF7mvzeoEZbdShD'
const signal = (): AbortSignal => AbortSignal.timeout(5000)

describe('origins a pin request may make the node dial', () => {
  it('knows public addresses from loopback, private, link-local, mapped and reserved ones', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e']) expect(isPublicAddress(ip), ip).toBe(true)
    for (const ip of [
      '127.0.0.1', '127.1.2.3', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255',
      '198.18.0.1', '192.0.2.1', '::1', '0:0:0:0:0:0:0:1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1',
      '64:ff9b::a00:1', '2001:db8::1', '2002:7f00:1::1', '2001::1', 'not-an-ip'
    ]) expect(isPublicAddress(ip), ip).toBe(false)
  })

  it('public: dials public TCP addresses only, resolves names to public addresses, and takes at most `max`', async () => {
    const origins = [
      `/ip4/127.0.0.1/tcp/4001/p2p/${ID}`, '/ip4/10.1.2.3/tcp/4001', `/ip6/::1/tcp/4001/p2p/${ID}`, '/unix/%2Frun%2Fdocker.sock',
      '/dns4/localhost/tcp/4001', '/dnsaddr/bootstrap.example', '/ip4/8.8.8.8/udp/4001/quic-v1', '/ip4/8.8.8.8/tcp/443/tls/ws',
      `/ip4/8.8.8.8/tcp/4001/p2p/${ID}`, '/ip4/1.1.1.1/tcp/4001', '/ip6/2606:4700:4700::1111/tcp/4001', '/ip4/9.9.9.9/tcp/4001', '/ip4/4.4.4.4/tcp/4001'
    ]
    const r = await dialableOrigins(origins, { policy: 'public', max: 4, signal: signal() })
    // the first 4 usable: localhost (a name, resolved then dropped: it is loopback) and 3 public addresses
    expect(r.addrs.map(String).sort()).toEqual([`/ip4/8.8.8.8/tcp/4001/p2p/${ID}`, '/ip4/1.1.1.1/tcp/4001', '/ip6/2606:4700:4700::1111/tcp/4001'].sort())
    const why = Object.fromEntries(r.skipped.map(s => [s.addr, s.why]))
    expect(why[`/ip4/127.0.0.1/tcp/4001/p2p/${ID}`]).toMatch(/not a public address/)
    expect(why[`/ip6/::1/tcp/4001/p2p/${ID}`]).toMatch(/not a public address/)
    expect(why['/ip4/10.1.2.3/tcp/4001']).toMatch(/not a public address/)
    expect(why['/dns4/localhost/tcp/4001']).toMatch(/resolves to no public address/)
    expect(why['/unix/%2Frun%2Fdocker.sock']).toMatch(/only \/ip4/)
    expect(why['/dnsaddr/bootstrap.example']).toMatch(/only \/ip4/)
    expect(why['/ip4/8.8.8.8/udp/4001/quic-v1']).toMatch(/only \/ip4/)
    expect(why['/ip4/9.9.9.9/tcp/4001']).toMatch(/past the first 4/)
    expect(why['/ip4/4.4.4.4/tcp/4001']).toMatch(/past the first 4/)
  })

  it('any: dials every origin as given, still at most `max`', async () => {
    const r = await dialableOrigins(['/ip4/127.0.0.1/tcp/1', '/unix/%2Ftmp%2Fs', '/dns4/localhost/tcp/2', '/ip4/10.0.0.1/tcp/3'], { policy: 'any', max: 3, signal: signal() })
    expect(r.addrs.map(String)).toEqual(['/ip4/127.0.0.1/tcp/1', '/unix/%2Ftmp%2Fs', '/dns4/localhost/tcp/2'])
    expect(r.skipped).toEqual([{ addr: '/ip4/10.0.0.1/tcp/3', why: 'past the first 3 usable origins' }])
  })
})
