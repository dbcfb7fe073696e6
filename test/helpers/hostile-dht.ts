/**
 * A hostile DHT server on loopback: a real libp2p node (TCP, noise, yamux,
 * identify, ping) that speaks the Amino DHT protocol with answers of its
 * own making, so that a test decides which addresses reach the node it talks
 * to, and through which channel:
 *
 *   - identify: it announces `announce` as its own addresses;
 *   - FIND_NODE, GET_VALUE, GET_PROVIDERS: every answer names, as closer
 *     peers, made-up peers at `closerAddrs` — each closer to the key than this
 *     server, or kad-dht would not follow them;
 *   - GET_PROVIDERS: the answer names a made-up provider at `providerAddrs`.
 *
 * Wire format as in src/ipfs/routing/add-provider.ts (kad-dht does not export
 * its codec): Message { type = 1; key = 2; closerPeers = 8; providerPeers = 9 },
 * Peer { id = 1; addrs = 2 }.
 */
import { createHash } from 'node:crypto'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { identify } from '@libp2p/identify'
import { noise } from '@libp2p/noise'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { lpStream } from '@libp2p/utils'
import { yamux } from '@libp2p/yamux'
import type { Libp2p, PeerId } from '@libp2p/interface'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p } from 'libp2p'
import { reader, writer } from 'protons-runtime'

const AMINO = '/ipfs/kad/1.0.0'
const TYPES: Record<number, string> = { 0: 'PUT_VALUE', 1: 'GET_VALUE', 2: 'ADD_PROVIDER', 3: 'GET_PROVIDERS', 4: 'FIND_NODE', 5: 'PING' }

export interface HostileDht {
  libp2p: Libp2p
  peerId: string
  /** where it listens, with /p2p/ (what the node under test is bootstrapped to) */
  addr: string
  /** DHT requests received, by type */
  requests: Record<string, number>
  stop(): Promise<void>
}

export interface HostileDhtOptions {
  port: number
  /** the addresses identify gives out as this node's own */
  announce: string[]
  /** the addresses of the closer peers every answer names */
  closerAddrs: string[]
  /** the addresses of the provider every GET_PROVIDERS answer names */
  providerAddrs: string[]
}

const sha256 = (b: Uint8Array): Buffer => createHash('sha256').update(b).digest()
const closer = (a: Buffer, b: Buffer, target: Buffer): boolean => {
  for (let i = 0; i < target.length; i++) {
    const x = (a[i] as number) ^ (target[i] as number)
    const y = (b[i] as number) ^ (target[i] as number)
    if (x !== y) return x < y
  }
  return false
}

function peerField (id: PeerId, addrs: string[]): Uint8Array {
  const w = writer()
  w.uint32(10).bytes(id.toMultihash().bytes)
  for (const a of addrs) w.uint32(18).bytes(multiaddr(a).bytes)
  return w.finish()
}

export async function startHostileDht (o: HostileDhtOptions): Promise<HostileDht> {
  const libp2p = await createLibp2p({
    addresses: { listen: [`/ip4/127.0.0.1/tcp/${o.port}`], announce: o.announce },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    services: { identify: identify(), ping: ping() }
  })
  const self = sha256(libp2p.peerId.toMultihash().bytes)
  const provider = peerIdFromPrivateKey(await generateKeyPair('Ed25519'))
  const requests: Record<string, number> = {}
  /** a made-up peer closer to the key than this server (kad-dht follows only those) */
  const closerPeer = async (key: Uint8Array): Promise<PeerId> => {
    const target = sha256(key)
    for (;;) {
      const id = peerIdFromPrivateKey(await generateKeyPair('Ed25519'))
      if (closer(sha256(id.toMultihash().bytes), self, target)) return id
    }
  }

  const answer = async (bytes: Uint8Array): Promise<Uint8Array | undefined> => {
    const r = reader(bytes)
    let type = 0
    let key: Uint8Array = new Uint8Array()
    while (r.pos < r.len) {
      const tag = r.uint32()
      if (tag >>> 3 === 1) type = r.int32()
      else if (tag >>> 3 === 2) key = r.bytes()
      else r.skipType(tag & 7)
    }
    const name = TYPES[type] ?? String(type)
    requests[name] = (requests[name] ?? 0) + 1
    if (type === 2) return undefined
    const w = writer()
    w.uint32(8).int32(type)
    if (key.length > 0) w.uint32(18).bytes(key)
    if (type === 1 || type === 3 || type === 4) w.uint32(66).bytes(peerField(await closerPeer(key), o.closerAddrs))
    if (type === 3) w.uint32(74).bytes(peerField(provider, o.providerAddrs))
    return w.finish()
  }

  await libp2p.handle(AMINO, async (stream) => {
    const lp = lpStream(stream)
    try {
      for (;;) {
        const msg = await lp.read({ signal: AbortSignal.timeout(30_000) })
        const res = await answer(msg.subarray())
        if (res != null) await lp.write(res)
      }
    } catch {
      // the asker closed its side (or went quiet)
      stream.abort(new Error('done'))
    }
  }, { maxInboundStreams: 64 })

  return {
    libp2p,
    peerId: libp2p.peerId.toString(),
    addr: `/ip4/127.0.0.1/tcp/${o.port}/p2p/${libp2p.peerId.toString()}`,
    requests,
    stop: async () => { await libp2p.stop() }
  }
}
