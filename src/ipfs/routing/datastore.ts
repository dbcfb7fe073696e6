/**
 * The datastore libp2p gets, over the ledger's (durable) one:
 *
 * - `/peers/…` (the peer store): persisted only when routing is on — the
 *   routing table is rebuilt at start from the persisted peers kad-dht
 *   tagged. With `--routing none` the peer store lives in memory: nothing an
 *   unauthenticated peer sends ever reaches the ledger, and peers a DHT run
 *   left behind are not redialled (libp2p redials peers tagged keep-alive).
 *   Either way PeerStorePruner keeps it bounded.
 * - `/dht/…` (records other peers store at a DHT server: provider records,
 *   values): at most `maxRecords` at once, and provider records naming one
 *   peer (`/dht/provider/<multihash>/<peer>`) at most `maxPerPeer` of them,
 *   so that one peer cannot take the whole budget and push everyone
 *   else's records out. Past either, new
 *   ones are dropped (a peer renewing a record it has here is not refused);
 *   kad-dht deletes expired ones on its own schedule.
 * - everything else passes through.
 */
import { BaseDatastore, MemoryDatastore } from 'datastore-core'
import type { Datastore, Key, KeyQuery, Pair, Query } from 'interface-datastore'

const PEERS = '/peers/'
const DHT = '/dht/'
const PROVIDER = '/dht/provider/'

/** the peer a provider record names (kad-dht's key: /dht/provider/<multihash>/<peer id>) */
function providerOf (key: string): string | undefined {
  return key.startsWith(PROVIDER) ? key.slice(key.lastIndexOf('/') + 1) : undefined
}

export class Libp2pDatastore extends BaseDatastore {
  private readonly peers: Datastore
  private records = 0
  /** provider records stored here per peer they name */
  private readonly perPeer = new Map<string, number>()
  /** records refused since start because the cap was reached */
  dropped = 0
  /** provider records refused since start because the peer they name had its share */
  droppedPeerShare = 0

  private constructor (private readonly base: Datastore, persistPeers: boolean, private readonly maxRecords: number, private readonly maxPerPeer: number) {
    super()
    this.peers = persistPeers ? base : new MemoryDatastore()
  }

  static async open (base: Datastore, opts: { persistPeers: boolean, maxRecords: number, maxRecordsPerPeer?: number }): Promise<Libp2pDatastore> {
    const ds = new Libp2pDatastore(base, opts.persistPeers, opts.maxRecords, opts.maxRecordsPerPeer ?? opts.maxRecords)
    for await (const key of base.queryKeys({ prefix: DHT })) {
      ds.records++
      ds.count(providerOf(key.toString()), 1)
    }
    return ds
  }

  /** provider records stored here that name `peer` */
  recordsOf (peer: string): number {
    return this.perPeer.get(peer) ?? 0
  }

  private count (peer: string | undefined, by: number): void {
    if (peer == null) return
    const n = (this.perPeer.get(peer) ?? 0) + by
    if (n > 0) this.perPeer.set(peer, n)
    else this.perPeer.delete(peer)
  }

  /** records other peers have stored here */
  get recordCount (): number {
    return this.records
  }

  private route (key: Key | string | undefined): Datastore {
    return key != null && key.toString().startsWith(PEERS) ? this.peers : this.base
  }

  override async put (key: Key, val: Uint8Array): Promise<Key> {
    const k = key.toString()
    if (k.startsWith(DHT) && !(await this.base.has(key))) {
      if (this.records >= this.maxRecords) {
        this.dropped++
        return key
      }
      const peer = providerOf(k)
      if (peer != null && this.recordsOf(peer) >= this.maxPerPeer) {
        this.droppedPeerShare++
        return key
      }
      this.records++
      this.count(peer, 1)
    }
    return await this.route(key).put(key, val)
  }

  override async get (key: Key): Promise<Uint8Array> {
    return await this.route(key).get(key)
  }

  override async has (key: Key): Promise<boolean> {
    return await this.route(key).has(key)
  }

  override async delete (key: Key): Promise<void> {
    if (key.toString().startsWith(DHT) && await this.base.has(key)) {
      this.records = Math.max(0, this.records - 1)
      this.count(providerOf(key.toString()), -1)
    }
    await this.route(key).delete(key)
  }

  override async * _all (q: Query): AsyncGenerator<Pair> {
    yield * this.route(q.prefix).query({ ...(q.prefix != null ? { prefix: q.prefix } : {}) })
  }

  override async * _allKeys (q: KeyQuery): AsyncGenerator<Key> {
    yield * this.route(q.prefix).queryKeys({ ...(q.prefix != null ? { prefix: q.prefix } : {}) })
  }
}

