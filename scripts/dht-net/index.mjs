// A loopback Amino-style DHT for tests and benchmarks: N independent libp2p
// nodes in this process, each running @libp2p/kad-dht in server mode on the
// Amino protocol (/ipfs/kad/1.0.0), listening on 127.0.0.1 only, bootstrapped
// to each other. Nothing here knows any public address: a pind bootstrapped
// to these nodes stays on the machine.
//
// Peer records keep loopback addresses (passthroughMapper): the one setting
// in which this network differs from the public one. Record lifetimes and the
// expiry sweep are parameters, so a test can watch records expire in seconds.
import { identify } from '@libp2p/identify'
import { kadDHT, passthroughMapper } from '@libp2p/kad-dht'
import { noise } from '@libp2p/noise'
import { ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { MemoryDatastore } from 'datastore-core'
import { Key } from 'interface-datastore'
import { createLibp2p } from 'libp2p'
import { CID } from 'multiformats/cid'
import { base32 } from 'multiformats/bases/base32'

export const AMINO = '/ipfs/kad/1.0.0'

/** kad-dht options shared by the network's nodes and by helpers joining it (scripts/peer) */
export function loopbackDht ({ server = true, recordLifetimeMs = 48 * 3600_000, cleanupIntervalMs = 3600_000 } = {}) {
  return kadDHT({
    protocol: AMINO,
    clientMode: !server,
    peerInfoMapper: passthroughMapper,
    reprovide: { validity: recordLifetimeMs, interval: cleanupIntervalMs },
    // Kubo's servers give an idle stream a minute (kad-dht's 10 s default cuts batches short on a loaded machine)
    incomingMessageTimeout: 60_000
  })
}

/**
 * Starts `nodes` DHT servers. `links`: how many earlier nodes each one dials
 * (default all: a full mesh, so routing tables are complete at once).
 */
export async function startDhtNetwork ({ nodes = 10, links, recordLifetimeMs, cleanupIntervalMs } = {}) {
  const list = []
  for (let i = 0; i < nodes; i++) {
    const datastore = new MemoryDatastore()
    const libp2p = await createLibp2p({
      addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
      transports: [tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      datastore,
      connectionManager: { maxConnections: 1000, inboundConnectionThreshold: 10_000, maxIncomingPendingConnections: 1000 },
      // loopback connections do not fail; a ping answered late on a loaded machine must not cut them
      connectionMonitor: { abortConnectionOnPingFailure: false },
      services: { identify: identify(), ping: ping(), dht: loopbackDht({ recordLifetimeMs, cleanupIntervalMs }) }
    })
    const earlier = links == null ? list : list.slice(Math.max(0, list.length - links))
    // one at a time, and a dial that times out on a loaded machine is tried again (the DHT also finds peers itself)
    for (const n of earlier) {
      for (let attempt = 0; attempt < 3; attempt++) {
        try { await libp2p.dial(n.libp2p.getMultiaddrs()[0]); break } catch {}
      }
    }
    list.push({ libp2p, datastore, peerId: libp2p.peerId.toString(), multiaddr: libp2p.getMultiaddrs()[0].toString() })
  }
  // every node knows (nearly) every other: a connection dropped under start-up load (libp2p's
  // connection monitor pings) is found again by the DHT's own self-queries
  const want = links == null ? Math.ceil((nodes - 1) * 0.8) : Math.min(nodes - 1, 2)
  const deadline = Date.now() + 60_000
  while (list.some(n => n.libp2p.services.dht.routingTable.size < want)) {
    if (Date.now() > deadline) throw new Error(`the loopback DHT did not fill its routing tables in 60 s: ${list.map(n => n.libp2p.services.dht.routingTable.size).join(',')}; connections ${list.map(n => n.libp2p.getConnections().length).join(',')}`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }

  return {
    nodes: list,
    /** multiaddrs (with /p2p/) of the first `n` nodes */
    addrs: (n = list.length) => list.slice(0, n).map(x => x.multiaddr),
    /**
     * The provider records the nodes hold for `cid` naming `provider` (a peer
     * ID string): one entry per node holding one, with the time it was stored.
     */
    async records (cid, provider) {
      const mh = typeof cid === 'string' ? CID.parse(cid).multihash.bytes : cid.multihash.bytes
      const key = new Key(`/dht/provider/${base32.baseEncode(mh)}/${provider}`)
      const out = []
      for (const n of list) {
        if (!await n.datastore.has(key)) continue
        out.push({ node: n.peerId, at: readVarint(await n.datastore.get(key)) })
      }
      return out
    },
    /** the connections the nodes have with `peerId` now, with their direction as the nodes see it */
    connectionsWith (peerId) {
      return list.flatMap(n => n.libp2p.getConnections().filter(c => c.remotePeer.toString() === peerId).map(c => ({ node: n.peerId, direction: c.direction })))
    },
    /** every inbound or outbound connection any node had with `peerId` since this call */
    watchConnections (peerId) {
      const seen = []
      const listeners = list.map(n => {
        const fn = (evt) => { if (evt.detail.remotePeer.toString() === peerId) seen.push({ node: n.peerId, direction: evt.detail.direction }) }
        n.libp2p.addEventListener('connection:open', fn)
        return () => n.libp2p.removeEventListener('connection:open', fn)
      })
      return { seen, stop: () => { for (const off of listeners) off() } }
    },
    async dial (addr) {
      await list[0].libp2p.dial(multiaddr(addr))
    },
    async stop () {
      await Promise.all(list.map(async n => { await n.libp2p.stop() }))
    }
  }
}

/** kad-dht stores a provider record's time as an unsigned varint of ms */
function readVarint (bytes) {
  let v = 0
  for (let i = 0, m = 1; i < bytes.length; i++, m *= 128) {
    v += (bytes[i] & 0x7f) * m
    if ((bytes[i] & 0x80) === 0) break
  }
  return v
}
