/**
 * Builds the embedded IPFS node explicitly, so that nothing dials out unless
 * configured: Helia (light) + libp2p over TCP with noise and yamux, identify,
 * bitswap as the only block broker; no bootstrap, DHT, mDNS, delegated routing,
 * HTTP gateways, autoNAT or UPnP. Blocks live in an on-disk FsBlockstore.
 */
import { mkdirSync } from 'node:fs'
import { withBitswap } from '@helia/bitswap'
import { withLibp2pLight } from '@helia/libp2p'
import { identify } from '@libp2p/identify'
import { noise } from '@libp2p/noise'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { FsBlockstore } from 'blockstore-fs'
import { createHeliaLight } from 'helia'
import type { Helia } from '@helia/interface'
import type { Libp2p, PrivateKey } from '@libp2p/interface'
import type { Datastore } from 'interface-datastore'
import type { Logger } from '../log.js'

export interface IpfsNodeOptions {
  blocksDir: string
  datastore: Datastore
  privateKey: PrivateKey
  listen: string[]
  announce: string[]
  /** peers dialled at start (best effort) */
  peers: string[]
  log: Logger
}

export interface IpfsNode {
  helia: Helia & { libp2p: Libp2p }
  blockstore: FsBlockstore
  peerId: string
  /** multiaddrs others can dial, each ending in /p2p/<peerId> */
  multiaddrs(): string[]
  stop(): Promise<void>
}

export async function startIpfsNode (opts: IpfsNodeOptions): Promise<IpfsNode> {
  mkdirSync(opts.blocksDir, { recursive: true })
  const blockstore = new FsBlockstore(opts.blocksDir)
  await blockstore.open()
  const helia = withBitswap(withLibp2pLight(createHeliaLight({ blockstore, datastore: opts.datastore }), {
    privateKey: opts.privateKey,
    addresses: { listen: opts.listen, announce: opts.announce },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    peerDiscovery: [],
    services: { identify: identify() }
  }))
  await helia.start()
  const peerId = helia.libp2p.peerId.toString()
  for (const peer of opts.peers) {
    helia.libp2p.dial(multiaddr(peer)).catch((err: Error) => {
      opts.log.warn('could not dial configured peer', { peer, error: err.message })
    })
  }
  return {
    helia,
    blockstore,
    peerId,
    multiaddrs: () => helia.libp2p.getMultiaddrs().map(ma => ma.toString()),
    stop: async () => {
      await helia.stop()
      await blockstore.close()
    }
  }
}
