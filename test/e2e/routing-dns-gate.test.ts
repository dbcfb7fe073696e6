/**
 * With routing on the public network (no --routing-private-addresses,
 * --origin-addresses public), a DNS name that the network hands pind is never
 * dialled: a name can resolve to this machine or its LAN, and libp2p's TCP
 * transport resolves it only after the dial gate has judged the address.
 *
 * The real pind is bootstrapped to a hostile DHT server on loopback (the
 * operator's bootstrap peer, so dialled), which hands out names that resolve
 * to 127.0.0.1 — `localhost.`, `LOCALHOST`, `foo.localhost`, this machine's
 * host name — and an IPv4-mapped loopback address, pointing at listening TCP
 * sockets (traps), through each channel an address comes in by:
 *   - identify (its own addresses: dialled by peer ID when pind dials it again),
 *   - the closer peers of its DHT answers (dialled by a kad query, and by the
 *     routing table's ping before it takes a peer in),
 *   - the provider of a GET_PROVIDERS answer (the provider finder skips it;
 *     the routing table's ping does not).
 * No trap may ever see a connection. (Which of the names resolve depends on
 * the machine: here `LOCALHOST` and the host name do, through /etc/hosts.)
 * The same scenario without the gate (--origin-addresses any) shows that each
 * channel does lead to a dial of the names.
 */
import { lookup } from 'node:dns/promises'
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:net'
import { hostname } from 'node:os'
import { peerIdFromString } from '@libp2p/peer-id'
import { describe, expect, it } from 'vitest'
import { rawCid } from '../../scripts/peer/index.mjs'
import { startHostileDht, type HostileDht } from '../helpers/hostile-dht.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'

interface Trap { server: Server, port: number, seen: string[] }

async function trap (): Promise<Trap> {
  const seen: string[] = []
  const server = createServer(s => {
    seen.push(`${s.remoteAddress ?? '?'}:${s.remotePort ?? '?'}`)
    s.destroy()
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  return { server, port: (server.address() as { port: number }).port, seen }
}

/** names that may resolve to 127.0.0.1, which isPrivate() (what libp2p's gate used) does not call private, and an IPv4-mapped loopback address */
const LOOPBACK_NAMES = [...new Set(['localhost.', 'LOCALHOST', 'foo.localhost', hostname()])]
const aimedAt = (port: number): string[] => [
  ...LOOPBACK_NAMES.map(n => `/dns4/${n}/tcp/${port}`),
  `/dns/LocalHost/tcp/${port}`,
  `/ip6/::ffff:127.0.0.1/tcp/${port}`
]

/** DNS names resolving to loopback here (the scenario proves something only if there are some) */
async function loopbackNames (): Promise<string[]> {
  return (await Promise.all(LOOPBACK_NAMES.map(async n => {
    try { return (await lookup(n, { all: true, family: 4 })).some(a => a.address.startsWith('127.')) ? n : undefined } catch { return undefined }
  }))).filter(n => n != null)
}

/**
 * pind bootstrapped to the hostile server, with `env`, through every channel;
 * returns the connections each trap saw (by channel).
 */
async function scenario (env: Record<string, string>): Promise<Record<'identify' | 'closer' | 'provider', string[]>> {
  const traps = { identify: await trap(), closer: await trap(), provider: await trap() }
  let hostile: HostileDht | undefined
  let pind: PindProcess | undefined
  try {
    hostile = await startHostileDht({
      port: await freePort(),
      announce: aimedAt(traps.identify.port),
      closerAddrs: aimedAt(traps.closer.port),
      providerAddrs: aimedAt(traps.provider.port)
    })
    pind = await startPind({ args: ['--routing', 'dht', '--bootstrap', hostile.addr, '--dht-mode', 'client', '--gateway-network-timeout', '2s'], env })
    const h = hostile

    // pind dials its bootstrap peer, learns its addresses by identify, and asks it for closer peers
    await waitFor(() => (h.requests.FIND_NODE ?? 0) > 0 ? true : undefined, 'pind to query the hostile DHT server', 30_000)

    // a gateway read of a CID pind does not hold looks for providers: the answer names one, and closer peers
    await fetch(`${pind.url}/ipfs/${rawCid(randomBytes(32)).toString()}`)
    expect(h.requests.GET_PROVIDERS ?? 0).toBeGreaterThan(0)

    // the server drops pind, and the next lookup makes pind dial it again by peer ID, at the
    // addresses identify put in its peer store (they replaced the bootstrap address there)
    await h.libp2p.hangUp(peerIdFromString(pind.peerId))
    await fetch(`${pind.url}/ipfs/${rawCid(randomBytes(32)).toString()}`)

    // the lookups have ended (the gateway waited 2 s for each): their dials were made at their start,
    // and a dial, had there been one, reached its trap within milliseconds
    await new Promise(resolve => setTimeout(resolve, 1000))
    return { identify: [...traps.identify.seen], closer: [...traps.closer.seen], provider: [...traps.provider.seen] }
  } finally {
    await pind?.stop()
    await hostile?.stop()
    for (const t of Object.values(traps)) t.server.close()
  }
}

describe('routing on the public network: DNS names from the network are never dialled', () => {
  it('dials no name (nor IPv4-mapped address) that a DHT answer, identify or a provider record gives, though the names reach loopback here', async () => {
    expect((await loopbackNames()).length, 'no loopback name resolves on this machine').toBeGreaterThan(0)
    // the public network's settings (the test helper's default lets origins name loopback addresses)
    expect(await scenario({ PIND_ORIGIN_ADDRESSES: 'public' })).toEqual({ identify: [], closer: [], provider: [] })
  })

  it('the observation works: on a private network (--origin-addresses any: no gate) the same names are dialled through each channel', async () => {
    const dialled = await scenario({ PIND_ORIGIN_ADDRESSES: 'any' })
    expect(dialled.identify.length).toBeGreaterThan(0)
    expect(dialled.closer.length).toBeGreaterThan(0)
    expect(dialled.provider.length).toBeGreaterThan(0)
  })
})
