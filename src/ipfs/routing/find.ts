/**
 * Finding who has a CID through the routing (the DHT and/or a delegated
 * routing endpoint) and connecting to them, so that bitswap — which asks
 * connected peers only — can fetch from them. Called once per root (a pin's
 * fetch attempt, a size probe, a gateway read-through), never per block.
 *
 * Limits: a found provider is dialled only at addresses the routing policy
 * allows (no private, loopback or DNS addresses unless the operator runs a
 * private routing network — a provider record is a claim anyone can publish,
 * so its addresses are as untrusted as a request's origins), at most
 * MAX_DIALS providers per lookup, MAX_ACTIVE lookups at once (past that a
 * lookup is skipped, not queued), and a lookup for a CID that just found
 * providers is not repeated for a while.
 */
import type { DelegatedRoutingV1HttpApiClient } from '@helia/delegated-routing-v1-http-api-client'
import type { KadDHT } from '@libp2p/kad-dht'
import type { Libp2p, PeerId } from '@libp2p/interface'
import { peerIdFromCID } from '@libp2p/peer-id'
import { isPrivate } from '@libp2p/utils'
import { CODE_P2P, type Multiaddr } from '@multiformats/multiaddr'
import type { CID } from 'multiformats/cid'

const MAX_DIALS = 8
/** stop looking once this many providers are connected */
const ENOUGH = 3
const MAX_ACTIVE = 16
const RECENT_MS = 30_000
const RECENT_MAX = 4096

export interface FindOutcome {
  /** providers the routing returned (deduplicated) */
  found: number
  /** of them, connected now */
  connected: number
  /** skipped: too many lookups at once, or found recently */
  skipped?: 'busy' | 'recent'
}

export interface ProviderFinderOptions {
  libp2p: Libp2p
  dht?: KadDHT
  delegated?: DelegatedRoutingV1HttpApiClient
  /** dial providers at private, loopback and DNS addresses (a LAN or loopback routing network) */
  allowPrivate: boolean
  /** each lookup's duration and result, for metrics */
  onLookup?: (seconds: number, found: number, source: 'dht' | 'delegated') => void
}

interface Candidate {
  id: PeerId
  addrs: Multiaddr[]
}

export class ProviderFinder {
  private active = 0
  private readonly inflight = new Map<string, Promise<FindOutcome>>()
  private readonly recent = new Map<string, number>()

  constructor (private readonly o: ProviderFinderOptions) {}

  /** Finds providers of `cid` and connects to up to MAX_DIALS of them, within the signal. */
  async findAndConnect (cid: CID, signal: AbortSignal): Promise<FindOutcome> {
    const key = Buffer.from(cid.multihash.bytes).toString('base64')
    const last = this.recent.get(key)
    if (last != null && Date.now() - last < RECENT_MS) return { found: 0, connected: 0, skipped: 'recent' }
    const running = this.inflight.get(key)
    if (running != null) return await running
    if (this.active >= MAX_ACTIVE) return { found: 0, connected: 0, skipped: 'busy' }
    this.active++
    const p = this.look(cid, signal).finally(() => {
      this.active--
      this.inflight.delete(key)
    })
    this.inflight.set(key, p)
    const out = await p
    if (out.connected > 0) this.remember(key)
    return out
  }

  private remember (key: string): void {
    if (this.recent.size >= RECENT_MAX) {
      const cutoff = Date.now() - RECENT_MS
      for (const [k, at] of this.recent) if (at < cutoff) this.recent.delete(k)
      if (this.recent.size >= RECENT_MAX) this.recent.delete(this.recent.keys().next().value as string)
    }
    this.recent.set(key, Date.now())
  }

  private async look (cid: CID, signal: AbortSignal): Promise<FindOutcome> {
    const libp2p = this.o.libp2p
    const self = libp2p.peerId
    const seen = new Set<string>()
    const dials: Array<Promise<boolean>> = []
    let connected = 0
    const done = new AbortController()
    const stop = AbortSignal.any([signal, done.signal])
    const consider = (c: Candidate): void => {
      const id = c.id.toString()
      if (c.id.equals(self) || seen.has(id)) return
      seen.add(id)
      if (libp2p.getConnections(c.id).length > 0) {
        if (++connected >= ENOUGH) done.abort()
        return
      }
      if (dials.length >= MAX_DIALS) return
      const addrs = c.addrs.filter(a => this.dialable(a)).map(a => a.decapsulateCode(CODE_P2P).encapsulate(`/p2p/${id}`))
      if (addrs.length === 0) return
      dials.push(libp2p.dial(addrs, { signal }).then(() => {
        if (++connected >= ENOUGH) done.abort()
        return true
      }, () => false))
    }
    const sources: Array<Promise<void>> = []
    if (this.o.dht != null) sources.push(this.fromDht(this.o.dht, cid, stop, consider))
    if (this.o.delegated != null) sources.push(this.fromDelegated(this.o.delegated, cid, stop, consider))
    await Promise.all(sources)
    await Promise.all(dials)
    return { found: seen.size, connected }
  }

  private async fromDht (dht: KadDHT, cid: CID, signal: AbortSignal, consider: (c: Candidate) => void): Promise<void> {
    const t0 = performance.now()
    let found = 0
    try {
      for await (const e of dht.findProviders(cid, { signal })) {
        if (e.name !== 'PROVIDER') continue
        for (const p of e.providers) {
          found++
          consider({ id: p.id, addrs: p.multiaddrs })
        }
      }
    } catch {
      // aborted (enough found, or out of time) or no peers to ask: what was found stands
    } finally {
      this.o.onLookup?.((performance.now() - t0) / 1000, found, 'dht')
    }
  }

  private async fromDelegated (client: DelegatedRoutingV1HttpApiClient, cid: CID, signal: AbortSignal, consider: (c: Candidate) => void): Promise<void> {
    const t0 = performance.now()
    let found = 0
    try {
      for await (const r of client.getProviders(cid, { signal })) {
        found++
        consider({ id: peerIdFromCID(r.ID), addrs: r.Addrs })
      }
    } catch {
      // the endpoint failed or timed out: what was found stands
    } finally {
      this.o.onLookup?.((performance.now() - t0) / 1000, found, 'delegated')
    }
  }

  /** TCP addresses only (our one transport); no private, loopback or DNS ones unless allowed. */
  private dialable (a: Multiaddr): boolean {
    const names = a.getComponents().map(c => c.name)
    if (!names.includes('tcp') || names.includes('unix') || names.includes('p2p-circuit')) return false
    if (this.o.allowPrivate) return true
    return (names[0] === 'ip4' || names[0] === 'ip6') && !isPrivate(a)
  }
}
