/**
 * Two `pind serve` front ends on one PostgreSQL ledger and one bucket of a
 * real Ceph RADOS Gateway, with the built binary, the dev chain and the real
 * x402 client: a pin paid through one is listed, read and deleted through the
 * other; the same signed payment sent to both at once charges once and pins
 * once; gc on one while the other uploads leaves every acknowledged upload
 * whole; a third front end that cannot work beside them is refused at start.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { blockstoreUnderTest, type BlockstoreUnderTest } from '../helpers/backend.js'
import { chainArgs, payingFetch, signChallenge, uploadForm } from '../helpers/paying-client.js'
import { runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'

/** anvil's fourth default account: a key no front end settles with (the dev chain gives it no ETH) */
const OTHER_KEY = '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6'

let chain: DevChain
let db: TestPostgres
let blocks: BlockstoreUnderTest
let url: string
let a: PindProcess
let b: PindProcess

const serve = async (settlerKey: string, extra: { args?: string[], env?: Record<string, string> } = {}): Promise<PindProcess> => {
  const { args } = chainArgs(chain)
  return await startPind({
    args: [...args, '--ledger', 'postgres', '--database-url', url, '--token-issuer', 'pind-fleet', ...blocks.args, ...(extra.args ?? [])],
    env: { ...blocks.env, PIND_SETTLER_KEY: settlerKey, ...extra.env }
  })
}

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  db = await startTestPostgres()
  url = (await db.freshDatabase()).url
  blocks = await blockstoreUnderTest('s3')
  a = await serve(chain.settlerKey)
  // the second front end's settler, as each needs its own: anvil's first account (the dev chain funds three), with ETH for gas
  b = await serve(chain.deployerKey)
})
afterAll(async () => {
  await a?.stop()
  await b?.stop()
  await db?.stop()
  await chain?.stop()
})

