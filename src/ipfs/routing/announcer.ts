/**
 * Announcing many CIDs on the DHT by keyspace region (the sweep): explore the
 * region around a key once (a few lookups), compute locally which k peers
 * each key of the region belongs to, then send every peer its records down
 * one stream. Per CID that costs k small messages, against a full lookup
 * walk plus k new streams for stock kad-dht `provide()`.
 */
import type { KadDHT } from '@libp2p/kad-dht'
import type { Libp2p, PeerId } from '@libp2p/interface'
import { CODE_P2P } from '@multiformats/multiaddr'
import { providerField, sendProviderRecords } from './add-provider.js'
import { bitsOf, peerKadId } from './keyspace.js'
import { closestInRegion, exploreRegion, type Region } from './region.js'

export interface AnnounceKey {
  /** sha256(multihash): the key's place in the keyspace */
  kad: Buffer
  mh: Uint8Array
}

export interface AnnounceOutcome {
  /** keys at least one of their k peers accepted */
  provided: AnnounceKey[]
  failed: AnnounceKey[]
  peers: number
  reachable: number
  records: number
  /** why peers could not be reached, by error (a few words each), for the logs */
  errors: Record<string, number>
}

/** below this share of reachable peers a region counts as failed (Kubo: 20 %) */
const MIN_REACHABLE = 0.2
/** peers written to at once */
const PEER_CONCURRENCY = 16
/** a peer that takes no record (or does not confirm a window) for this long is given up */
const SEND_STALL_MS = 60_000
/** and a peer that reads, but slower than this overall, too (a trickle must not hold a worker for ever) */
const SEND_BASE_MS = 60_000
const SEND_PER_RECORD_MS = 50

export class DhtAnnouncer {
  constructor (private readonly libp2p: Libp2p, private readonly dht: KadDHT, private readonly protocol: string) {}

  /** replication: how many peers each key is stored at */
  get k (): number {
    return this.dht.k
  }

  /** Explores the region around a key: which peers hold which part of the keyspace. */
  async region (key: AnnounceKey, signal: AbortSignal): Promise<Region> {
    return await exploreRegion(async (preimage, s) => await this.closest(preimage, s), { kad: key.kad, preimage: key.mh }, this.k, signal)
  }

  /** A region of one key (its k closest peers, one lookup): for a key or two, exploring costs more than it saves. */
  async single (key: AnnounceKey, signal: AbortSignal): Promise<Region> {
    const ids = await this.closest(key.mh, signal)
    if (ids.length === 0) throw new Error('the DHT lookup found no peers')
    return { prefix: bitsOf(key.kad, 256), peers: ids.map(id => ({ id, kad: peerKadId(id) })), lookups: 1, complete: true }
  }

  /** The k closest peers to what `preimage` hashes to (only peers that answered). */
  async closest (preimage: Uint8Array, signal: AbortSignal): Promise<PeerId[]> {
    const out: PeerId[] = []
    for await (const e of this.dht.getClosestPeers(preimage, { signal })) {
      if (e.name === 'FINAL_PEER') out.push(e.peer.id)
    }
    return out
  }

  /** Sends each key's provider record to its k closest peers of the region. */
  async announce (region: Region, keys: AnnounceKey[], signal: AbortSignal): Promise<AnnounceOutcome> {
    const addrs = this.libp2p.getMultiaddrs().map(ma => ma.decapsulateCode(CODE_P2P))
    if (addrs.length === 0) throw new Error('this node has no address to announce')
    const provider = providerField(this.libp2p.peerId, addrs)
    const perPeer = new Map<string, { id: PeerId, keys: AnnounceKey[] }>()
    for (const key of keys) {
      for (const p of closestInRegion(region, key.kad, this.k)) {
        const id = p.id.toString()
        let entry = perPeer.get(id)
        if (entry == null) perPeer.set(id, entry = { id: p.id, keys: [] })
        entry.keys.push(key)
      }
    }
    const accepted = new Set<AnnounceKey>()
    let reachable = 0
    let records = 0
    const errors: Record<string, number> = {}
    const queue = [...perPeer.values()]
    const worker = async (): Promise<void> => {
      for (let job = queue.shift(); job != null; job = queue.shift()) {
        const deadline = AbortSignal.timeout(SEND_BASE_MS + SEND_PER_RECORD_MS * job.keys.length)
        let acked = 0
        const ack = (n: number): void => {
          for (const k of job.keys.slice(acked, n)) accepted.add(k)
          records += n - acked
          acked = n
        }
        try {
          await sendProviderRecords(this.libp2p, job.id, this.protocol, job.keys.map(k => k.mh), provider, AbortSignal.any([signal, deadline]), SEND_STALL_MS, ack)
          reachable++
        } catch (err) {
          signal.throwIfAborted()
          const e = err as Error
          const why = e instanceof Error ? `${e.name}: ${e.message.slice(0, 80)}` : String(err).slice(0, 80)
          errors[why] = (errors[why] ?? 0) + 1
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(PEER_CONCURRENCY, queue.length) }, worker))
    const regionFailed = perPeer.size === 0 || reachable < Math.ceil(perPeer.size * MIN_REACHABLE)
    return {
      provided: regionFailed ? [] : keys.filter(k => accepted.has(k)),
      failed: regionFailed ? keys : keys.filter(k => !accepted.has(k)),
      peers: perPeer.size,
      reachable,
      records,
      errors
    }
  }
}
