/**
 * Sign-In-With-X nonces across front ends: two serves on one PostgreSQL
 * ledger behind one public URL (as behind a load balancer). A header used at
 * one is refused at the other, and a header is taken by one of them only
 * when both get it at once. Front ends sharing a ledger share their blocks:
 * this runs in the vitest project s3 (test/contract/postgres.test.ts checks
 * the same on two ledgers in one process, without S3).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { blockstoreUnderTest } from '../helpers/backend.js'
import { chainArgs } from '../helpers/paying-client.js'
import { startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'
import { eoa, signIn } from '../helpers/siwx-client.js'

const PUBLIC = 'https://pins.example'
let chain: DevChain
let db: TestPostgres
const fronts: PindProcess[] = []

beforeAll(async () => {
  chain = await startDevChain({ payers: 0 })
  db = await startTestPostgres()
})
afterAll(async () => {
  for (const p of fronts) await p.stop()
  await db?.stop()
  await chain?.stop()
})

describe('Sign-In-With-X on two front ends sharing a PostgreSQL ledger', () => {
  it('refuses at one front end a header used at the other, and lets only one of two at once take it', async () => {
    const { url } = await db.freshDatabase()
    // the chain for contract wallets; no settler: each front end would need a key of its own, and nothing is paid here
    const { args } = chainArgs(chain)
    const blocks = await blockstoreUnderTest('s3')
    for (let i = 0; i < 2; i++) {
      fronts.push(await startPind({ dataDir: tempDir('pind-siwx-pg-'), args: [...args, ...blocks.args, '--ledger', 'postgres', '--database-url', url, '--public-url', PUBLIC], env: blocks.env }))
    }
    const [a, b] = fronts as [PindProcess, PindProcess]
    const account = privateKeyToAccount(generatePrivateKey())
    const challenge = await fetch(`${a.url}/pins`)
    expect(challenge.status).toBe(401)
    // the challenge names the public URL, whichever front end answered
    const header = await signIn(challenge, `${PUBLIC}/pins`, eoa(account))
    const at = async (p: PindProcess): Promise<Response> => await fetch(`${p.url}/pins`, { headers: { 'sign-in-with-x': header } })

    const first = await at(a)
    expect(first.status, await first.clone().text()).toBe(200)
    const replayed = await at(b)
    expect(replayed.status).toBe(401)
    expect((await replayed.json() as any).error.details).toMatch(/invalid_siwx_nonce/)

    const fresh = await signIn(await fetch(`${b.url}/pins`), `${PUBLIC}/pins`, eoa(account))
    const both = await Promise.all([a, b].map(async (p) => await fetch(`${p.url}/pins`, { headers: { 'sign-in-with-x': fresh } })))
    expect(both.map(r => r.status).sort()).toEqual([200, 401])
  })
})
