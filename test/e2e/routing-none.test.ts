/**
 * --routing none (the default) dials nothing but configured peers and
 * origins, observed from outside: the DHT nodes an earlier --routing dht run
 * of the same data dir knew (and tagged to keep alive) never see pind dial
 * them, and the process opens no outbound TCP connection at all while it is
 * asked for a CID nobody has (a pin quote, a gateway read-through). At start
 * it warns that nothing is announced when it listens beyond loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDhtNetwork, type DhtNetwork } from '../../scripts/dht-net/index.mjs'
import { startPind, tempDir } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { watchOutbound } from '../helpers/sockets.js'

const NOBODY_HAS = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'

let net: DhtNetwork

beforeAll(async () => {
  net = await startDhtNetwork({ nodes: 4 })
})

afterAll(async () => {
  await net?.stop()
})

describe('--routing none', () => {
  it('makes no outbound dial: not to the DHT peers an earlier run persisted, not for a pin quote or a gateway read of a CID nobody has', async () => {
    const dataDir = tempDir()
    // an earlier run on the DHT: its peers go into the persisted peer store (the closest ones tagged keep-alive)
    const withDht = await startPind({ dataDir, args: ['--routing', 'dht', '--bootstrap', net.addrs(2).join(','), '--routing-private-addresses', '--dht-mode', 'client'] })
    // the observation works: the DHT nodes see this run dial them (inbound, from their side)
    await waitFor(() => net.connectionsWith(withDht.peerId).filter(c => c.direction === 'inbound').length >= 3 ? true : undefined, 'the dht run to dial the DHT nodes')
    // kad-dht tags its closest peers keep-alive every 5 s: libp2p redials such peers at start
    await new Promise(resolve => setTimeout(resolve, 6000))
    expect(await withDht.stop()).toBe(0)

    const watch = net.watchConnections(withDht.peerId)
    const pind = await startPind({ dataDir, args: ['--routing', 'none', '--host', '0.0.0.0', '--gateway-network-timeout', '1s', '--pin-probe-timeout', '2s'] })
    const sockets = watchOutbound(pind.pid)
    try {
      expect(pind.stderr()).toMatch(/listening beyond loopback with --routing none: pinned content is not announced/)
      const card = await (await fetch(`${pind.url}/.well-known/agent-card.json`)).json() as { skills: Array<{ id: string, description: string }> }
      expect(card.skills.find(s => s.id === 'ipfs-network')?.description).toMatch(/not announced on the IPFS DHT/)
      const quote = await fetch(`${pind.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-pin-duration-months': '1' }, body: JSON.stringify({ cid: NOBODY_HAS }) })
      expect([402, 503]).toContain(quote.status)
      expect((await fetch(`${pind.url}/ipfs/${NOBODY_HAS}`)).status).toBe(404)
      // a DHT node connects to pind: pind answers, and still dials nobody
      await net.dial(pind.multiaddrs[0] as string)
      await new Promise(resolve => setTimeout(resolve, 3000))
      expect(watch.seen.filter(c => c.direction === 'inbound')).toEqual([])
      expect(watch.seen.filter(c => c.direction === 'outbound').length).toBe(1)
      expect(sockets.stop()).toEqual([])
    } finally {
      watch.stop()
      sockets.stop()
      await pind.stop()
    }
  })
})
