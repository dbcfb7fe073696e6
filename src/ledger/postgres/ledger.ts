/**
 * The ledger contract (../ledger.ts) on PostgreSQL, for front ends that
 * share one ledger: every rule the LMDB ledger keeps in one process (a
 * payment buys one thing, a ticket makes one pin, a chain of replacements
 * holds its blocks) is kept by the database, with primary keys, row locks
 * and transactions, so it holds across processes too.
 *
 * A write is one transaction on a pooled client (./tx.ts); its changes are
 * told to this process's watchers after COMMIT, in commit order. libp2p's
 * and Helia's own records stay in the front end's data dir: the caller
 * supplies that datastore.
 */
import { randomUUID } from 'node:crypto'
import type { Datastore } from 'interface-datastore'
import pg from 'pg'
import { seedClock } from '../clock.js'
import type { Ledger, LedgerCallObserver, LedgerPoolStats, LedgerSnapshot, LedgerTransaction, RecordedSettings, UpgradeProgress } from '../ledger.js'
import type { PinLedger } from '../pins.js'
import type { ProvideSchedule } from '../provides.js'
import { clientConfig, createPool, dbError, redact, type PostgresConnectionOptions } from './connection.js'
import { blockFence } from './block-fence.js'
import { frontEnds, leases, signingKeys } from './coordination.js'
import { denialLedger } from './denials.js'
import { insertPayment, json, type Db } from './pin-store.js'
import { createPin, importPins } from './pin-writes.js'
import { pinLedger } from './pins.js'
import { provideSchedule } from './provides.js'
import { publish, RemoteFeed } from './remote-feed.js'
import { migrate } from './schema.js'
import { settlementNotes } from './settlements.js'
import { openSnapshot } from './snapshot.js'
import { claimTicket, putTicket, uploadTickets } from './tickets.js'
import { tokenLedger } from './tokens.js'
import { ChangeFeed, retryable, Tx, type Watchers } from './tx.js'

export type { PostgresConnectionOptions, PostgresTls } from './connection.js'

export interface PostgresLedgerOptions extends PostgresConnectionOptions {
  /** how long an expired pin keeps its blocks, given what the last serve recorded */
  graceMs: (recorded: Partial<RecordedSettings>) => number
  /** libp2p's and Helia's records: the front end's own (Ledger.datastore returns it) */
  datastore: Datastore
}

const SETTING_TYPES: { [K in keyof RecordedSettings]: 'string' | 'number' } = {
  tokenIssuer: 'string',
  tokenTtl: 'number',
  expiryGrace: 'number',
  provideStrategy: 'string',
  reprovideInterval: 'number'
}

/** how many times a write of the ledger's own is run again after a deadlock or serialization failure */
const RETRIES = 3

/** Opens the ledger in the database `connectionString` names, creating or migrating its schema. */
export async function openPostgresLedger (o: PostgresLedgerOptions): Promise<PostgresLedger> {
  const pool = createPool(o)
  try {
    const client = await pool.connect()
    try {
      await migrate(client)
    } finally {
      client.release()
    }
    const recorded = await readSettings(pool)
    // the clock hands out `created` values after every pin's here (./clock.ts)
    const high = (await pool.query<{ us: string | null }>('SELECT max(created_us) AS us FROM pins')).rows[0]?.us
    if (high != null) seedClock(Number(high))
    const ledger = new PostgresLedger(pool, o, o.graceMs(recorded))
    try {
      await ledger.remote.start()
    } catch (err) {
      await ledger.close()
      throw err
    }
    return ledger
  } catch (err) {
    await pool.end().catch(() => {})
    throw redact(err, o.connectionString)
  }
}

async function readSettings (db: Db): Promise<Partial<RecordedSettings>> {
  const r = await db.query<{ key: string, value: unknown }>('SELECT key, value FROM facts WHERE key = ANY($1::text[])', [Object.keys(SETTING_TYPES)])
  const out: Record<string, unknown> = {}
  // a value of the wrong type reads as absent
  for (const { key, value } of r.rows) if (typeof value === SETTING_TYPES[key as keyof RecordedSettings]) out[key] = value
  return out as Partial<RecordedSettings>
}

