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
 *   values): at most `maxRecords` at once; past that new ones are dropped,
 *   and kad-dht deletes expired ones on its own schedule.
 * - everything else passes through.
 */
import { BaseDatastore, MemoryDatastore } from 'datastore-core'
import type { Datastore, Key, KeyQuery, Pair, Query } from 'interface-datastore'

const PEERS = '/peers/'
const DHT = '/dht/'

export class Libp2pDatastore extends BaseDatastore {
  private readonly peers: Datastore
  private records = 0
  /** records refused since start because the cap was reached */
  dropped = 0

  private constructor (private readonly base: Datastore, persistPeers: boolean, private readonly maxRecords: number) {
    super()
    this.peers = persistPeers ? base : new MemoryDatastore()
  }

  static async open (base: Datastore, opts: { persistPeers: boolean, maxRecords: number }): Promise<Libp2pDatastore> {
    const ds = new Libp2pDatastore(base, opts.persistPeers, opts.maxRecords)
    for await (const _ of base.queryKeys({ prefix: DHT })) ds.records++
    return ds
  }

  /** records other peers have stored here */
  get recordCount (): number {
    return this.records
  }

  private route (key: Key | string | undefined): Datastore {
    return key != null && key.toString().startsWith(PEERS) ? this.peers : this.base
  }

  override async put (key: Key, val: Uint8Array): Promise<Key> {
    if (key.toString().startsWith(DHT) && !(await this.base.has(key))) {
      if (this.records >= this.maxRecords) {
        this.dropped++
        return key
      }
      this.records++
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
    if (key.toString().startsWith(DHT) && await this.base.has(key)) this.records = Math.max(0, this.records - 1)
    await this.route(key).delete(key)
  }

  override async * _all (q: Query): AsyncGenerator<Pair> {
    yield * this.route(q.prefix).query({ ...(q.prefix != null ? { prefix: q.prefix } : {}) })
  }

  override async * _allKeys (q: KeyQuery): AsyncGenerator<Key> {
    yield * this.route(q.prefix).queryKeys({ ...(q.prefix != null ? { prefix: q.prefix } : {}) })
  }
}

