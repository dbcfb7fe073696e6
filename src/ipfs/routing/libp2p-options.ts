/**
 * What routing adds to the libp2p node, and the resource limits every node
 * gets. Production and tests differ only in these inputs: the public Amino
 * DHT drops private and loopback addresses from peer records
 * (removePrivateAddressesMapper) and refuses to dial them; a loopback test
 * network keeps them (passthroughMapper) — `privateAddresses`.
 */
import { autoNATv2 } from '@libp2p/autonat-v2'
import { bootstrap } from '@libp2p/bootstrap'
import { identify } from '@libp2p/identify'
import { kadDHT, passthroughMapper, removePrivateAddressesMapper, type KadDHTComponents } from '@libp2p/kad-dht'
import { ping } from '@libp2p/ping'
import type { ConnectionGater, StreamHandler, StreamHandlerOptions } from '@libp2p/interface'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import type { Libp2pOptions } from 'libp2p'
import { isPublicAddress } from '../origins.js'
import { installProviderGuard, ProviderGuard } from './provider-guard.js'

/** the Amino DHT's protocol, the one Kubo speaks */
export const AMINO_PROTOCOL = '/ipfs/kad/1.0.0'

/** The well-known Amino bootstrap peers (Kubo's list): dialled only when the operator names `public`. */
export const AMINO_BOOTSTRAP = [
  '/dnsaddr/bootstrap.libp2p.io/p2p/QmNnooDu7bfjPFoTZYxMNLWUQJyrVwtbZg5gBMjTezGAJN',
  '/dnsaddr/bootstrap.libp2p.io/p2p/QmbLHAnMoJPWSCR5Zhtx6BHJX9KiKNN6tpvbUcqanj75Nb',
  '/dnsaddr/bootstrap.libp2p.io/p2p/QmcZf59bWwK5XFi76CZX8cbJ4BhTzzA3gU1ZjYZcYW3dwt',
  '/dnsaddr/va1.bootstrap.libp2p.io/p2p/12D3KooWKnDdG3iXw9eTFijk3EWSunZcFi54Zka4wmtqtt6rPxc8',
  '/ip4/104.131.131.82/tcp/4001/p2p/QmaCpDMGvV2BGHeYERUEnRQAwe3N8SzbUtfsmvsqQLuvuJ'
]

export interface RoutingSetup {
  dht: boolean
  /** multiaddrs, or `public` for AMINO_BOOTSTRAP */
  bootstrap: string[]
  dhtMode: 'auto' | 'client' | 'server'
  /** keep and dial private/loopback addresses (LAN or loopback routing network) */
  privateAddresses: boolean
  /** as a DHT server: how long records others store here are valid */
  recordLifetimeMs: number
}

export interface Limits {
  maxConnections: number
  /** inbound connections per second from one address */
  inboundRate: number
  /** dial public IP addresses only (the public network; see dialGate) … */
  refusePrivateDials: boolean
  /** … except these (the operator's own peers) */
  exemptDials: string[]
}

/** streams one connection may open to us at once, all protocols together (yamux) */
export const MAX_INBOUND_STREAMS_PER_PEER = 256

export function bootstrapList (entries: string[]): string[] {
  return [...new Set(entries.flatMap(e => e === 'public' ? AMINO_BOOTSTRAP : [e]))]
}

