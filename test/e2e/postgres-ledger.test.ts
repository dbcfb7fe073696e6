/**
 * `pind serve --ledger postgres`: the built binary on a real PostgreSQL
 * (scripts/postgres.mjs), paid with the real x402 client on the dev chain.
 * What a paid upload writes is in the database, listed, served and still
 * there after a restart; the data dir records the database (never its
 * password) and admin commands on the stopped data dir read the same one.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'

let chain: DevChain
let db: TestPostgres
const PASSWORD = 'not-in-any-log-7f3a'

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  db = await startTestPostgres()
})
afterAll(async () => {
  await db?.stop()
  await chain?.stop()
})

/** rows in a table of the ledger's database */
async function rows (url: string, sql: string): Promise<Array<Record<string, unknown>>> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return (await c.query(sql)).rows
  } finally {
    await c.end()
  }
}

describe('serve on a PostgreSQL ledger', () => {
  it('records a paid upload in the database, lists and serves it, and keeps it across a restart; admin commands read the same database', async () => {
    const { url } = await db.freshDatabase()
    const dataDir = tempDir('pind-pg-')
    const { args, env } = chainArgs(chain)
    // one issuer across the restart (the URL's port changes): the token stays valid
    const serve = async (extra: string[]): Promise<PindProcess> => await startPind({ dataDir, args: [...args, '--token-issuer', 'pind-pg-test', ...extra], env: { ...env, PIND_DATABASE_PASSWORD: PASSWORD, PIND_LOG_LEVEL: 'info' } })
    let pind = await serve(['--ledger', 'postgres', '--database-url', url])
    const bytes = randomBytes(300_000)
    let cid: string
    let token: string
    try {
      expect(pind.stdout()).toContain(`ledger:     PostgreSQL ${url}`)
      const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'x-pin-duration-months': '1' } })
      expect(r.status).toBe(201)
      const body = await r.json() as { cid: string, requestid: string }
      cid = body.cid
      token = r.headers.get('x-wallet-auth-token') as string
      // the records are the database's: the pin and the payment that bought it
      expect(await rows(url, 'SELECT requestid FROM pins')).toEqual([{ requestid: body.requestid }])
      expect(await rows(url, 'SELECT count(*)::int AS n FROM payments')).toEqual([{ n: 1 }])
      const listed = await (await fetch(`${pind.url}/pins`, { headers: { authorization: `Bearer ${token}` } })).json() as { count: number, results: Array<{ pin: { cid: string } }> }
      expect(listed.count).toBe(1)
      expect(listed.results[0]?.pin.cid).toBe(cid)
      const got = await fetch(`${pind.url}/ipfs/${cid}?format=raw`)
      expect(got.status).toBe(200)
    } finally {
      expect(await pind.stop()).toBe(0)
    }
    // the data dir names the database, never its password, and holds no ledger of its own
    expect(existsSync(join(dataDir, 'ledger.mdb'))).toBe(false)
    expect(JSON.parse(readFileSync(join(dataDir, 'ledger.json'), 'utf8'))).toMatchObject({ backend: 'postgres', url })
    expect(readFileSync(join(dataDir, 'ledger.json'), 'utf8')).not.toContain(PASSWORD)
    expect(pind.stdout() + pind.stderr()).not.toContain(PASSWORD)

    // an admin command on the stopped data dir reads the database the data dir records
    const ls = await runPind(['pins', 'ls', '--data-dir', dataDir, '--json'], { env: { PIND_DATABASE_PASSWORD: PASSWORD } })
    expect(ls.code, ls.err).toBe(0)
    expect(ls.err).toMatch(/on the data dir .* \(no serve running\)/)
    expect(ls.out).toContain(cid)

    // a restart with no ledger flags opens the recorded database: the pin is listed and served
    pind = await serve([])
    try {
      const listed = await (await fetch(`${pind.url}/pins`, { headers: { authorization: `Bearer ${token}` } })).json() as { count: number }
      expect(listed.count).toBe(1)
      const got = await fetch(`${pind.url}/ipfs/${cid}`)
      expect(got.status).toBe(200)
      expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true)
    } finally {
      expect(await pind.stop()).toBe(0)
    }

    // moved out to an LMDB data dir and back into another database: the same records each way
    const exported = async (dir: string): Promise<string> => {
      const file = join(tempDir('pind-pg-move-'), 'ledger.jsonl')
      const r = await runPind(['export-ledger', '--data-dir', dir, '--with-blocks', '-o', file], { env: { PIND_DATABASE_PASSWORD: PASSWORD } })
      expect(r.code, r.err).toBe(0)
      return file
    }
    const lmdbDir = join(tempDir('pind-pg-move-'), 'data')
    const toLmdb = await runPind(['import-ledger', await exported(dataDir), '--data-dir', lmdbDir])
    expect(toLmdb.code, toLmdb.err).toBe(0)
    expect(existsSync(join(lmdbDir, 'ledger.mdb'))).toBe(true)
    const second = await db.freshDatabase()
    const pgDir = join(tempDir('pind-pg-move-'), 'data')
    const toPg = await runPind(['import-ledger', await exported(lmdbDir), '--data-dir', pgDir, '--ledger', 'postgres', '--database-url', second.url])
    expect(toPg.code, toPg.err).toBe(0)
    expect(JSON.parse(readFileSync(join(pgDir, 'ledger.json'), 'utf8'))).toMatchObject({ backend: 'postgres', url: second.url })
    expect(await rows(second.url, 'SELECT count(*)::int AS n FROM pins')).toEqual([{ n: 1 }])
    const both = await Promise.all([dataDir, pgDir].map(async (dir) => await runPind(['export-ledger', '--data-dir', dir, '--with-blocks'], { env: { PIND_DATABASE_PASSWORD: PASSWORD } })))
    // the same records (the header's export time aside)
    const body = (out: string): string => out.split('\n').filter(l => !l.includes('"type":"header"')).join('\n')
    expect(body(both[1]!.out)).toBe(body(both[0]!.out))
    expect(body(both[0]!.out)).toContain(cid)
  })

  it('refuses --ledger lmdb on a data dir that records PostgreSQL, a password in --database-url (without showing it), and a password file others can read', async () => {
    const { url } = await db.freshDatabase()
    const dataDir = tempDir('pind-pg-')
    writeFileSync(join(dataDir, 'ledger.json'), JSON.stringify({ backend: 'postgres', url, since: new Date().toISOString() }))
    const lmdb = await runPind(['serve', '--data-dir', dataDir, '--port', '0', '--ledger', 'lmdb'])
    expect(lmdb.code).not.toBe(0)
    expect(lmdb.err).toContain('ledger is in PostgreSQL')
    expect(existsSync(join(dataDir, 'ledger.mdb'))).toBe(false)

    const withPassword = url.replace('postgres@', `postgres:${PASSWORD}@`)
    const flag = await runPind(['serve', '--data-dir', tempDir('pind-pg-'), '--port', '0', '--ledger', 'postgres', '--database-url', withPassword])
    expect(flag.code).not.toBe(0)
    expect(flag.err).toContain('PIND_DATABASE_PASSWORD')
    expect(flag.out + flag.err).not.toContain(PASSWORD)

    const file = join(tempDir('pind-pg-'), 'password')
    writeFileSync(file, PASSWORD, { mode: 0o644 })
    const loose = await runPind(['serve', '--data-dir', tempDir('pind-pg-'), '--port', '0', '--ledger', 'postgres', '--database-url', url, '--database-password-file', file])
    expect(loose.code).not.toBe(0)
    expect(loose.err).toContain('chmod 600')
    expect(loose.out + loose.err).not.toContain(PASSWORD)
  })
})
