/**
 * Builds the embedded IPFS node explicitly, so that nothing dials out unless
 * configured: Helia (light) + libp2p over TCP with noise and yamux, identify,
 * bitswap as the only block broker; no mDNS, HTTP gateways or UPnP. Content
 * routing (the Amino DHT with ping and AutoNAT v2, bootstrap peers, delegated
 * HTTP routing) only when the operator turns it on (`routing`, see
 * ./routing/). Connection and per-peer stream limits always apply. Blocks
 * live in the block backend's store (block-backend.ts: on disk or in S3),
 * opened and closed by its owner.
 * The node knows every codec and hash function pind pins (codecs.ts), and
 * bitswap sends a peer only the blocks the serve policy allows (`mayServe`).
 */
import { withBitswap } from '@helia/bitswap'
import { withLibp2pLight } from '@helia/libp2p'
import { noise } from '@libp2p/noise'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createHeliaLight } from 'helia'
import type { BlockBroker, Helia, HeliaMixin } from '@helia/interface'
import type { AbortOptions, PrivateKey } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import type { Blockstore } from 'interface-blockstore'
import type { Datastore } from 'interface-datastore'
import type { CID } from 'multiformats/cid'
import type { Logger } from '../kernel/log.js'
import { PIN_CODECS, PIN_HASHERS } from './codecs.js'
import { Libp2pDatastore } from './routing/datastore.js'
import { startRouting, type Routing } from './routing/index.js'
import { ProviderGuard } from './routing/provider-guard.js'
import { noiseCrypto } from './noise-crypto.js'
import { limitsOptions, MAX_INBOUND_STREAMS_PER_PEER, routingServices, type Limits, type RoutingSetup } from './routing/libp2p-options.js'

export interface IpfsRoutingOptions extends RoutingSetup {
  delegatedUrl?: string
  /** as a DHT server: most records others may store here */
  maxRecords: number
  /** … and of them, most provider records naming one peer */
  maxRecordsPerPeer: number
  onLookup?: (seconds: number, found: number, source: 'dht' | 'delegated') => void
}

/**
 * Helia's router for bitswap and sessions: finds nothing. pind looks for
 * providers itself, once per root, with its own address policy and caps
 * (./routing/find.ts); named like the one withLibp2pLight would add so that
 * it adds none.
 */
const INERT_ROUTER = { name: 'libp2p-router', async * findProviders () {} }

export interface IpfsNodeOptions {
  /** the block backend's store (the caller opens and closes it) */
  blockstore: Blockstore
  datastore: Datastore
  privateKey: PrivateKey
  listen: string[]
  announce: string[]
  /** peers dialled at start (best effort) */
  peers: string[]
  log: Logger
  /**
   * May bitswap send this block to a peer that asks for it? Asked before each
   * block leaves (a block refused is "not here": DONT_HAVE when the peer
   * wants to know). Default: any block held.
   */
  mayServe?: (cid: CID) => boolean
  /** content routing; absent = none */
  routing?: IpfsRoutingOptions
  /** connection limits, and whether private ranges are refused (the configured peers are exempt) */
  limits: Omit<Limits, 'exemptDials'>
}

/**
 * What the rest of pind may do with the node: read the blocks held here,
 * reach peers, know codecs and hashes. Helia, libp2p and the blockstore
 * behind it stay in this folder.
 */
export interface IpfsNode {
  /** the blocks held here (never the network, unlike Helia's own blockstore) */
  blockstore: Pick<Blockstore, 'get' | 'has'>
  peerId: string
  /** multiaddrs others can dial, each ending in /p2p/<peerId> */
  multiaddrs(): string[]
  /** the peers connected now */
  connections(): Array<{ peer: string, addr: string }>
  /** whether this peer is connected now */
  isConnected(peer: string): boolean
  dial(addr: Multiaddr, options?: AbortOptions): Promise<void>
  /** libp2p's state: 'started' while it runs */
  status(): string
  getCodec: Helia['getCodec']
  getHasher: Helia['getHasher']
  /** the node's bitswap (what ./network.ts wants blocks with) */
  bitswap(): BlockBroker
  routing: Routing
  stop(): Promise<void>
}