export class PostgresLedger implements Ledger {
  readonly pins: PinLedger
  readonly tickets: Ledger['tickets']
  readonly notes: Ledger['notes']
  readonly tokens: Ledger['tokens']
  readonly denials: Ledger['denials']
  readonly provides: ProvideSchedule
  readonly frontEnds: Ledger['frontEnds']
  readonly leases: Ledger['leases']
  readonly signingKeys: NonNullable<Ledger['signingKeys']>
  readonly blockFence: NonNullable<Ledger['blockFence']>
  private readonly watchers: Watchers = { committed: new Set(), removed: new Set(), queued: new Set(), released: new Set(), newKeys: new Set(), denials: new Set(), lost: new Set(), newRefs: new Set() }
  private readonly feed = new ChangeFeed(this.watchers)
  /** this ledger among the processes sharing the database: its own changes are not told to it twice */
  private readonly origin = randomUUID()
  /** what the other processes commit (started by openPostgresLedger) */
  readonly remote: RemoteFeed
  /** writes begun and not yet settled (committed()) */
  private readonly inflight = new Set<Promise<unknown>>()
  /** the pool, its errors redacted */
  private readonly db: Db
  private closing: Promise<void> | undefined
  /** told each contract call's duration (metrics), when set */
  private observer: LedgerCallObserver | undefined

  constructor (private readonly pool: pg.Pool, private readonly o: PostgresLedgerOptions, graceMs: number) {
    const cs = o.connectionString
    // every statement's error passes here or through write(): one place maps "unreachable" to LedgerUnavailableError
    this.db = { query: (async (sql: string, params?: unknown[]) => await pool.query(sql, params).catch((err: unknown) => { throw dbError(err, cs) })) as Db['query'] }
    const write = async <T>(fn: (tx: Tx) => Promise<T>): Promise<T> => await this.write(fn, RETRIES)
    const t = <T extends object>(area: string, o: T): T => this.timed(area, o)
    this.pins = t('pins', pinLedger({ db: this.db, watchers: this.watchers, graceMs, write, committed: async () => { await this.committed() } }))
    this.tickets = t('tickets', uploadTickets(this.db, write))
    this.notes = t('notes', settlementNotes(this.db, write))
    this.tokens = t('tokens', tokenLedger(this.db))
    this.denials = t('denials', denialLedger(this.db, write, this.watchers))
    this.provides = t('provides', provideSchedule(this.db, this.watchers))
    this.remote = new RemoteFeed({ connect: () => new pg.Client(clientConfig(o)), pool, origin: this.origin, feed: this.feed })
    this.frontEnds = t('frontEnds', frontEnds(this.db))
    this.leases = t('leases', leases(this.db))
    this.signingKeys = t('signingKeys', signingKeys(this.db))
    this.blockFence = t('blockFence', blockFence(pool, (err) => dbError(err, cs)))
  }

