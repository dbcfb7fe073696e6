/**
 * The node's content routing once libp2p runs: the DHT announcer (sweep) and
 * the provider finder (DHT and/or delegated HTTP routing), the peer store's
 * bounds, and a watchdog that re-dials the bootstrap peers when the routing
 * table is empty (@libp2p/bootstrap dials once, at start).
 *
 * Helia's own routing is left inert (node.ts): bitswap would otherwise run a
 * DHT lookup for every block it wants and dial whatever the records name.
 */
import { delegatedRoutingV1HttpApiClient, type DelegatedRoutingV1HttpApiClient } from '@helia/delegated-routing-v1-http-api-client'
import type { Libp2p } from '@libp2p/interface'
import type { KadDHT, SingleKadDHT } from '@libp2p/kad-dht'
import { multiaddr } from '@multiformats/multiaddr'
import type { Logger } from '../../kernel/log.js'
import { DhtAnnouncer } from './announcer.js'
import type { Libp2pDatastore } from './datastore.js'
import { ProviderFinder } from './find.js'
import { AMINO_PROTOCOL, bootstrapList } from './libp2p-options.js'
import { startPeerStorePruner } from './peer-store.js'
import type { ProviderGuard } from './provider-guard.js'

export { AMINO_PROTOCOL } from './libp2p-options.js'
export type { DhtAnnouncer } from './announcer.js'
export type { ProviderFinder } from './find.js'

/** peers the peer store keeps beyond the connected ones */
export const MAX_STORED_PEERS = 2048
const WATCHDOG_MS = 10_000

export interface RoutingStatus {
  dht: boolean
  delegated: boolean
  /** client or server (DHT only) */
  mode?: 'client' | 'server'
  routingTable: number
  connections: number
  /** records other peers store here (DHT server) */
  records: number
  /** records refused: the cap (--dht-max-records) was reached */
  recordsDropped: number
  /** provider records refused: the peer they name had its share (--dht-max-records-per-peer) */
  recordsDroppedPeerShare: number
  /** inbound DHT streams cut: a message over 16 KiB (provider-guard.ts) */
  dhtMessagesTooLarge: number
  /** ADD_PROVIDER messages dropped unread: the sender was over its rate (provider-guard.ts) */
  providerMessagesRefused: number
  /** addresses in ADD_PROVIDER messages not stored: not dialable, or past the message's or the peer's cap */
  providerAddressesDropped: number
}

export interface Routing {
  dht?: KadDHT
  announcer?: DhtAnnouncer
  /** undefined with --routing none */
  finder?: ProviderFinder
  status(): RoutingStatus
  stop(): void
}

export interface RoutingStart {
  dht: boolean
  delegatedUrl?: string
  bootstrap: string[]
  privateAddresses: boolean
  log: Logger
  onLookup?: (seconds: number, found: number, source: 'dht' | 'delegated') => void
}

export async function startRouting (libp2p: Libp2p, datastore: Libp2pDatastore, guard: ProviderGuard, o: RoutingStart): Promise<Routing> {
  const pruner = startPeerStorePruner(libp2p, { maxPeers: MAX_STORED_PEERS, log: o.log })
  const dht = o.dht ? (libp2p.services as { dht?: KadDHT }).dht : undefined
  const delegated: DelegatedRoutingV1HttpApiClient | undefined = o.delegatedUrl != null
    ? delegatedRoutingV1HttpApiClient({ url: o.delegatedUrl, timeout: 30_000, cacheTTL: 0 })({ logger: libp2p.logger })
    : undefined
  await delegated?.start()
  const finder = dht != null || delegated != null
    ? new ProviderFinder({ libp2p, ...(dht != null ? { dht } : {}), ...(delegated != null ? { delegated } : {}), allowPrivate: o.privateAddresses, ...(o.onLookup != null ? { onLookup: o.onLookup } : {}) })
    : undefined
  const announcer = dht != null ? new DhtAnnouncer(libp2p, dht, AMINO_PROTOCOL) : undefined
  const tableSize = (): number => (dht as SingleKadDHT | undefined)?.routingTable?.size ?? 0

  const bootstrap = bootstrapList(o.bootstrap)
  const watchdog = dht != null && bootstrap.length > 0
    ? setInterval(() => {
      if (tableSize() > 0) return
      o.log.warn('the DHT routing table is empty: dialling the bootstrap peers again')
      for (const addr of bootstrap) libp2p.dial(multiaddr(addr)).catch(() => {})
    }, WATCHDOG_MS)
    : undefined
  watchdog?.unref()

  return {
    ...(dht != null ? { dht } : {}),
    ...(announcer != null ? { announcer } : {}),
    ...(finder != null ? { finder } : {}),
    status: () => ({
      dht: dht != null,
      delegated: delegated != null,
      ...(dht != null ? { mode: dht.getMode() } : {}),
      routingTable: tableSize(),
      connections: libp2p.getConnections().length,
      records: datastore.recordCount,
      recordsDropped: datastore.dropped,
      recordsDroppedPeerShare: datastore.droppedPeerShare,
      dhtMessagesTooLarge: guard.tooLarge,
      providerMessagesRefused: guard.refused,
      providerAddressesDropped: guard.addressesDropped
    }),
    stop: () => {
      clearInterval(watchdog)
      pruner.stop()
      void delegated?.stop()
    }
  }
}
