/**
 * Which ledger a data dir uses, and opening it: LMDB in the data dir's own
 * ledger.mdb (the default), or a PostgreSQL database several serves share
 * (--ledger postgres, --database-url; recorded in ledger.json, so admin
 * commands on the stopped data dir open the same one). The only place that
 * knows both implementations.
 */
import { existsSync, renameSync } from 'node:fs'
import { MemoryDatastore } from 'datastore-core'
import { folderKeySource, ledgerKeySource, type KeySource } from '../auth/key-source.js'
import { isIP } from 'node:net'
import type { Config } from '../config/settings.js'
import type { DataDirLayout } from '../datadir/layout.js'
import { readSecretFile } from '../kernel/secret-file.js'
import { readLedgerRecord, writeLedgerRecord } from '../datadir/ledger-record.js'
import { LedgerSchemaError } from '../ledger/errors.js'
import type { Ledger, RecordedSettings, UpgradeProgress } from '../ledger/ledger.js'
import { openLmdbDatastore } from '../ledger/lmdb/datastore.js'
import { openLmdbLedger } from '../ledger/lmdb/ledger.js'
import type { PostgresConnectionOptions } from '../ledger/postgres/connection.js'
import { ServableMemo } from '../service/serving/servable-memo.js'
import { ServableBlocks, type ServableIndex } from '../service/serving/servable-blocks.js'

/** the settings a ledger is chosen and opened with */
export type LedgerSettings = Pick<Config, 'ledger' | 'databaseUrl' | 'databasePassword' | 'databasePasswordFile' | 'databasePoolSize' | 'databaseStatementTimeout' | 'databaseSslmode' | 'databaseCaFile'>

const LEDGER_KEYS = ['ledger', 'databaseUrl', 'databasePassword', 'databasePasswordFile', 'databasePoolSize', 'databaseStatementTimeout', 'databaseSslmode', 'databaseCaFile'] as const

/** the ledger settings of a configuration (those it sets) */
export function ledgerSettingsOf (config: Partial<Config>): Partial<LedgerSettings> {
  return Object.fromEntries(LEDGER_KEYS.filter(k => config[k] != null).map(k => [k, config[k]])) as Partial<LedgerSettings>
}

export class LedgerChoiceError extends Error {
  override name = 'LedgerChoiceError'
}

export interface OpenLedgerOptions {
  graceMs: (recorded: Partial<RecordedSettings>) => number
  upgrade: 'before-serving' | 'all'
  onUpgrade?: (p: UpgradeProgress) => void
  /** write ledger.json when the data dir starts using a database (serve) */
  record?: boolean
}

export interface OpenedLedger {
  ledger: Ledger
  /** may this block be served, answered synchronously */
  servedBlocks: ServableIndex
  /** what the ledger is, for logs: never a password */
  describe: string
  close(): Promise<void>
}

export async function openLedger (paths: DataDirLayout, s: Partial<LedgerSettings>, o: OpenLedgerOptions): Promise<OpenedLedger> {
  const recorded = readLedgerRecord(paths.ledgerRecord)
  const kind = s.ledger ?? (recorded != null ? 'postgres' : 'lmdb')
  if (kind === 'lmdb') {
    if (recorded != null) throw new LedgerChoiceError(`this data dir's ledger is in PostgreSQL (${recorded.url}, ${paths.ledgerRecord}): drop --ledger lmdb (PIND_LEDGER)`)
    const ledger = await openLmdbLedger(paths.ledger, { graceMs: o.graceMs, upgrade: o.upgrade, ...(o.onUpgrade != null ? { onUpgrade: o.onUpgrade } : {}) })
    // LMDB answers from its memory-mapped file, current with every commit (loading every pin first cost 2-3 s of start-up at 100,000 pins);
    // its answers are remembered until the next commit that changes blocks or pins (servable-memo.ts)
    const servedBlocks = new ServableMemo(ledger.servedBlocks(), ledger.pins)
    return { ledger, servedBlocks, describe: `LMDB ${paths.ledger}`, close: async () => { servedBlocks.close(); await ledger.close() } }
  }
  const url = s.databaseUrl ?? recorded?.url
  if (url == null) throw new LedgerChoiceError('--ledger postgres needs --database-url (PIND_DATABASE_URL)')
  if (existsSync(paths.ledger)) {
    throw new LedgerChoiceError(`this data dir has its own ledger (${paths.ledger}): a PostgreSQL ledger starts in a fresh data dir; move the records with \`pind export-ledger\` here and \`pind import-ledger --ledger postgres\` in the new one`)
  }
  // loaded here, not at the top: pg and the PostgreSQL ledger were a tenth of an LMDB serve's module evaluation (docs/performance.md)
  const { openPostgresLedger } = await import('../ledger/postgres/ledger.js')
  const peers = openLmdbDatastore(paths.peerStore)
  try {
    const ledger = await openPostgresLedger({
      ...connection(url, s),
      graceMs: o.graceMs,
      datastore: peers.datastore
    }).catch((err: unknown) => {
      if (err instanceof LedgerSchemaError) throw err
      // the message names the database without its password (src/ledger/postgres/connection.ts)
      throw new LedgerChoiceError(`cannot open the ledger's database ${url}: ${(err as Error).message}`)
    })
    try {
      if (o.record === true && recorded?.url !== url) writeLedgerRecord(paths.ledgerRecord, { backend: 'postgres', url, since: new Date().toISOString() })
      // a round trip per block would not do for bitswap: served from memory, kept by the ledger's changes
      const served = new ServableBlocks(ledger.pins)
      await served.load()
      return {
        ledger,
        servedBlocks: served,
        describe: `PostgreSQL ${url}`,
        close: async () => {
          served.close()
          await ledger.close()
          await peers.close()
        }
      }
    } catch (err) {
      await ledger.close()
      throw err
    }
  } catch (err) {
    await peers.close()
    throw err
  }
}