  poolStats (): LedgerPoolStats {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount }
  }

  observeCalls (fn: LedgerCallObserver): void {
    this.observer = fn
  }

  /**
   * `o` with each method that returns a promise timed for the observer as
   * `area.method` (a fixed set of names, whatever SQL runs); other results
   * (watchers, iterators) pass untouched.
   */
  private timed<T extends object> (area: string, o: T): T {
    const wrapped = new Map<PropertyKey, unknown>()
    return new Proxy(o, {
      get: (target, prop, receiver) => {
        const v = Reflect.get(target, prop, receiver)
        if (typeof v !== 'function' || typeof prop !== 'string') return v
        let w = wrapped.get(prop)
        if (w == null) {
          const op = `${area}.${prop}`
          w = (...args: unknown[]): unknown => {
            const observer = this.observer
            const start = performance.now()
            const out = (v as (...a: unknown[]) => unknown).apply(target, args)
            if (observer == null || !(out instanceof Promise)) return out
            out.then(() => { observer(op, (performance.now() - start) / 1000, true) }, () => { observer(op, (performance.now() - start) / 1000, false) })
            return out
          }
          wrapped.set(prop, w)
        }
        return w
      }
    })
  }

  /** resolves once every write begun before it has settled */
  private async committed (): Promise<void> {
    await Promise.allSettled([...this.inflight])
  }

  /** `fn` in one write transaction, run again up to `retries` times when the database asks for it */
  private async write<T> (fn: (tx: Tx) => Promise<T>, retries: number): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const run = this.once(fn)
      this.inflight.add(run)
      try {
        return await run
      } catch (err) {
        if (attempt < retries && retryable(err)) continue
        throw dbError(err, this.o.connectionString)
      } finally {
        this.inflight.delete(run)
      }
    }
  }

  private async once<T> (fn: (tx: Tx) => Promise<T>): Promise<T> {
    const client = await this.pool.connect()
    const tx = new Tx(client, this.watchers)
    let broken: Error | undefined
    try {
      await client.query('BEGIN')
      const result = await fn(tx)
      // a failed statement the function caught: the transaction cannot commit
      if (tx.failed !== undefined) throw tx.failed
      await publish(tx, this.origin, tx.changes)
      const seq = this.feed.place()
      try {
        await client.query('COMMIT')
      } catch (err) {
        await this.feed.settle(seq, null)
        throw err
      }
      await this.feed.settle(seq, tx.changes)
      return result
    } catch (err) {
      await client.query('ROLLBACK').catch((e: unknown) => { broken = e as Error })
      throw err
    } finally {
      // a client whose connection failed is dropped from the pool, not reused
      client.release(broken)
    }
  }

  async transaction<T>(fn: (tx: LedgerTransaction) => Promise<T>): Promise<T> {
    // not run again on a deadlock: `fn` is the caller's, and may have done more than write
    return await this.write(async (tx) => {
      let pinWrite = false
      let closed = false
      const open = (): void => { if (closed) tx.fail(new Error('a ledger transaction was written to after its function resolved')) }
      const one = (): void => {
        open()
        if (pinWrite) tx.fail(new Error('a ledger transaction writes one pin, payment or import batch'))
        pinWrite = true
      }
      const ltx: LedgerTransaction = {
        createPin: async (pin, payment, blocks) => { one(); await createPin(tx, pin, payment, blocks ?? []) },
        recordPayment: async (payment) => { one(); await insertPayment(tx, payment) },
        importPins: async (pins, payments) => { one(); await importPins(tx, pins, payments) },
        putTicket: async (ticket) => { open(); await putTicket(tx, ticket) },
        claimTicket: async (id, owner, requestid, now) => { open(); await claimTicket(tx, id, owner, requestid, now) },
        importTickets: async (tickets) => { open(); for (const t of tickets) await putTicket(tx, t) }
      }
      try {
        return await fn(ltx)
      } finally {
        closed = true
      }
    }, 0)
  }

  async snapshot (): Promise<LedgerSnapshot> {
    try {
      return await openSnapshot(this.pool)
    } catch (err) {
      throw dbError(err, this.o.connectionString)
    }
  }

  async recordedSettings (): Promise<Partial<RecordedSettings>> {
    return await readSettings(this.db)
  }

  async recordSettings (s: RecordedSettings): Promise<void> {
    await this.write(async (tx) => {
      for (const key of Object.keys(SETTING_TYPES) as Array<keyof RecordedSettings>) {
        await tx.q('INSERT INTO facts (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, json(s[key])])
      }
    }, RETRIES)
  }

  async schemaVersion (): Promise<unknown> {
    return (await this.db.query<{ version: number }>('SELECT version FROM pind_schema')).rows[0]?.version
  }

  datastore (): Datastore {
    return this.o.datastore
  }

  /** the schema is brought up to date at open, in one transaction: nothing is left for later */
  upgradeLater (_onProgress?: (p: UpgradeProgress) => void): { done: Promise<boolean>, stop(): Promise<void> } {
    // the migrations at the open did everything: done
    return { done: Promise.resolve(true), stop: async () => {} }
  }

  async close (): Promise<void> {
    this.closing ??= (async () => {
      await this.committed()
      await this.remote.close()
      await this.pool.end()
    })()
    await this.closing
  }
}