/** `guard`: what ADD_PROVIDER may store here (provider-guard.ts); one with the routing's address policy unless given */
export function routingServices (r: RoutingSetup, guard = new ProviderGuard({ allowPrivate: r.privateAddresses })): Record<string, (components: any) => unknown> {
  const services: Record<string, (components: any) => unknown> = { identify: identify() }
  if (!r.dht) return services
  services.ping = ping()
  if (r.dhtMode === 'auto') services.autoNAT = autoNATv2()
  const dht = kadDHT({
    protocol: AMINO_PROTOCOL,
    // auto: kad-dht turns server once a public address is confirmed (AutoNAT), client otherwise
    ...(r.dhtMode === 'auto' ? {} : { clientMode: r.dhtMode === 'client' }),
    peerInfoMapper: r.privateAddresses ? passthroughMapper : removePrivateAddressesMapper,
    // kad-dht's own reprovider only expires others' records here: pind announces through its sweep
    reprovide: { validity: r.recordLifetimeMs, interval: Math.min(3_600_000, Math.max(1_000, Math.floor(r.recordLifetimeMs / 4))) }
  })
  services.dht = (components: KadDHTComponents) => {
    // kad-dht's handler for inbound streams goes behind the guard's message-length watch
    const registrar = new Proxy(components.registrar, {
      get: (t, k) => k === 'handle'
        ? async (protocol: string, handler: StreamHandler, options?: StreamHandlerOptions) => { await t.handle(protocol, guard.inbound(handler), options) }
        : bound(t, k)
    })
    const guarded = new Proxy(components, { get: (t, k) => k === 'registrar' ? registrar : Reflect.get(t, k) })
    return installProviderGuard(dht(guarded), components.peerStore, guard)
  }
  const list = bootstrapList(r.bootstrap)
  if (list.length > 0) services.bootstrap = bootstrap({ list, timeout: 0 })
  return services
}

/**
 * libp2p pings every connection and cuts one whose ping is not answered in
 * time (adaptive, 5 s at least by default): a DHT server busy with a batch of
 * records answers late, not never. Pings every 30 s, answered within 20–25 s
 * (a ping must end before the next starts: one ping stream per connection).
 */
const PING_INTERVAL_MS = 30_000
const PING_TIMEOUT = { minTimeout: 20_000, maxTimeout: 25_000 }

/**
 * Which addresses libp2p may dial (true: refused). On the public network
 * (`refusePrivateDials`) only public IP addresses (as for a request's
 * origins: ../origins.ts), besides the operator's own peers as configured:
 *   - no private, loopback or link-local range: a VPS that dials them gets
 *     abuse reports (Kubo's `server` profile filters them too);
 *   - no /dns, /dns4 or /dns6 name: the gate judges an address before the TCP
 *     transport resolves its name, so a name that a peer hands us (identify,
 *     a DHT answer's closer peers, a provider record) could aim the dial at
 *     this machine or its network (`LOCALHOST`, `localhost.`, a name of the
 *     peer's own domain). Resolving it here would race the transport's own
 *     lookup (DNS rebinding); a lookup of a peer's slow name would also hold
 *     one of libuv's threads. Peers are dialled at their IP addresses.
 * /dnsaddr is resolved before the gate (its TXT records name the addresses
 * that are then judged here), which keeps `--bootstrap public` working.
 */
export function dialGate (l: Pick<Limits, 'refusePrivateDials' | 'exemptDials'>): (ma: Multiaddr) => boolean {
  if (!l.refusePrivateDials) return () => false
  const exempt = new Set(l.exemptDials.map(canonical))
  return (ma: Multiaddr) => !publicIp(ma) && !exempt.has(withoutPeer(ma.toString()))
}

export function limitsOptions (l: Limits): Pick<Libp2pOptions, 'connectionManager' | 'connectionGater' | 'connectionMonitor'> {
  const gater: ConnectionGater = { denyDialMultiaddr: dialGate(l) }
  return {
    connectionManager: {
      maxConnections: l.maxConnections,
      inboundConnectionThreshold: l.inboundRate,
      maxIncomingPendingConnections: 32,
      maxParallelDials: 50,
      maxPeerAddrsToDial: 8
    },
    connectionGater: gater,
    connectionMonitor: { pingInterval: PING_INTERVAL_MS, pingTimeout: PING_TIMEOUT }
  }
}

/** an address that starts with a public IP address (/ip4 or /ip6: never a name) */
function publicIp (ma: Multiaddr): boolean {
  const host = ma.getComponents()[0]
  return (host?.name === 'ip4' || host?.name === 'ip6') && host.value != null && isPublicAddress(host.value)
}

/** a configured multiaddr as libp2p writes it, without its /p2p/ */
function canonical (ma: string): string {
  try { return withoutPeer(multiaddr(ma).toString()) } catch { return withoutPeer(ma) }
}

function bound (target: object, key: string | symbol): unknown {
  const v = Reflect.get(target, key)
  return typeof v === 'function' ? v.bind(target) : v
}

function withoutPeer (ma: string): string {
  return ma.replace(/\/p2p\/[^/]+$/, '')
}
