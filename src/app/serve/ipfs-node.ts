/**
 * Serve's IPFS node from the settings: libp2p with bitswap answering only
 * what the serve policy allows, and the routing the operator chose (the DHT,
 * delegated HTTP routing, or none). Started here; the caller stops it.
 */
import type { PrivateKey } from '@libp2p/interface'
import type { Datastore } from 'interface-datastore'
import type { CID } from 'multiformats/cid'
import type { Config } from '../../config/settings.js'
import type { BlockBackend } from '../../ipfs/block-backend.js'
import { P2pListenError, startIpfsNode, type IpfsNode } from '../../ipfs/node.js'
import { listensBeyondLoopback } from '../../ipfs/routing/listen.js'
import type { Logger } from '../../kernel/log.js'
import type { Metrics } from '../../metrics/registry.js'
import { listenFailure, type ListenFailure } from '../startup-errors.js'

export interface ServeNodeDeps {
  blocks: BlockBackend
  /** libp2p's own records (the peer store) */
  datastore: Datastore
  privateKey: PrivateKey
  /** asked for every block bitswap would send */
  mayServe: (cid: CID) => boolean
  metrics: Metrics
  log: Logger
}

export interface ServeNode {
  ipfs: IpfsNode
  /** whether content is announced and looked up (--routing is not none) */
  routingOn: boolean
  /** finds a CID's providers and connects to them (undefined without routing) */
  find?: (cid: CID, signal: AbortSignal) => Promise<unknown>
}

export async function startServeNode (config: Readonly<Config>, d: ServeNodeDeps): Promise<ServeNode> {
  const routingOn = !config.routing.includes('none')
  const ipfs = await startIpfsNode({
    blockstore: d.blocks.blockstore,
    datastore: d.datastore,
    privateKey: d.privateKey,
    listen: config.p2pListen,
    announce: config.p2pAnnounce,
    peers: config.p2pPeers,
    log: d.log,
    mayServe: d.mayServe,
    limits: {
      maxConnections: config.p2pMaxConnections,
      inboundRate: config.p2pInboundRate,
      // on the public network nothing dials private ranges, unless the operator runs a private one
      refusePrivateDials: routingOn && !config.routingPrivateAddresses && config.originAddresses !== 'any'
    },
    ...(routingOn
      ? {
          routing: {
            dht: config.routing.includes('dht'),
            bootstrap: config.bootstrap,
            dhtMode: config.dhtMode,
            privateAddresses: config.routingPrivateAddresses,
            recordLifetimeMs: config.dhtRecordLifetime * 1000,
            maxRecords: config.dhtMaxRecords,
            maxRecordsPerPeer: config.dhtMaxRecordsPerPeer,
            ...(config.routing.includes('delegated') && config.delegatedRoutingUrl != null ? { delegatedUrl: config.delegatedRoutingUrl } : {}),
            onLookup: (seconds, _found, source) => { d.metrics.findProviders(seconds, source) }
          }
        }
      : {})
  }).catch((err: unknown) => {
    if (err instanceof P2pListenError) throw listenFailure('the libp2p listen address', err.failures[0] as ListenFailure, '--p2p-listen (PIND_P2P_LISTEN)')
    throw err
  })
  if (config.bootstrap.length > 0 && !config.routing.includes('dht')) d.log.warn('--bootstrap is set but --routing has no dht: the bootstrap peers are not used')
  if (!routingOn && listensBeyondLoopback(config.host, config.p2pListen)) {
    d.log.warn('listening beyond loopback with --routing none: pinned content is not announced, so IPFS nodes will not find it here (only this gateway and peers that dial this node directly serve it); set --routing dht to announce it')
  }
  const finder = ipfs.routing.finder
  return {
    ipfs,
    routingOn,
    ...(finder != null ? { find: async (cid: CID, signal: AbortSignal) => await finder.findAndConnect(cid, signal) } : {})
  }
}
