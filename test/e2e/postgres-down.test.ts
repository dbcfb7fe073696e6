/**
 * `pind serve --ledger postgres` while its database is away: the built
 * binary on a throwaway PostgreSQL, paid with the real x402 client on the dev
 * chain. The server is crashed (pg_ctl -m immediate) under a running serve:
 * paid writes and ledger reads answer 503 with Retry-After before any payment
 * is used, the gateway serves what was pinned before from memory, /health and
 * /ready name the ledger. Started again on the same data dir and port, the
 * same signed payment pins once and is charged once, with no restart of pind.
 */
import { randomBytes } from 'node:crypto'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, signChallenge, uploadChallenge, uploadForm } from '../helpers/paying-client.js'
import { startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'

let chain: DevChain
let db: TestPostgres
let pind: PindProcess | undefined

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  // commits survive the crash, as on a production server (synchronous_commit on)
  db = await startTestPostgres({ durable: true })
})
afterAll(async () => {
  await pind?.stop()
  await db?.stop()
  await chain?.stop()
})

/** the spec's error body, and a Retry-After of whole seconds */
async function expect503 (r: Response): Promise<{ reason: string, details: string }> {
  const text = await r.text()
  expect(r.status, text).toBe(503)
  expect(r.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/)
  const body = JSON.parse(text) as { error: { reason: string, details: string } }
  expect(body.error.reason).toBe('SERVICE_UNAVAILABLE')
  expect(typeof body.error.details).toBe('string')
  return body.error
}

describe('serve on a PostgreSQL ledger that goes away', () => {
  it('answers paid writes and ledger reads with 503 before any payment is used, serves what it knew, names the ledger in /health and /ready, and recovers by itself', async () => {
    const { url } = await db.freshDatabase()
    const { args, env } = chainArgs(chain)
    const payer = chain.payers[0]!
    const metricsPort = await freePort()
    pind = await startPind({ dataDir: tempDir('pind-pgdown-'), args: [...args, '--ledger', 'postgres', '--database-url', url, '--metrics-listen', `127.0.0.1:${metricsPort}`], env })
    const base = pind.url
    const scrape = async (): Promise<string> => await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()

    // a pin made while the database answers
    const before = randomBytes(200_000)
    const first = await payingFetch(chain, payer.privateKey)(`${base}/upload`, { method: 'POST', body: uploadForm(before), headers: { 'x-pin-duration-months': '1' } })
    expect(first.status).toBe(201)
    const { cid } = await first.json() as { cid: string }
    const token = first.headers.get('x-wallet-auth-token') as string

    // payments signed now, sent while the database is away
    const bytes = randomBytes(100_000)
    const uploadChallenged = await uploadChallenge(base, bytes.length)
    const pinChallenge = await fetch(`${base}/pins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid }) })
    const price = (r: Response): bigint => BigInt(decodePaymentRequiredHeader(r.headers.get('payment-required') as string).accepts[0]!.amount)
    const prices = price(uploadChallenged) + price(pinChallenge)
    const uploadPayment = await signChallenge(chain, payer.privateKey, uploadChallenged)
    const pinPayment = await signChallenge(chain, payer.privateKey, pinChallenge)
    const upload = async (): Promise<Response> => await fetch(`${base}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'x-upload-size': String(bytes.length), 'payment-signature': uploadPayment } })
    const pinIt = async (): Promise<Response> => await fetch(`${base}/pins`, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': pinPayment }, body: JSON.stringify({ cid }) })
    const balance = await usdcBalance(chain, payer.address)

    await db.crash()
    try {
      await expect503(await upload())
      await expect503(await pinIt())
      await expect503(await fetch(`${base}/pins`, { headers: { authorization: `Bearer ${token}` } }))
      // nothing was settled: the payer's USDC has not moved
      expect(await usdcBalance(chain, payer.address)).toBe(balance)

      // the gateway answers from memory what was live when the database went
      const got = await fetch(`${base}/ipfs/${cid}`)
      expect(got.status).toBe(200)
      expect(Buffer.from(await got.arrayBuffer()).equals(before)).toBe(true)

      // a passed ledger read is reused for a second: the check fails once that has run out
      for (const path of ['/health', '/ready']) {
        const body = await waitFor(async () => {
          const r = await fetch(`${base}${path}`)
          return r.status === 503 ? await r.json() as { checks: Record<string, { ok: boolean, error?: string }> } : undefined
        }, `${path} answers 503`, 10_000)
        expect(body.checks.ledger?.ok, path).toBe(false)
        expect(body.checks.ledger?.error, path).toContain('ledger')
        expect(body.checks.blockstore?.ok, path).toBe(true)
      }
      const metrics = await scrape()
      expect(metrics).toMatch(/^pind_ledger_pool_connections \d+$/m)
      expect(metrics).toMatch(/^pind_ledger_call_failures_total\{operation="pins\.paymentUsed"\} [1-9]/m)
      expect(metrics).toMatch(/^pind_leases_held\{lease="[a-z-]+"\} [01]$/m)
    } finally {
      await db.restart()
    }

    // back by itself: no restart of pind
    await waitFor(async () => (await fetch(`${base}/health`)).status === 200 ? true : undefined, '/health answers 200 again')
    expect((await fetch(`${base}/ready`)).status).toBe(200)
    const retried = await upload()
    expect(retried.status, `${await retried.clone().text()}\n${pind.stderr()}`).toBe(201)
    const pinned = await pinIt()
    expect(pinned.status, await pinned.clone().text()).toBe(202)
    // each payment charged once, the same payments again being replays
    expect(balance - await usdcBalance(chain, payer.address)).toBe(prices)
    expect([200, 201, 202]).toContain((await upload()).status)
    expect([200, 201, 202]).toContain((await pinIt()).status)
    expect(balance - await usdcBalance(chain, payer.address)).toBe(prices)
    const listed = await (await fetch(`${base}/pins?status=queued,pinning,pinned,failed`, { headers: { authorization: `Bearer ${token}` } })).json() as { count: number }
    expect(listed.count, JSON.stringify(listed)).toBe(3)
    const metrics = await scrape()
    expect(metrics).toMatch(/^pind_ledger_call_duration_seconds_count\{operation="pins\.create"\} [1-9]/m)
    expect(await pind.stop()).toBe(0)
    pind = undefined
  })
})
