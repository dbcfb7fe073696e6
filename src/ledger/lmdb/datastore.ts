/**
 * An interface-datastore Datastore over an LMDB sub-database, so libp2p's
 * peer store and helia's bookkeeping live in the same durable file as the
 * ledger (and start fast). Keys are datastore key strings; values are bytes.
 */
import { BaseDatastore } from 'datastore-core'
import { Key, type KeyQuery, type Pair, type Query } from 'interface-datastore'
import { open, type Database } from 'lmdb'

class NotFoundError extends Error {
  override name = 'NotFoundError'
}

export class LmdbDatastore extends BaseDatastore {
  constructor (private readonly db: Database<Uint8Array, string>) {
    super()
  }

  override async put (key: Key, val: Uint8Array): Promise<Key> {
    await this.db.put(key.toString(), val)
    return key
  }

  override get (key: Key): Uint8Array {
    const v = this.db.get(key.toString())
    if (v === undefined) throw new NotFoundError(`no value for ${key.toString()}`)
    return v
  }

  override has (key: Key): boolean {
    return this.db.doesExist(key.toString())
  }

  override async delete (key: Key): Promise<void> {
    await this.db.remove(key.toString())
  }

  override * _all (q: Query): Generator<Pair> {
    for (const { key, value } of this.range(q.prefix)) yield { key: new Key(key), value }
  }

  override * _allKeys (q: KeyQuery): Generator<Key> {
    for (const { key } of this.range(q.prefix)) yield new Key(key)
  }

  private * range (prefix?: string): Generator<{ key: string, value: Uint8Array }> {
    const start = prefix ?? ''
    for (const entry of this.db.getRange({ start })) {
      if (prefix != null && !entry.key.startsWith(prefix)) break
      yield entry
    }
  }
}

/** a datastore in a file of its own (a front end's peer store when the ledger is a shared database) */
export function openLmdbDatastore (path: string): { datastore: LmdbDatastore, close: () => Promise<void> } {
  const env = open({ path, compression: false, maxDbs: 2 })
  const db = env.openDB<Uint8Array, string>({ name: 'datastore', encoding: 'binary' })
  return { datastore: new LmdbDatastore(db), close: async () => { await env.close() } }
}
