/**
 * The LMDB environment behind the ledger. One file (`ledger.mdb`) in the data
 * dir holds every sub-database: pins, indexes, payments, the fetch queue, and
 * the libp2p/helia datastore. This folder is the only importer of lmdb.
 */
import { PindError } from '../errors.js'
import { open, type Database, type RootDatabase } from 'lmdb'

export const LEDGER_SCHEMA_VERSION = 1

/**
 * The environment, for the ledger's own classes (this folder). Outside it,
 * nothing holds the environment: src/core.ts builds the ledger's classes on
 * it, and serve's settings are read and written through ./settings.ts.
 */
export interface LedgerEnv {
  root: RootDatabase
  /** runs `fn` in one write transaction */
  transaction<T>(fn: () => T): Promise<T>
  /** small key → value facts about the ledger itself (schema version, created, upgrades done, serve's settings) */
  meta: Database<unknown, string>
  /** binary sub-database used as the libp2p/helia Datastore */
  datastore: Database<Uint8Array, string>
  /** open another named sub-database (msgpack values; keys ordered-binary, or raw bytes with keyEncoding 'binary') */
  db<V>(name: string, opts?: { dupSort?: boolean, keyEncoding?: 'binary' }): Database<V, any>
  close(): Promise<void>
}

export class LedgerSchemaError extends PindError {
  override name = 'LedgerSchemaError'
}

export async function openLedgerEnv (path: string): Promise<LedgerEnv> {
  const root = open({ path, maxDbs: 32, compression: false, mapSize: 2 ** 36 })
  const meta = root.openDB<unknown, string>({ name: 'meta' })
  const datastore = root.openDB<Uint8Array, string>({ name: 'datastore', encoding: 'binary' })
  const version = meta.get('schemaVersion')
  if (version === undefined) {
    await meta.transaction(() => {
      meta.put('schemaVersion', LEDGER_SCHEMA_VERSION)
      meta.put('created', new Date().toISOString())
    })
  } else if (version !== LEDGER_SCHEMA_VERSION) {
    await root.close()
    throw new LedgerSchemaError(`ledger ${path} has schema version ${String(version)}; this pind understands ${LEDGER_SCHEMA_VERSION}`)
  }
  return {
    root,
    transaction: async (fn) => await root.transaction(fn),
    meta,
    datastore,
    db: <V>(name: string, opts?: { dupSort?: boolean, keyEncoding?: 'binary' }) => root.openDB<V, any>({ name, ...opts }),
    close: async () => { await root.close() }
  }
}
