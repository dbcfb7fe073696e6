/**
 * GET /usage on the built binary, on each ledger (LMDB and PostgreSQL), paid
 * with the real x402 client on the dev chain: a wallet's pins by status, the
 * DAG bytes of its pinned ones, what it paid per network (the payer's USDC
 * balance moved by exactly that), the soonest expiry; another wallet sees only
 * its own; it is free and needs a wallet token.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'

let chain: DevChain
let db: TestPostgres
const running: PindProcess[] = []

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  db = await startTestPostgres()
})
afterAll(async () => {
  for (const p of running) await p.stop()
  await db?.stop()
  await chain?.stop()
})

interface Usage { owner: string, pins: Record<string, number>, bytes_pinned: number, spent: Record<string, { amount: string, usdc: string }>, next_expiry: string | null }

describe.each(['lmdb', 'postgres'] as const)('GET /usage on the %s ledger', (ledger) => {
  it('counts the wallet\'s pins, bytes and payments, the soonest expiry, and nothing of another wallet', async () => {
    const extra = ledger === 'postgres' ? ['--ledger', 'postgres', '--database-url', (await db.freshDatabase()).url] : []
    const { args, env } = chainArgs(chain)
    const pind = await startPind({ dataDir: tempDir('pind-usage-'), args: [...args, ...extra], env })
    running.push(pind)
    const base = pind.url
    const [a, b] = chain.payers as [{ privateKey: `0x${string}`, address: `0x${string}` }, { privateKey: `0x${string}`, address: `0x${string}` }]
    const payA = payingFetch(chain, a.privateKey)
    const balanceA = await usdcBalance(chain, a.address)

    const upload = async (pay: typeof fetch, bytes: Buffer, months: number): Promise<{ requestid: string, cid: string, dag_size: number, token: string }> => {
      const r = await pay(`${base}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'x-pin-duration-months': String(months) } })
      expect(r.status, await r.clone().text()).toBe(201)
      return { ...await r.json() as { requestid: string, cid: string, dag_size: number }, token: r.headers.get('x-wallet-auth-token') as string }
    }
    const one = await upload(payA, randomBytes(300_000), 2)
    const two = await upload(payA, randomBytes(120_000), 1)
    const gone = await upload(payA, randomBytes(50_000), 1)
    const token = one.token
    const auth = { authorization: `Bearer ${token}` }
    // renewed by a month: paid again
    const renewed = await payA(`${base}/pins/${two.requestid}/renew`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'x-pin-duration-months': '1' }, body: '{}' })
    expect(renewed.status, await renewed.clone().text()).toBe(200)
    // removed by its owner: no longer counted, its payment still spent
    expect((await fetch(`${base}/pins/${gone.requestid}`, { method: 'DELETE', headers: auth })).status).toBe(202)
    // the other wallet's upload
    const other = await upload(payingFetch(chain, b.privateKey), randomBytes(80_000), 3)

    const r = await fetch(`${base}/usage`, { headers: auth })
    expect(r.status, `${await r.clone().text()} ${pind.stderr()}`).toBe(200)
    expect(r.headers.get('cache-control')).toBe('no-store')
    const u = await r.json() as Usage
    expect(u.owner).toBe(a.address.toLowerCase())
    expect(u.pins).toEqual({ queued: 0, pinning: 0, pinned: 2, failed: 0, total: 2 })
    expect(u.bytes_pinned).toBe(one.dag_size + two.dag_size)
    // what the payer's balance lost, to the unit, on the one network
    const paid = balanceA - await usdcBalance(chain, a.address)
    expect(paid > 0n).toBe(true)
    expect(Object.keys(u.spent)).toEqual([`eip155:${chain.chainId}`])
    expect(u.spent[`eip155:${chain.chainId}`]?.amount).toBe(paid.toString())
    // the soonest pinned_until among the live pins, as GET /pins shows them
    const listed = await (await fetch(`${base}/pins`, { headers: auth })).json() as { results: Array<{ info: { pinned_until: string } }> }
    const soonest = listed.results.map(p => p.info.pinned_until).sort()[0] as string
    expect(u.next_expiry).not.toBeNull()
    expect(Date.parse(u.next_expiry as string)).toBe(Date.parse(soonest))

    const theirs = await (await fetch(`${base}/usage`, { headers: { authorization: `Bearer ${other.token}` } })).json() as Usage
    expect(theirs.owner).toBe(b.address.toLowerCase())
    expect(theirs.pins.total).toBe(1)
    expect(theirs.bytes_pinned).toBe(other.dag_size)

    // free, and only with a token
    for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: `Bearer ${token}x` }]) {
      const denied = await fetch(`${base}/usage`, { headers })
      expect(denied.status).toBe(401)
      expect((await denied.json() as { error: { reason: string } }).error.reason).toBe('UNAUTHORIZED')
    }
    expect(await pind.stop()).toBe(0)
    running.splice(running.indexOf(pind), 1)
  })
})