export async function startIpfsNode (opts: IpfsNodeOptions): Promise<IpfsNode> {
  const blockstore = opts.blockstore
  const r = opts.routing
  const libp2pDatastore = await Libp2pDatastore.open(opts.datastore, { persistPeers: r != null, maxRecords: r?.maxRecords ?? 0, maxRecordsPerPeer: r?.maxRecordsPerPeer ?? 0 })
  const providerGuard = new ProviderGuard({ allowPrivate: r?.privateAddresses ?? false })
  const helia = withLibp2pLight(createHeliaLight({ blockstore, datastore: opts.datastore, codecs: [...PIN_CODECS], hashers: [...PIN_HASHERS], routers: [INERT_ROUTER] }), {
    privateKey: opts.privateKey,
    datastore: libp2pDatastore,
    addresses: { listen: opts.listen, announce: opts.announce },
    transports: [tcp()],
    connectionEncrypters: [noise({ crypto: noiseCrypto })],
    streamMuxers: [yamux({ maxInboundStreams: MAX_INBOUND_STREAMS_PER_PEER })],
    peerDiscovery: [],
    ...limitsOptions({ ...opts.limits, exemptDials: [...opts.peers, ...(r?.bootstrap ?? [])] }),
    services: routingServices(r ?? { dht: false, bootstrap: [], dhtMode: 'auto', privateAddresses: false, recordLifetimeMs: 0 }, providerGuard)
  })
  withBitswap(servingOnly(helia, opts.mayServe))
  try {
    await helia.start()
  } catch (err) {
    // (the blockstore is its owner's to close)
    throw listenError(err) ?? err
  }
  const routing = await startRouting(helia.libp2p, libp2pDatastore, providerGuard, {
    dht: r?.dht === true,
    ...(r?.delegatedUrl != null ? { delegatedUrl: r.delegatedUrl } : {}),
    bootstrap: r?.bootstrap ?? [],
    privateAddresses: r?.privateAddresses ?? false,
    log: opts.log,
    ...(r?.onLookup != null ? { onLookup: r.onLookup } : {})
  })
  const peerId = helia.libp2p.peerId.toString()
  for (const peer of opts.peers) {
    helia.libp2p.dial(multiaddr(peer)).catch((err: Error) => {
      opts.log.warn('could not dial configured peer', { peer, error: err.message })
    })
  }
  return {
    blockstore,
    peerId,
    multiaddrs: () => helia.libp2p.getMultiaddrs().map(ma => ma.toString()),
    connections: () => helia.libp2p.getConnections().map(c => ({ peer: c.remotePeer.toString(), addr: c.remoteAddr.toString() })),
    isConnected: (peer) => helia.libp2p.getConnections().some(c => c.remotePeer.toString() === peer),
    dial: async (addr, options) => { await helia.libp2p.dial(addr, options) },
    status: () => helia.libp2p.status,
    getCodec: async (code) => await helia.getCodec(code),
    getHasher: async (code) => await helia.getHasher(code),
    bitswap: () => {
      // Helia keeps its block brokers on the node (not in its interface)
      const b = (helia as unknown as { blockBrokers: BlockBroker[] }).blockBrokers.find(b => b.name === 'bitswap')
      if (b?.retrieve == null) throw new Error('bitswap is not running')
      return b
    },
    routing,
    stop: async () => {
      routing.stop()
      await helia.stop()
    }
  }
}

/**
 * Bitswap answers peers from the blockstore of the Helia node its mixin is
 * started with (`has`, then `get`). This hands withBitswap a stand-in whose
 * mixin is started with a view of the node where that blockstore holds only
 * the blocks `mayServe` allows; everything else about the node is the node.
 * (Leans on @helia/bitswap's mixin taking its components from the node it is
 * started with: test/e2e/hostile-bitswap.test.ts checks it still does.)
 */
function servingOnly<T extends Helia> (helia: T, mayServe: ((cid: CID) => boolean) | undefined): T {
  if (mayServe == null) return helia
  const view = (node: Helia): Helia => {
    const blocks = node.blockstore
    const served: Pick<Blockstore, 'has' | 'get'> = {
      has: async (cid, options) => mayServe(cid) && await blocks.has(cid, options),
      get: (cid, options) => {
        // the name is what bitswap checks (interface-store's NotFoundError)
        if (!mayServe(cid)) throw Object.assign(new Error(`${cid.toString()} is not served`), { name: 'NotFoundError' })
        return blocks.get(cid, options)
      }
    }
    return new Proxy(node, { get: (target, key, receiver) => key === 'blockstore' ? served : Reflect.get(target, key, receiver) as unknown })
  }
  return {
    addMixin: (mixin: HeliaMixin) => {
      helia.addMixin({
        name: mixin.name,
        start: async (node: Helia) => { await mixin.start?.(view(node)) },
        stop: async (node: Helia) => { await mixin.stop?.(view(node)) }
      })
    }
  } as unknown as T
}

/** libp2p could not listen on some of its addresses (each with its errno code, e.g. EADDRINUSE) */
export class P2pListenError extends Error {
  override name = 'P2pListenError'
  constructor (readonly failures: Array<{ address: string, code?: string }>) {
    super(`could not listen on ${failures.map(f => `${f.address}${f.code != null ? ` (${f.code})` : ''}`).join(', ')}`)
  }
}

/** libp2p's listen failure (its message lists "<multiaddr>: Error: listen EADDRINUSE …" per address), as a P2pListenError */
function listenError (err: unknown): P2pListenError | undefined {
  if ((err as Error)?.name !== 'UnsupportedListenAddressesError') return undefined
  const failures = [...(err as Error).message.matchAll(/^\s*(\/\S+): .*?\b(E[A-Z]{3,})\b/gm)].map(m => ({ address: m[1] as string, code: m[2] as string }))
  return new P2pListenError(failures.length > 0 ? failures : [{ address: 'the --p2p-listen addresses' }])
}