describe('two front ends sharing a ledger and a bucket', () => {
  it('a pin paid through one is listed, served and deleted through the other', async () => {
    const bytes = randomBytes(300_000)
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${a.url}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'x-pin-duration-months': '1' } })
    expect(r.status).toBe(201)
    const { cid, requestid } = await r.json() as { cid: string, requestid: string }
    const token = r.headers.get('x-wallet-auth-token') as string
    const auth = { authorization: `Bearer ${token}` }

    const listed = await (await fetch(`${b.url}/pins`, { headers: auth })).json() as { count: number, results: Array<{ requestid: string }> }
    expect(listed.results.map(p => p.requestid)).toEqual([requestid])
    // the other front end serves it once the change reaches it (a notification: milliseconds)
    const got = await waitFor(async () => { const g = await fetch(`${b.url}/ipfs/${cid}`); return g.status === 200 ? Buffer.from(await g.arrayBuffer()) : undefined }, 'the pin served by the other front end', 5_000)
    expect(got.equals(bytes)).toBe(true)

    expect((await fetch(`${b.url}/pins/${requestid}`, { method: 'DELETE', headers: auth })).status).toBe(202)
    await waitFor(async () => (await fetch(`${a.url}/ipfs/${cid}`)).status !== 200 ? true : undefined, 'the deleted pin no longer served by the first front end', 5_000)
    expect((await fetch(`${a.url}/pins/${requestid}`, { headers: auth })).status).toBe(404)
  })

  it('the same signed payment sent to both at once charges once and pins once', async () => {
    const payer = chain.payers[1]!
    const bytes = randomBytes(50_000)
    const challenge = await fetch(`${a.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
    expect(challenge.status).toBe(402)
    const header = await signChallenge(chain, payer.privateKey, challenge)
    const before = await usdcBalance(chain, payer.address)
    const answers = await Promise.all([a, b, a, b].map(async (fe) => await fetch(`${fe.url}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'payment-signature': header } })))
    const bodies = await Promise.all(answers.map(async (r) => await r.json() as { requestid?: string, price?: { amount: string }, replayed?: boolean }))
    const statuses = answers.map(r => r.status)
    expect(statuses.filter(s => s === 201)).toHaveLength(1)
    // the others: the same pin told again (200), or refused without a charge
    for (const s of statuses) expect([200, 201, 402, 409, 503]).toContain(s)
    const made = bodies[statuses.indexOf(201)]!
    for (const [i, s] of statuses.entries()) if (s === 200) expect(bodies[i]!.requestid).toBe(made.requestid)
    expect(await usdcBalance(chain, payer.address)).toBe(before - BigInt(made.price!.amount))
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    try {
      const owner = payer.address.toLowerCase()
      expect((await c.query('SELECT count(*)::int AS n FROM pins WHERE owner = $1', [owner])).rows[0].n).toBe(1)
    } finally {
      await c.end()
    }
  })

  it('gc on one front end while the other takes uploads, of blocks gc may be deleting too: every acknowledged upload reads back byte for byte from both', async () => {
    const pay = payingFetch(chain, chain.payers[0]!.privateKey)
    const uploadTo = async (fe: PindProcess, bytes: Buffer): Promise<{ cid: string, requestid: string, token: string }> => {
      const r = await pay(`${fe.url}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'x-pin-duration-months': '1' } })
      expect(r.status, await r.clone().text()).toBe(201)
      return { ...await r.json() as { cid: string, requestid: string }, token: r.headers.get('x-wallet-auth-token') as string }
    }
    // garbage the uploads below find stored (their commits skip what is there): uploaded through b, deleted
    const files = Array.from({ length: 6 }, (_, i) => randomBytes(1024 * 1024 + 5_000 * i))
    for (const f of files.slice(0, 3)) {
      const up = await uploadTo(b, f)
      expect((await fetch(`${b.url}/pins/${up.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${up.token}` } })).status).toBe(202)
    }
    const acked: Array<{ cid: string, bytes: Buffer }> = []
    let uploading = true
    let runs = 0
    const gcLoop = (async () => {
      while (uploading || runs === 0) {
        const r = await runPind(['gc', '--json', '--data-dir', a.dataDir], { env: blocks.env })
        expect(r.code, r.err).toBe(0)
        runs++
      }
    })()
    try {
      for (const f of [...files.slice(0, 3), ...files.slice(3), ...files.slice(0, 3)]) acked.push({ cid: (await uploadTo(b, f)).cid, bytes: f })
    } finally {
      uploading = false
    }
    await gcLoop
    const last = await runPind(['gc', '--json', '--data-dir', a.dataDir], { env: blocks.env })
    expect(last.code, last.err).toBe(0)
    expect(runs).toBeGreaterThan(1)
    for (const { cid, bytes } of acked) {
      for (const fe of [a, b]) {
        const got = await waitFor(async () => { const g = await fetch(`${fe.url}/ipfs/${cid}`); return g.status === 200 ? Buffer.from(await g.arrayBuffer()) : undefined }, `${cid} served by ${fe.url}`, 5_000)
        expect(got.equals(bytes)).toBe(true)
      }
    }
  })

  it('pind status names both; a third front end on its own disk, or with a settler key in use, is refused at start', async () => {
    const status = await runPind(['status', '--data-dir', a.dataDir, '--json'])
    expect(status.code, status.err).toBe(0)
    expect(JSON.parse(status.out).frontEnds.map((f: { id: string }) => f.id).sort()).toEqual([a.peerId, b.peerId].sort())

    const { args } = chainArgs(chain)
    const onDisk = await runPind(['serve', '--data-dir', tempDir('pind-fleet-'), '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0', ...args, '--ledger', 'postgres', '--database-url', url], { env: { PIND_SETTLER_KEY: OTHER_KEY } })
    expect(onDisk.code).not.toBe(0)
    expect(onDisk.err).toMatch(/front ends sharing a ledger need shared blocks; start every one with --blockstore s3/)
    const sameKey = await runPind(['serve', '--data-dir', tempDir('pind-fleet-'), '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0', ...args, '--ledger', 'postgres', '--database-url', url, ...blocks.args], { env: { ...blocks.env, PIND_SETTLER_KEY: chain.settlerKey } })
    expect(sameKey.code).not.toBe(0)
    expect(sameKey.err).toMatch(/settles with the same settler key/)
  })
})
