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
 * No trap may ever see a connection.
 */
import { lookup } from 'node:dns/promises'
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:net'
import { hostname } from 'node:os'
import { peerIdFromString } from '@libp2p/peer-id'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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

/** names (and one address) that reach 127.0.0.1 but that isPrivate() does not call private */
const LOOPBACK_NAMES = [...new Set(['localhost.', 'LOCALHOST', 'foo.localhost', hostname()])]
const aimedAt = (port: number): string[] => [
  ...LOOPBACK_NAMES.map(n => `/dns4/${n}/tcp/${port}`),
  `/dns/LocalHost/tcp/${port}`,
  `/ip6/::ffff:127.0.0.1/tcp/${port}`
]

let traps: { identify: Trap, closer: Trap, provider: Trap }
let hostile: HostileDht
let pind: PindProcess

beforeAll(async () => {
  traps = { identify: await trap(), closer: await trap(), provider: await trap() }
  hostile = await startHostileDht({
    port: await freePort(),
    announce: aimedAt(traps.identify.port),
    closerAddrs: aimedAt(traps.closer.port),
    providerAddrs: aimedAt(traps.provider.port)
  })
  pind = await startPind({
    args: ['--routing', 'dht', '--bootstrap', hostile.addr, '--dht-mode', 'client', '--gateway-network-timeout', '2s'],
    // the public network's settings (the test helper's default lets origins name loopback addresses)
    env: { PIND_ORIGIN_ADDRESSES: 'public' }
  })
})

afterAll(async () => {
  await pind?.stop()
  await hostile?.stop()
  for (const t of Object.values(traps ?? {})) t.server.close()
})

const dialsAt = (): Record<string, string[]> => ({ identify: traps.identify.seen, closer: traps.closer.seen, provider: traps.provider.seen })

describe('routing on the public network: DNS names from the network are never dialled', () => {
  it('dials no name (nor IPv4-mapped address) that a DHT answer, identify or a provider record gives, though the names reach loopback here', async () => {
    // the test proves something only if some of the names reach the traps on this machine
    const resolving = (await Promise.all(LOOPBACK_NAMES.map(async n => {
      try { return (await lookup(n, { all: true, family: 4 })).some(a => a.address.startsWith('127.')) ? n : undefined } catch { return undefined }
    }))).filter(n => n != null)
    expect(resolving.length, 'no loopback name resolves on this machine').toBeGreaterThan(0)

    // pind dials its bootstrap peer, learns its addresses by identify, and asks it for closer peers
    await waitFor(() => (hostile.requests.FIND_NODE ?? 0) > 0 ? true : undefined, 'pind to query the hostile DHT server', 30_000)

    // a gateway read of a CID pind does not hold looks for providers: the answer names one, and closer peers
    const missing = rawCid(randomBytes(32)).toString()
    await fetch(`${pind.url}/ipfs/${missing}`)
    expect(hostile.requests.GET_PROVIDERS ?? 0).toBeGreaterThan(0)

    // the server drops pind, and the next lookup makes pind dial it again by peer ID, at the
    // addresses identify put in its peer store (they replaced the bootstrap address there)
    await hostile.libp2p.hangUp(peerIdFromString(pind.peerId))
    await fetch(`${pind.url}/ipfs/${rawCid(randomBytes(32)).toString()}`)

    // the lookups have ended (the gateway waited 2 s for each): their dials were made at their start,
    // and a dial, had there been one, reached its trap within milliseconds
    await new Promise(resolve => setTimeout(resolve, 1000))
    expect(dialsAt()).toEqual({ identify: [], closer: [], provider: [] })
  })
})
