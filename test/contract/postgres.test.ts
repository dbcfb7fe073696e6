/**
 * The ledger contract (./ledger-contract.ts) on the PostgreSQL ledger: one
 * throwaway cluster for the file, a fresh database for each test; reopen
 * closes the pool and opens the same database again.
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { MemoryDatastore } from 'datastore-core'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LedgerSchemaError } from '../../src/ledger/errors.js'
import { createPool, type PostgresTls } from '../../src/ledger/postgres/connection.js'
import { openPostgresLedger, type PostgresLedger } from '../../src/ledger/postgres/ledger.js'
import { SCHEMA_VERSION } from '../../src/ledger/postgres/schema.js'
import { newRequestid } from '../../src/ledger/requestid.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'
import { OWNER, paidPin, pinRecord } from '../helpers/records.js'
import { describeLedgerContract } from './ledger-contract.js'

let server: TestPostgres
beforeAll(async () => { server = await startTestPostgres() })
afterAll(async () => { await server?.stop() })

describeLedgerContract('PostgreSQL', async () => {
  const db = await server.freshDatabase()
  const datastore = new MemoryDatastore()
  const open = async (): Promise<PostgresLedger> => await openPostgresLedger({ connectionString: db.url, graceMs: () => 0, datastore })
  let current = await open()
  return {
    ledger: current,
    reopen: async () => {
      await current.close()
      current = await open()
      return current
    },
    close: async () => {
      await current.close()
      await db.drop()
    }
  }
})

/** what the PostgreSQL ledger keeps beyond the contract: its schema, its connection, text PostgreSQL cannot hold as it is */
describe('PostgreSQL ledger', () => {
  const open = async (url: string): Promise<PostgresLedger> => await openPostgresLedger({ connectionString: url, graceMs: () => 0, datastore: new MemoryDatastore() })
  const withPassword = (url: string, password: string): string => {
    const u = new URL(url)
    u.password = password
    return u.toString()
  }

  it('two front ends opening a new database at once migrate it once; a newer schema is refused without showing the password', async () => {
    const db = await server.freshDatabase()
    try {
      const [a, b] = await Promise.all([open(db.url), open(db.url)])
      expect(await a.schemaVersion()).toBe(SCHEMA_VERSION)
      expect(await b.schemaVersion()).toBe(SCHEMA_VERSION)
      await a.close()
      await b.close()

      const admin = new pg.Client({ connectionString: db.url })
      await admin.connect()
      await admin.query('UPDATE pind_schema SET version = $1', [SCHEMA_VERSION + 1])
      await admin.end()
      // trust authentication: the password is sent nowhere, but it is in the string
      const err = await open(withPassword(db.url, 'hunter2-secret')).then(() => undefined, (e: unknown) => e)
      expect(err).toBeInstanceOf(LedgerSchemaError)
      expect(String((err as Error).stack)).not.toContain('hunter2-secret')
    } finally {
      await db.drop()
    }
  })

  it('TLS: verified against the CA file, refused with another CA, unverified with require', async () => {
    const { caFile } = await server.enableTls()
    const inTls = async (ssl: PostgresTls): Promise<boolean> => {
      const pool = createPool({ connectionString: server.url, ssl, poolSize: 1, connectTimeoutMs: 10_000 })
      try {
        // the reload reaches the server's configuration a moment after pg_reload_conf returns
        for (let i = 0; ; i++) {
          try {
            return (await pool.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')).rows[0]?.ssl === true
          } catch (err) {
            if (i >= 20 || !/does not support SSL/.test(String(err))) throw err
            await new Promise(resolve => setTimeout(resolve, 100))
          }
        }
      } finally {
        await pool.end()
      }
    }
    expect(await inTls({ caFile })).toBe(true)
    expect(await inTls({ caFile, mode: 'verify-ca' })).toBe(true)
    expect(await inTls({ mode: 'require' })).toBe(true)
    expect(await inTls({ mode: 'disable' })).toBe(false)
    // a CA that did not sign the server's certificate
    const other = join(server.dir, 'other-ca.crt')
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=another CA', '-keyout', join(server.dir, 'other-ca.key'), '-out', other], { stdio: 'ignore' })
    await expect(inTls({ caFile: other })).rejects.toThrow()
  })

  it('an error reaching the database does not show the password', async () => {
    const u = new URL(server.url)
    u.pathname = '/no_such_database'
    const err = await open(withPassword(u.toString(), 's3cr%2Fet')).then(() => undefined, (e: unknown) => e)
    expect(err).toBeInstanceOf(Error)
    const text = `${(err as Error).message}\n${String((err as Error).stack)}`
    expect(text).toContain('no_such_database')
    expect(text).not.toContain('s3cr')
  })

  it('names and meta with a NUL are kept and filtered on; LIKE wildcards in a partial name match themselves', async () => {
    const db = await server.freshDatabase()
    const ledger = await open(db.url)
    try {
      const soon = new Date(Date.now() + 86400_000).toISOString()
      const nul = pinRecord(newRequestid(), 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', { owner: OWNER, name: 'a\u0000b', meta: { 'k\u0000': 'v\u0000' }, pinnedUntil: soon })
      const wild = pinRecord(newRequestid(), 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', { owner: OWNER, name: '50%_off', pinnedUntil: soon })
      const plain = pinRecord(newRequestid(), 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', { owner: OWNER, name: '50xyoff', pinnedUntil: soon })
      for (const p of [nul, wild, plain]) await ledger.pins.create(p)
      expect(await ledger.pins.get(nul.requestid)).toEqual(nul)
      const q = { match: 'exact' as const, statuses: new Set(['pinned' as const]), limit: 10 }
      const ids = async (extra: object): Promise<string[]> => (await ledger.pins.list(OWNER, { ...q, ...extra })).results.map(p => p.requestid)
      expect(await ids({ name: 'a\u0000b' })).toEqual([nul.requestid])
      expect(await ids({ meta: { 'k\u0000': 'v\u0000' } })).toEqual([nul.requestid])
      expect(await ids({ name: '%_', match: 'partial' })).toEqual([wild.requestid])
      expect(await ids({ name: '0%_O', match: 'ipartial' })).toEqual([wild.requestid])
      // a key that cannot name a row names none
      expect(await ledger.pins.get('x\u0000')).toBeUndefined()
      expect(await ledger.tickets.get('x\u0000')).toBeUndefined()
      expect(await ledger.pins.paymentUsed('x\u0000')).toBe(false)
    } finally {
      await ledger.close()
      await db.drop()
    }
  })

  it('of concurrent writes, each committed one is told once, in commit order, and none that rolled back', async () => {
    const db = await server.freshDatabase()
    const ledger = await open(db.url)
    try {
      const told: string[] = []
      ledger.pins.watchCommitted((c) => { for (const p of c.pins) told.push(p.requestid) })
      const first = paidPin(newRequestid(), 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy')
      const tries = Array.from({ length: 6 }, () => paidPin(newRequestid(), 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', { id: first.payment.id }))
      const others = Array.from({ length: 6 }, () => paidPin(newRequestid(), 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'))
      const results = await Promise.allSettled([...tries, ...others].map(async (t) => { await ledger.pins.create(t.pin, { ...t.payment, requestid: t.pin.requestid }) }))
      const won = [...tries, ...others].filter((_, i) => results[i]?.status === 'fulfilled').map(t => t.pin.requestid)
      expect(won).toHaveLength(7)
      expect([...told].sort()).toEqual([...won].sort())
      await ledger.pins.committed()
    } finally {
      await ledger.close()
      await db.drop()
    }
  })
})
