/**
 * `pind ledger migrate`: an LMDB data dir with a paid pin, operator tokens,
 * a revocation and a denial moves into PostgreSQL and back, with the built
 * binary, the dev chain and the real x402 client; serve on each side lists
 * and serves the pin, accepts the token minted before the move, refuses the
 * revoked one and keeps the denial. A target holding the records already is
 * resumed, not refused; one holding other records is refused before the data
 * dir switches, and nothing is written into it.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'

let chain: DevChain
let db: TestPostgres
const OWNER = '0x00000000000000000000000000000000000000c3'
const DENIED = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  db = await startTestPostgres()
})
afterAll(async () => {
  await db?.stop()
  await chain?.stop()
})

/** a serve on `dataDir` takes one paid upload of `bytes` and stops: the upload's CID */
async function paidUpload (dataDir: string, bytes: Uint8Array, extra: string[] = []): Promise<string> {
  const { args, env } = chainArgs(chain)
  const s = await startPind({ dataDir, args: [...args, ...extra], env })
  try {
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${s.url}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'x-pin-duration-months': '1' } })
    expect(r.status).toBe(201)
    return (await r.json() as { cid: string }).cid
  } finally {
    expect(await s.stop()).toBe(0)
  }
}

const pind = async (dataDir: string, ...args: string[]): Promise<{ code: number | null, out: string, err: string }> =>
  await runPind([...args, '--data-dir', dataDir])

describe('pind ledger migrate', () => {
  it('moves a ledger into PostgreSQL and back; serve on each side has the pin, the tokens, the revocation and the denial', async () => {
    const dataDir = tempDir('pind-migrate-')
    const { args, env } = chainArgs(chain)
    const serve = async (): Promise<PindProcess> => await startPind({ dataDir, args: [...args, '--token-issuer', 'pind-migrate-test'], env })
    const bytes = randomBytes(200_000)
    const cid = await paidUpload(dataDir, bytes, ['--token-issuer', 'pind-migrate-test'])
    let s: PindProcess
    const mint = async (): Promise<string> => {
      const r = await pind(dataDir, 'keys', 'mint', '--owner', OWNER, '--json')
      expect(r.code, r.err).toBe(0)
      return JSON.parse(r.out).token as string
    }
    const kept = await mint()
    const revoked = await mint()
    const jti = JSON.parse(Buffer.from(revoked.split('.')[1]!, 'base64url').toString()).jti as string
    expect((await pind(dataDir, 'keys', 'revoke', '--jti', jti)).code).toBe(0)
    expect((await pind(dataDir, 'deny', 'add', DENIED, '--reason', 'test')).code).toBe(0)

    /** what serve answers on this data dir now */
    const check = async (): Promise<void> => {
      s = await serve()
      try {
        const listed = await fetch(`${s.url}/pins?cid=${cid}`, { headers: { authorization: `Bearer ${kept}` } })
        expect(listed.status).toBe(200)
        const got = await fetch(`${s.url}/ipfs/${cid}`)
        expect(got.status).toBe(200)
        expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true)
        expect((await fetch(`${s.url}/pins`, { headers: { authorization: `Bearer ${revoked}` } })).status).toBe(401)
        expect((await fetch(`${s.url}/ipfs/${DENIED}`)).status).toBe(410)
      } finally {
        expect(await s.stop()).toBe(0)
      }
    }

    const { url } = await db.freshDatabase()
    const moved = await pind(dataDir, 'ledger', 'migrate', '--to', 'postgres', '--database-url', url, '--json')
    expect(moved.code, moved.err).toBe(0)
    expect(JSON.parse(moved.out)).toMatchObject({ to: 'postgres', pins: 1, payments: 1, tickets: 0, skipped: 0, tokens: 2, revocations: 1, denials: 1, keys: 1 })
    expect(existsSync(join(dataDir, 'ledger.json'))).toBe(true)
    expect(existsSync(join(dataDir, 'ledger.mdb'))).toBe(false)
    expect(readdirSync(dataDir).some(f => f.startsWith('ledger.mdb.moved-to-postgres-'))).toBe(true)
    await check()

    const back = await pind(dataDir, 'ledger', 'migrate', '--to', 'lmdb', '--json')
    expect(back.code, back.err).toBe(0)
    expect(JSON.parse(back.out)).toMatchObject({ to: 'lmdb', pins: 1, payments: 1, tokens: 2, revocations: 1, denials: 1, keys: 1 })
    expect(existsSync(join(dataDir, 'ledger.json'))).toBe(false)
    await check()
    expect((await pind(dataDir, 'ledger', 'migrate', '--to', 'lmdb')).err).toContain('in LMDB already')
  })

  it('resumes into a database that holds the records already, and refuses one that holds others without switching', async () => {
    // a ledger with a pin, exported and imported (as a run that stopped after its records would leave it)
    const source = tempDir('pind-migrate-')
    await paidUpload(source, randomBytes(5000))
    const file = join(tempDir('pind-migrate-'), 'l.jsonl')
    expect((await pind(source, 'export-ledger', '--with-blocks', '-o', file)).code).toBe(0)
    const { url } = await db.freshDatabase()
    const other = join(tempDir('pind-migrate-'), 'data')
    expect((await runPind(['import-ledger', file, '--data-dir', other, '--ledger', 'postgres', '--database-url', url])).code).toBe(0)

    const resumed = await pind(source, 'ledger', 'migrate', '--to', 'postgres', '--database-url', url, '--json')
    expect(resumed.code, resumed.err).toBe(0)
    expect(JSON.parse(resumed.out)).toMatchObject({ pins: 0, payments: 0, skipped: 2 })

    // a database holding records of another ledger: refused before anything is written, the data dir untouched
    const differs = tempDir('pind-migrate-')
    await paidUpload(differs, randomBytes(5000))
    const refused = await pind(differs, 'ledger', 'migrate', '--to', 'postgres', '--database-url', url)
    expect(refused.code).toBe(1)
    expect(refused.err).toMatch(/the target holds pin .*, which this ledger does not: move into an empty database \(nothing was written\)/)
    expect(existsSync(join(differs, 'ledger.mdb'))).toBe(true)
    expect(existsSync(join(differs, 'ledger.json'))).toBe(false)
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    try {
      expect((await c.query('SELECT count(*)::int AS n FROM pins')).rows[0].n).toBe(1)
    } finally {
      await c.end()
    }
  })
})
