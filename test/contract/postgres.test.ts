/**
 * The ledger contract (./ledger-contract.ts) on the PostgreSQL ledger: one
 * throwaway cluster for the file, a fresh database for each test; reopen
 * closes the pool and opens the same database again.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { MemoryDatastore } from 'datastore-core'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { blockName } from '../../src/ipfs/block-backend.js'
import { CommitLock } from '../../src/ipfs/commit-lock.js'
import { LedgerSchemaError, PaymentReusedError } from '../../src/ledger/errors.js'
import type { CommittedChanges } from '../../src/ledger/changes.js'
import type { Ledger } from '../../src/ledger/ledger.js'
import { openLmdbLedger } from '../../src/ledger/lmdb/ledger.js'
import { createPool, type PostgresTls } from '../../src/ledger/postgres/connection.js'
import { openPostgresLedger, type PostgresLedger } from '../../src/ledger/postgres/ledger.js'
import { SCHEMA_VERSION } from '../../src/ledger/postgres/schema.js'
import { newRequestid } from '../../src/ledger/requestid.js'
import { runGc } from '../../src/service/background/gc.js'
import { ServableBlocks } from '../../src/service/serving/servable-blocks.js'
import { exportLedger, parseExportOptions } from '../../src/service/admin/ledger-export.js'
import { checkImport, writeImport } from '../../src/service/admin/ledger-import.js'
import { textOf } from '../helpers/ledger.js'
import { tempDir } from '../helpers/pind.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'
import { OWNER, paidPin, pinRecord } from '../helpers/records.js'
import { describeCoordinationContract } from './coordination-contract.js'
import { describeLedgerContract, reopenable, type OpenedLedger } from './ledger-contract.js'

let server: TestPostgres
beforeAll(async () => { server = await startTestPostgres() })
afterAll(async () => { await server?.stop() })

async function openPostgres (): Promise<OpenedLedger> {
  const db = await server.freshDatabase()
  const datastore = new MemoryDatastore()
  return await reopenable(async () => await openPostgresLedger({ connectionString: db.url, graceMs: () => 0, datastore }), async () => { await db.drop() })
}

describeLedgerContract('PostgreSQL', openPostgres)
describeCoordinationContract('PostgreSQL', openPostgres)

/** what the PostgreSQL ledger keeps beyond the contract: its schema, its connection, text PostgreSQL cannot hold as it is */
describe('PostgreSQL ledger', () => {
  const sorted = (xs: string[]): string[] => [...xs].sort()
  const collect = async <T>(items: AsyncIterable<T>): Promise<T[]> => {
    const out: T[] = []
    for await (const x of items) out.push(x)
    return out
  }
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

  it('a Sign-In-With-X nonce used through one front end\'s ledger is used for the other; of two at once, one takes it', async () => {
    const db = await server.freshDatabase()
    const [a, b] = await Promise.all([open(db.url), open(db.url)])
    try {
      const until = new Date(Date.now() + 600_000)
      expect(await a.tokens.useNonce('frontend0000000a', until)).toBe(true)
      expect(await b.tokens.useNonce('frontend0000000a', until)).toBe(false)
      const both = await Promise.all([a, b, a, b].map(async (l) => await l.tokens.useNonce('frontend0000000b', until)))
      expect(both.filter(Boolean)).toHaveLength(1)
    } finally {
      await a.close()
      await b.close()
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

  it('an LMDB ledger exported and imported here exports the same, chains and held blocks included', async () => {
    const dir = tempDir('pind-pg-import-')
    const lmdb = await openLmdbLedger(join(dir, 'ledger.mdb'), { graceMs: () => 0 })
    const db = await server.freshDatabase()
    let target: PostgresLedger | undefined
    try {
      const cid = (n: number): string => CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`import ${n} ${Math.random()}`).digest())).toString()
      const soon = { pinnedUntil: new Date(Date.now() + 86400_000).toISOString() }
      const a = paidPin(newRequestid(), cid(1), { pin: soon })
      await lmdb.pins.create(a.pin, a.payment, [a.pin.cid, cid(2)])
      // a replacement still queued: A holds its blocks until it settles
      const b = paidPin(newRequestid(), cid(3), { pin: { ...soon, status: 'queued', replaces: a.pin.requestid } })
      await lmdb.pins.create(b.pin, b.payment)
      const gone = paidPin(newRequestid(), cid(4), { pin: soon })
      await lmdb.pins.create(gone.pin, gone.payment, [gone.pin.cid])
      await lmdb.pins.remove(gone.pin.requestid, 'unpinned')
      const t = paidPin(newRequestid(), cid(5))
      const ticket = { id: newRequestid(), payer: OWNER, bytes: 10, months: 1, amount: '7', paymentId: t.payment.id, network: 'eip155:84532', asset: '0x' + 'c3'.repeat(20), createdAt: new Date().toISOString(), expiresAt: new Date(Date.now() + 3600_000).toISOString() }
      await lmdb.transaction(async (tx) => { await tx.recordPayment({ ...t.payment, requestid: ticket.id, purpose: `ticket:${ticket.id}` }); await tx.putTicket(ticket) })
      const now = new Date()
      const exported = async (l: Ledger): Promise<string> => (await textOf(exportLedger(l, parseExportOptions({ withBlocks: true }), now).chunks))
      const text = await exported(lmdb)
      const lines = text.split('\n')

      target = await open(db.url)
      const source = (): AsyncIterable<string> => (async function * () { yield * lines })()
      await checkImport(source, target)
      await writeImport(source, target, { now })
      expect(await exported(target)).toEqual(text)
      expect(await target.pins.pendingFetches()).toEqual([b.pin.requestid])
      expect(sorted(await target.pins.blocksOf(a.pin.requestid))).toEqual(sorted(await lmdb.pins.blocksOf(a.pin.requestid)))
      expect(await target.pins.refCount(a.pin.cid)).toBe(1)
      expect(await target.provides.count('blocks')).toBe(await lmdb.provides.count('blocks'))
      expect(await target.pins.paymentUsed(t.payment.id)).toBe(true)
      // and it settles as the LMDB ledger would
      await target.pins.finishFetch(b.pin.requestid, [cid(6)], 10, 'fetched')
      expect(await target.pins.refCount(a.pin.cid)).toBe(0)
    } finally {
      await target?.close()
      await lmdb.close()
      await db.drop()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('archiveDue moves in batches, from where the last stopped, and stops when asked', async () => {
    const db = await server.freshDatabase()
    const ledger = await open(db.url)
    try {
      const at = new Date(Date.now() - 3600_000)
      const ids: string[] = []
      for (let i = 0; i < 7; i++) {
        const p = paidPin(newRequestid(), CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`archive ${i} ${Math.random()}`).digest())).toString())
        await ledger.pins.create(p.pin, p.payment, [p.pin.cid])
        await ledger.pins.remove(p.pin.requestid, 'unpinned', at)
        ids.push(p.pin.requestid)
      }
      let betweens = 0
      expect(await ledger.pins.archiveDue(new Date(), async () => { betweens++ }, () => betweens >= 1, 2)).toBe(2)
      expect(await ledger.pins.archiveDue(new Date(), async () => { betweens++ }, undefined, 2)).toBe(5)
      expect(betweens).toBeGreaterThanOrEqual(3)
      for (const id of ids) {
        expect(await ledger.pins.get(id)).toBeUndefined()
        expect(await ledger.pins.known(id)).toBe(true)
      }
      expect((await ledger.pins.countByStatus()).removed).toBe(7)
      expect(await ledger.pins.archiveDue(new Date())).toBe(0)
    } finally {
      await ledger.close()
      await db.drop()
    }
  })

  it('what one front end commits is told to another\'s watchers; a cut feed is told as lost, and what serves blocks from memory follows both', async () => {
    const db = await server.freshDatabase()
    const [a, b] = await Promise.all([open(db.url), open(db.url)])
    const served = new ServableBlocks(b.pins)
    try {
      await served.load()
      const heard: CommittedChanges[] = []
      const removed: string[] = []
      let denials = 0
      let lost = 0
      b.pins.watchCommitted((c) => { heard.push(c) })
      b.pins.watchRemoved((id) => { removed.push(id) })
      b.denials.watch(() => { denials++ })
      b.pins.watchLost(() => { lost++ })
      const ownRemoved: string[] = []
      a.pins.watchRemoved((id) => { ownRemoved.push(id) })

      const block = CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`feed ${Math.random()}`).digest()))
      const p = paidPin(newRequestid(), block.toString())
      await a.pins.create(p.pin, p.payment, [block.toString()])
      await vi.waitFor(() => { expect(served.isPinnedBlock(block)).toBe(true) })
      expect(served.hasLivePin(block)).toBe(true)
      expect(heard.flatMap(c => c.referenced)).toEqual([block.toString()])
      expect(heard.flatMap(c => c.pins.map(x => x.requestid))).toEqual([p.pin.requestid])

      await a.pins.remove(p.pin.requestid, 'unpinned')
      await vi.waitFor(() => { expect(served.isPinnedBlock(block)).toBe(false) })
      expect(served.hasLivePin(block)).toBe(false)
      expect(removed).toEqual([p.pin.requestid])
      // told once to the process that wrote it, not again through the feed
      expect(ownRemoved).toEqual([p.pin.requestid])

      await a.denials.add({ key: block.toString(), rule: block.toString(), reason: 'test', by: 'test', at: new Date().toISOString() })
      await vi.waitFor(() => { expect(denials).toBe(1) })

      // the listening connections cut (a failover, a restart of the server): told as lost once back, then followed again
      const admin = new pg.Client({ connectionString: db.url })
      await admin.connect()
      try {
        await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN pind_changes'")
      } finally {
        await admin.end()
      }
      await vi.waitFor(() => { expect(lost).toBeGreaterThanOrEqual(1) }, { timeout: 15_000 })
      const q = paidPin(newRequestid(), block.toString())
      await a.pins.create(q.pin, q.payment, [block.toString()])
      await vi.waitFor(() => { expect(served.isPinnedBlock(block)).toBe(true) })
    } finally {
      served.close()
      await a.close()
      await b.close()
      await db.drop()
    }
  })

  it('two front ends hand out `created` values a whole millisecond apart from each other', async () => {
    const db = await server.freshDatabase()
    const [a, b] = await Promise.all([open(db.url), open(db.url)])
    try {
      const all = await Promise.all(Array.from({ length: 60 }, async (_, i) => (await (i % 2 === 0 ? a : b).pins.nextCreated()).us))
      const us = [...all].sort((x, y) => x - y)
      for (let i = 1; i < us.length; i++) expect((us[i] as number) - (us[i - 1] as number)).toBeGreaterThanOrEqual(1000)
    } finally {
      await a.close()
      await b.close()
      await db.drop()
    }
  })

  it('two front ends on one database: a payment buys one pin and a ticket makes one, whichever front end asks', async () => {
    const db = await server.freshDatabase()
    const [a, b] = await Promise.all([open(db.url), open(db.url)])
    try {
      const root = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
      const first = paidPin(newRequestid(), root)
      const tries = Array.from({ length: 8 }, () => paidPin(newRequestid(), root, { id: first.payment.id }))
      const created = await Promise.allSettled(tries.map(async (t, i) => { await (i % 2 === 0 ? a : b).pins.create(t.pin, { ...t.payment, requestid: t.pin.requestid }, [root]) }))
      expect(created.filter(r => r.status === 'fulfilled')).toHaveLength(1)
      for (const r of created) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(PaymentReusedError)
      expect(await a.pins.refCount(root)).toBe(1)

      const t = paidPin(newRequestid(), root)
      const ticket = { id: newRequestid(), payer: OWNER, bytes: 10, months: 1, amount: '7', paymentId: t.payment.id, network: 'eip155:84532', asset: '0x' + 'c3'.repeat(20), createdAt: new Date().toISOString(), expiresAt: new Date(Date.now() + 3600_000).toISOString() }
      await a.transaction(async (tx) => { await tx.recordPayment({ ...t.payment, requestid: ticket.id, purpose: `ticket:${ticket.id}` }); await tx.putTicket(ticket) })
      const pins = Array.from({ length: 8 }, () => pinRecord(newRequestid(), root, { owner: OWNER }))
      const claims = await Promise.allSettled(pins.map(async (pin, i) => {
        await (i % 2 === 0 ? b : a).transaction(async (tx) => { await tx.claimTicket(ticket.id, OWNER, pin.requestid); await tx.createPin(pin, undefined, [pin.cid]) })
      }))
      expect(claims.filter(r => r.status === 'fulfilled')).toHaveLength(1)
      for (const r of claims) if (r.status === 'rejected') expect(r.reason).toMatchObject({ name: 'TicketClaimError', why: 'used' })
      expect(await b.pins.refCount(root)).toBe(2)
    } finally {
      await a.close()
      await b.close()
      await db.drop()
    }
  })

  it('the block fence: a front end\'s gc skips blocks another marked, a mark waits while a sweep batch runs, and lapsed or taken-away marks are not seen', async () => {
    const db = await server.freshDatabase()
    const [a, b] = await Promise.all([open(db.url), open(db.url)])
    try {
      const block = (i: number): CID => CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`fence ${i}`).digest()))
      const [x, y, z] = [block(1), block(2), block(3)]
      const stored = new Map([x, y, z].map(c => [blockName(c), 10]))
      const store = {
        list: async function * () { yield [...stored].map(([name, size]) => ({ name, size })) },
        sizeOf: async (s: { name: string }) => stored.get(s.name),
        remove: async (gone: Array<{ name: string }>) => {
          for (const g of gone) stored.delete(g.name)
          return { removed: gone.length, freedBytes: gone.length * 10 }
        }
      }
      const lockA = new CommitLock(a.blockFence)
      const lockB = new CommitLock(b.blockFence)
      // B commits x (held until its ledger record, here: until `recorded`), A's gc sweeps meanwhile
      let recorded!: () => void
      const committing = lockB.shared(async () => { await new Promise<void>(resolve => { recorded = resolve }) }, [x])
      await vi.waitFor(() => { expect(recorded).toBeTypeOf('function') })
      const first = await runGc({ pins: a.pins, blocks: store, lock: lockA, graceMs: 0 })
      expect(first.removedBlocks).toBe(2)
      expect([...stored.keys()]).toEqual([blockName(x)])
      recorded()
      await committing
      // the mark went with the commit: the next sweep takes x
      expect((await runGc({ pins: a.pins, blocks: store, lock: lockA, graceMs: 0 })).removedBlocks).toBe(1)

      // a mark asked for while A's batch decides and deletes waits for the batch to end
      const order: string[] = []
      let batchGo!: () => void
      const batch = lockA.exclusive(async (marked) => {
        order.push(`batch sees ${marked.size}`)
        await new Promise<void>(resolve => { batchGo = resolve })
        order.push('batch deleted')
      }, [blockName(y)])
      await vi.waitFor(() => { expect(order).toEqual(['batch sees 0']) })
      const marking = b.blockFence.mark([blockName(y)], 60_000).then((t) => { order.push('marked'); return t })
      // the mark's statement waits on the fence's lock (seen by PostgreSQL as a lock wait)
      const admin = new pg.Client({ connectionString: db.url })
      await admin.connect()
      try {
        await vi.waitFor(async () => {
          const waiting = await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
          expect(waiting.rows[0]?.n).toBe(1)
        }, { timeout: 10_000 })
      } finally {
        await admin.end()
      }
      expect(order).toEqual(['batch sees 0'])
      batchGo()
      await batch
      const ticket = await marking
      expect(order).toEqual(['batch sees 0', 'batch deleted', 'marked'])
      expect([...await lockA.exclusive(async (m) => m, [blockName(y), blockName(z)])]).toEqual([blockName(y)])
      await b.blockFence.unmark(ticket)
      expect([...await lockA.exclusive(async (m) => m, [blockName(y)])]).toEqual([])
      // a mark that lapsed (its front end died while writing) is not seen
      await b.blockFence.mark([blockName(z)], 1)
      await new Promise(resolve => setTimeout(resolve, 20))
      expect([...await lockA.exclusive(async (m) => m, [blockName(z)])]).toEqual([])
      // a front end started again takes away the marks its last run left (killed while writing), and only its own
      const lockB2 = new CommitLock(b.blockFence)
      expect(await lockB2.ownMarks('front-end-b')).toBe(0)
      const bMarks = await lockB2.mark([y, z])
      await new CommitLock(a.blockFence).ownMarks('front-end-a')
      const aMark = await a.blockFence.mark([blockName(x)], 60_000, 'front-end-a')
      const untouched = await b.blockFence.mark([blockName(x)], 60_000)
      expect([...await lockA.exclusive(async (m) => m, [blockName(x), blockName(y), blockName(z)])].sort()).toEqual([blockName(x), blockName(y), blockName(z)].sort())
      void bMarks // the run that made them was killed: never unmarked
      expect(await new CommitLock(b.blockFence).ownMarks('front-end-b')).toBe(2)
      expect([...await lockA.exclusive(async (m) => m, [blockName(x), blockName(y), blockName(z)])]).toEqual([blockName(x)])
      await a.blockFence.unmark(aMark)
      await b.blockFence.unmark(untouched)
      expect([...await lockA.exclusive(async (m) => m, [blockName(x)])]).toEqual([])
    } finally {
      await a.close()
      await b.close()
      await db.drop()
    }
  })

  it('reannounce makes due at once every key a front end announced last, once, of either kind', async () => {
    const db = await server.freshDatabase()
    const ledger = await open(db.url)
    try {
      const cids = Array.from({ length: 4 }, (_, i) => CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`reannounce ${i}`).digest())).toString())
      for (const c of cids) { const p = paidPin(newRequestid(), c); await ledger.pins.create(p.pin, p.payment, [c]) }
      const now = Date.now()
      const later = now + 3600_000
      const roots = await ledger.provides.due('roots', now, 10)
      const blocks = await ledger.provides.due('blocks', now, 10)
      await ledger.provides.reschedule('roots', roots.map((k, i) => ({ kad: k.kad, due: later, at: now, by: i < 3 ? 'dead' : 'alive' })))
      await ledger.provides.reschedule('blocks', blocks.map(k => ({ kad: k.kad, due: later, at: now, by: 'dead' })))
      // a failed announcement (no `by`) keeps who announced it last
      await ledger.provides.reschedule('roots', [{ kad: (roots[0] as { kad: Buffer }).kad, due: later }])
      expect(await ledger.provides.countDue('roots', Date.now())).toBe(0)
      expect(await ledger.provides.reannounce('dead')).toBe(3 + 4)
      expect(await ledger.provides.countDue('roots', Date.now())).toBe(3)
      expect(await ledger.provides.countDue('blocks', Date.now())).toBe(4)
      expect(await ledger.provides.reannounce('dead')).toBe(0)
      expect(await ledger.provides.reannounce('alive')).toBe(1)
    } finally {
      await ledger.close()
      await db.drop()
    }
  })

  it('concurrent creates and removes of pins sharing blocks leave exact counts, and the change events applied in order give the referenced set', async () => {
    const db = await server.freshDatabase()
    const ledger = await open(db.url)
    try {
      const shared = Array.from({ length: 12 }, (_, i) => CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`shared ${i} ${Math.random()}`).digest())).toString())
      // a follower's view: each committed change applied in the order told
      const followed = new Set<string>()
      ledger.pins.watchCommitted((c) => {
        for (const k of c.referenced) followed.add(k)
        for (const k of c.released) followed.delete(k)
      })
      const pick = (): string[] => shared.filter(() => Math.random() < 0.5).reverse()
      const pins = Array.from({ length: 24 }, () => {
        const p = paidPin(newRequestid(), shared[Math.floor(Math.random() * shared.length)] as string)
        return { ...p, blocks: pick() }
      })
      await Promise.all(pins.slice(0, 12).map(async (p) => { await ledger.pins.create(p.pin, p.payment, p.blocks) }))
      // the second half created while the first half's even ones are removed
      await Promise.all([
        ...pins.slice(12).map(async (p) => { await ledger.pins.create(p.pin, p.payment, p.blocks) }),
        ...pins.slice(0, 12).filter((_, i) => i % 2 === 0).map(async (p) => { await ledger.pins.remove(p.pin.requestid, 'unpinned') })
      ])
      const live = pins.filter((_, i) => i >= 12 || i % 2 === 1)
      for (const k of shared) expect(await ledger.pins.refCount(k)).toBe(live.filter(p => p.blocks.includes(k)).length)
      const referenced = sorted(shared.filter(k => live.some(p => p.blocks.includes(k))))
      expect(sorted([...await collect(ledger.pins.referencedBlocks())])).toEqual(referenced)
      expect(sorted([...followed])).toEqual(referenced)
      expect(await ledger.provides.count('blocks')).toBe(referenced.length)
      const roots = new Set(live.filter(p => p.blocks.length > 0).map(p => p.pin.cid))
      expect(await ledger.provides.count('roots')).toBe(roots.size)
    } finally {
      await ledger.close()
      await db.drop()
    }
  })
})