/** the password from the environment or its file (0600), if any */
function password (s: Partial<LedgerSettings>): string | undefined {
  if (s.databasePassword != null && s.databasePasswordFile != null) throw new LedgerChoiceError('set either PIND_DATABASE_PASSWORD or --database-password-file, not both')
  if (s.databasePassword != null) return s.databasePassword
  const file = s.databasePasswordFile
  if (file == null) return undefined
  return readSecretFile(file, 'the database password file', (m) => new LedgerChoiceError(m)).replace(/\r?\n$/, '')
}

function withPassword (url: string, pw: string | undefined): string {
  if (pw == null) return url
  const u = new URL(url)
  u.password = encodeURIComponent(pw)
  return u.toString()
}

/** a database on this machine (loopback, or a Unix socket named by ?host=/path): no TLS unless asked for */
function isLocal (url: string): boolean {
  const u = new URL(url)
  const socket = u.searchParams.get('host')
  if (socket?.startsWith('/') === true) return true
  const host = u.hostname.replace(/^\[|\]$/g, '')
  if (host === '' || host === 'localhost') return true
  if (isIP(host) === 4) return host.startsWith('127.')
  return host === '::1'
}

/** both ledgers of `pind ledger migrate`, and how to make the data dir use the target once it is verified */
export interface MigrationSides {
  from: Ledger
  to: Ledger
  keysFrom: KeySource
  keysTo: KeySource
  /** the data dir uses the target from now on (ledger.json written or set aside; the old LMDB files kept beside, renamed) */
  switchOver(): void
  close(): Promise<void>
}

/** how to reach the database `url` names, from the settings (the password from the environment or its file) */
function connection (url: string, s: Partial<LedgerSettings>): PostgresConnectionOptions {
  return {
    connectionString: withPassword(url, password(s)),
    poolSize: s.databasePoolSize ?? 10,
    statementTimeoutMs: (s.databaseStatementTimeout ?? 30) * 1000,
    ssl: { mode: s.databaseSslmode ?? (isLocal(url) ? 'disable' : 'verify-full'), ...(s.databaseCaFile != null ? { caFile: s.databaseCaFile } : {}) }
  }
}

/** Opens the data dir's ledger and the one `to` names, for a migration between them (serve stopped: the caller holds the lock). */
export async function openMigration (paths: DataDirLayout, s: Partial<LedgerSettings>, to: 'lmdb' | 'postgres'): Promise<MigrationSides> {
  const recorded = readLedgerRecord(paths.ledgerRecord)
  const current = recorded != null ? 'postgres' : 'lmdb'
  if (current === to) throw new LedgerChoiceError(`this data dir's ledger is in ${to === 'lmdb' ? 'LMDB' : 'PostgreSQL'} already${recorded != null ? ` (${recorded.url})` : ''}`)
  const url = to === 'postgres' ? s.databaseUrl : recorded?.url
  if (url == null) throw new LedgerChoiceError('--to postgres needs --database-url (PIND_DATABASE_URL)')
  if (to === 'postgres' && !existsSync(paths.ledger)) throw new LedgerChoiceError(`this data dir has no ledger to move (${paths.ledger})`)
  const { openPostgresLedger } = await import('../ledger/postgres/ledger.js')
  const pg = await openPostgresLedger({
    ...connection(url, s),
    graceMs: () => 0,
    // libp2p's records stay with the front end: not moved
    datastore: new MemoryDatastore()
  }).catch((err: unknown) => {
    if (err instanceof LedgerSchemaError) throw err
    throw new LedgerChoiceError(`cannot open the database ${url}: ${(err as Error).message}`)
  })
  let lmdb: Awaited<ReturnType<typeof openLmdbLedger>>
  try {
    lmdb = await openLmdbLedger(paths.ledger, { graceMs: () => 0, upgrade: 'all' })
  } catch (err) {
    await pg.close()
    throw err
  }
  const folder = folderKeySource(paths.keys)
  const shared = ledgerKeySource(pg.signingKeys, `the database ${url}`)
  await folder.open()
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  return {
    from: to === 'postgres' ? lmdb : pg,
    to: to === 'postgres' ? pg : lmdb,
    keysFrom: to === 'postgres' ? folder : shared,
    keysTo: to === 'postgres' ? shared : folder,
    switchOver: () => {
      if (to === 'postgres') {
        writeLedgerRecord(paths.ledgerRecord, { backend: 'postgres', url, since: new Date().toISOString() })
        for (const f of [paths.ledger, `${paths.ledger}-lock`, paths.ledgerArchive, `${paths.ledgerArchive}-lock`]) {
          if (existsSync(f)) renameSync(f, `${f}.moved-to-postgres-${stamp}`)
        }
      } else {
        renameSync(paths.ledgerRecord, `${paths.ledgerRecord}.moved-to-lmdb-${stamp}`)
      }
    },
    close: async () => {
      await lmdb.close()
      await pg.close()
    }
  }
}
