/**
 * The LMDB environment behind the ledger. One file (`ledger.mdb`) in the data
 * dir holds every sub-database: pins, indexes, payments, the fetch queue, and
 * the libp2p/helia datastore. This folder is the only importer of lmdb.
 */
import { LedgerSchemaError } from '../errors.js'
export { LedgerSchemaError } from '../errors.js'
import { open, type Database } from 'lmdb'
import { LedgerSnapshot } from './snapshot.js'
import { archivePathOf, LedgerArchive } from './archive.js'

/**
 * The ledger's schema version, kept in its meta database.
 *  1: records stored as msgpack maps.
 *  2: pins, owner summaries and payments may be stored compact (./stored.ts),
 *     which a pind that knows only version 1 would misread. This pind writes
 *     compact records from its first write on, so opening a version 1 ledger
 *     marks it version 2 at once (the compact:records upgrade then rewrites
 *     what is left of the old layout); an earlier pind refuses it with
 *     LedgerSchemaError instead of misreading it.
 *  3: x402 payments are kept in payments-binary, keyed by their 52 bytes
 *     (./stored.ts, layout 2), which a pind that knows only version 2 would
 *     not look in: it would miss them (a used payment would look unused).
 *     Opening an older ledger marks it version 3 at once, as above (the
 *     compact:payment-keys upgrade then moves the older records).
 *  4: removed pins, with the payments that created them, move to the archive
 *     (`ledger-archive.mdb`, ./archive.ts) once no request can ask for them
 *     again; a pind that knows only version 3 would not look there (its
 *     export would miss them). Opening an older ledger marks it version 4 at
 *     once, as above (the index:removed-pins upgrade then lists the removed
 *     pins it holds, which the archiver moves).
 *  5: a removed pin moves to the archive soon after its removal, and the
 *     payment that created it stays marked used in `payments-moved` until no
 *     payment signed before the removal can be valid (PinLedger.archiveDue);
 *     a pind that knows only version 4 would not look there (a used payment
 *     would look unused). Opening an older ledger marks it version 5 at once,
 *     as above (nothing to upgrade: it has no marks).
 */
export const LEDGER_SCHEMA_VERSION = 5
/** the versions this pind opens (older ones are upgraded in place) */
const READABLE_VERSIONS: readonly unknown[] = [1, 2, 3, 4, 5]

/** the upgrades of the ledger's indexes (PinLedger.upgrade), each run once */
export const UPGRADES = ['index:owner-summaries', 'index:pins-by-expiry', 'repair:replacement-chains', 'index:provide-keys', 'compact:records', 'clock:created-high', 'compact:payment-keys', 'compact:pin-numbers', 'index:removed-pins', 'index:owner-counts'] as const
export type Upgrade = typeof UPGRADES[number]

/**
 * The environment, for the ledger's own classes (this folder). Outside it,
 * nothing holds the environment: src/app/core.ts builds the ledger's classes on
 * it, and serve's settings are read and written through ./settings.ts.
 * lmdb's root and meta databases stay inside: the ledger's facts about
 * itself are read and written through the accessors below.
 */
export interface LedgerEnv {
  /**
   * Runs `fn` in one write transaction: all its writes are committed, or,
   * if it throws, none (the promise then rejects with what it threw).
   *
   * All or none is lmdb's `childTransaction`, not its `transaction`: lmdb
   * runs the callbacks of concurrent `transaction` calls in one LMDB write
   * transaction, so one that throws cannot abort it, and what it wrote
   * before the throw is committed (checked: a put then a throw inside
   * `root.transaction` is there afterwards). Each callback here runs in a
   * child transaction of that batch, which a throw aborts alone. The cost,
   * measured with lmdb alone under serve's malloc settings (docs/runtime.md): the
   * same per sequential commit (the fsync dominates), ~40 us instead of
   * ~11 us per callback when thousands are batched into one commit.
   *
   * Transaction sizes: LMDB copies each page a transaction
   * changes into a malloc'd buffer (4 KiB) and, at commit, keeps those
   * buffers on the environment's own free list for the next transaction;
   * they go back to malloc only when the environment closes. So serve holds,
   * for as long as it runs, as much native memory as its largest write
   * transaction dirtied. Measured with lmdb alone (5 databases of 25,000
   * random keys, ~200-byte values; 10,000 keys deleted from each, as the
   * archiver does): transactions of 1,000 keys left +15 MiB of anonymous
   * memory for good, of 100 keys +0.7 MiB; one transaction of 10,000
   * deletes in one database +11 MiB. Work that may touch thousands of
   * records (the archiver, the
   * reprovider's rescheduling, upgrades) commits in batches of a few hundred
   * at most; one pin's writes (its block references too) stay one
   * transaction.
   */
  transaction<T>(fn: () => T): Promise<T>
  /**
   * how many transactions have ended (committed or not): what was read while
   * it is unchanged still holds (serve is the ledger's only writer: the data
   * dir's lock)
   */
  transactionsEnded(): number
  /** a fact the ledger keeps about itself (schema version, created, serve's settings, the provide cycle): ./settings.ts, ./provide-keys.ts; `at`: as it was in that snapshot */
  fact(key: string, at?: LedgerSnapshot): unknown
  /** records a fact (inside a transaction, or on its own) */
  setFact(key: string, value: unknown): Promise<unknown>
  /** removes a fact (inside a transaction, or on its own) */
  removeFact(key: string): void
  /** whether an upgrade of the ledger's indexes has run */
  upgraded(name: Upgrade): boolean
  /** records that it has run (inside a transaction), or with `false` that it has not: the next upgrade runs it again */
  setUpgraded(name: Upgrade, done?: boolean): void
  /** binary sub-database used as the libp2p/helia Datastore */
  datastore: Database<Uint8Array, string>
  /**
   * open another named sub-database (msgpack values; keys ordered-binary, or raw bytes with keyEncoding 'binary');
   * `decoder`: values read with it instead (read only), from bytes that are valid only during the call
   */
  db<V>(name: string, opts?: { dupSort?: boolean, keyEncoding?: 'binary', decoder?: (bytes: Buffer, size: number) => V }): Database<V, any>
  /** the archive of removed pins and their payments, a file of its own (./archive.ts) */
  archive: LedgerArchive
  /**
   * Runs `fn`, which opens sub-databases (`db`) and builds the classes over them, in one write
   * transaction, and returns what it returns. On a new ledger each opening creates its database,
   * outside a transaction in a commit of its own: ~30 commits, each an fsync (20-35 ms of serve's
   * first start). With the databases there already, it writes nothing (LMDB commits nothing).
   */
  opening<T>(fn: () => T): T
  /** a read snapshot of the whole environment, until its release() (./snapshot.ts: what holding one costs) */
  readSnapshot(): LedgerSnapshot
  close(): Promise<void>
}

export async function openLedgerEnv (path: string): Promise<LedgerEnv> {
  const root = open({ path, maxDbs: 48, compression: false, mapSize: 2 ** 36 })
  const meta = root.openDB<unknown, string>({ name: 'meta' })
  const datastore = root.openDB<Uint8Array, string>({ name: 'datastore', encoding: 'binary' })
  const version = meta.get('schemaVersion')
  if (version === undefined) {
    await meta.transaction(() => {
      meta.put('schemaVersion', LEDGER_SCHEMA_VERSION)
      meta.put('created', new Date().toISOString())
      // a new ledger is written in this version's layout from its first pin (its per-owner counts
      // too: PinLedger.ownerCount): nothing to upgrade
      for (const u of UPGRADES) meta.put(u, true)
    })
  } else if (!READABLE_VERSIONS.includes(version)) {
    await root.close()
    throw new LedgerSchemaError(`ledger ${path} has schema version ${String(version)}; this pind understands ${READABLE_VERSIONS.slice(0, -1).join(', ')} and ${String(READABLE_VERSIONS[READABLE_VERSIONS.length - 1])}`)
  } else if (version !== LEDGER_SCHEMA_VERSION) {
    await meta.put('schemaVersion', LEDGER_SCHEMA_VERSION)
  }
  const archive = new LedgerArchive(archivePathOf(path))
  let ended = 0
  return {
    transaction: async (fn) => {
      // counted once lmdb has resolved it, after its reads moved to the new state
      try { return await root.childTransaction(fn) } finally { ended++ }
    },
    transactionsEnded: () => ended,
    fact: (key, at) => meta.get(key, at?.read),
    setFact: async (key, value) => await meta.put(key, value),
    removeFact: (key) => { void meta.remove(key) },
    upgraded: (name) => meta.get(name) === true,
    setUpgraded: (name, done = true) => { if (done) void meta.put(name, true); else void meta.remove(name) },
    datastore,
    archive,
    db: <V>(name: string, opts: { dupSort?: boolean, keyEncoding?: 'binary', decoder?: (bytes: Buffer, size: number) => V } = {}) => {
      const { decoder, ...rest } = opts
      // lmdb hands a decoder that does not ask for a stable buffer the bytes in place (no copy)
      return root.openDB<V, any>({ name, ...rest, ...(decoder != null ? { encoder: { decode: decoder, encode: () => { throw new Error(`${name}: opened to read only`) } } } : {}) })
    },
    opening: (fn) => root.transactionSync(fn),
    readSnapshot: () => new LedgerSnapshot(root.useReadTransaction()),
    close: async () => { await root.close(); await archive.close() }
  }
}
