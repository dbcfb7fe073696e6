/**
 * Issue 13, finding 5: rate limits bypassed by headers. A garbage
 * PAYMENT-SIGNATURE, any X-Payment, or any Authorization header exempted an
 * unpaid write from the limit: 150 of 150 went through. Each attacker here
 * is its own loopback address against the real server on the dev chain,
 * with the default limits; what counts is what each request turns out to
 * be, so an honest payer is still limited only on its 402s.
 */
import { randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { clientAt } from '../helpers/hostile.js'

let chain: DevChain
let pind: PindProcess
let strict: PindProcess

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  const { args, env } = chainArgs(chain)
  // no root-block probe: each unpaid answer is a quick 402, as in the attack
  pind = await startPind({ args: [...args, '--pin-probe-timeout', '0', '--rate-limit-reads', '100'], env })
  strict = await startPind({ args: [...args, '--pin-probe-timeout', '0', '--rate-limit-unpaid', '3'], env })
})
afterAll(async () => {
  await pind?.stop()
  await strict?.stop()
  await chain?.stop()
})

const randomCid = async (): Promise<string> => CID.createV1(0x55, await sha256.digest(randomBytes(32))).toString()

/** Sends `n` requests from `address` one after another; returns the statuses and the seconds it took. */
async function attack (address: string, n: number, method: string, path: string, headers: Record<string, string>, body?: () => Promise<string>): Promise<{ statuses: number[], seconds: number }> {
  const c = clientAt(address, 1)
  const t0 = Date.now()
  const statuses: number[] = []
  try {
    for (let i = 0; i < n; i++) {
      const r = await c.request(`${pind.url}${path}`, { method: method as 'POST', headers, ...(body != null ? { body: await body() } : {}) })
      await r.body.dump()
      statuses.push(r.statusCode)
    }
  } finally {
    await c.close()
  }
  return { statuses, seconds: (Date.now() - t0) / 1000 }
}

/** At most the limit (plus what refills at limit/minute while the attack runs) gets through; the rest is 429. */
function expectLimited (a: { statuses: number[], seconds: number }, perMinute: number, answered: number[]): void {
  const through = a.statuses.filter(s => s !== 429)
  expect(through.length).toBeLessThanOrEqual(perMinute + Math.ceil(a.seconds * perMinute / 60) + 1)
  expect(a.statuses.filter(s => s === 429).length).toBeGreaterThan(0)
  for (const s of through) expect(answered).toContain(s)
}

const pinBody = async (): Promise<string> => JSON.stringify({ cid: await randomCid() })

describe('unpaid writes carrying payment or token headers', () => {
  it('a garbage PAYMENT-SIGNATURE counts as unpaid: 150 tries, at most the limit (120) answered', async () => {
    const a = await attack('127.0.0.2', 150, 'POST', '/pins', { 'content-type': 'application/json', 'payment-signature': 'garbage' }, pinBody)
    expectLimited(a, 120, [402])
  })

  it('an X-Payment header counts as unpaid', async () => {
    const a = await attack('127.0.0.3', 150, 'POST', '/pins', { 'content-type': 'application/json', 'x-payment': 'anything' }, pinBody)
    expectLimited(a, 120, [402])
  })

  it('an invalid bearer token counts as unpaid, on POST /pins and on DELETE', async () => {
    const a = await attack('127.0.0.4', 150, 'POST', '/pins', { 'content-type': 'application/json', authorization: 'Bearer not.a.token' }, pinBody)
    expectLimited(a, 120, [401])
    const d = await attack('127.0.0.5', 150, 'DELETE', '/pins/00000000-0000-4000-8000-000000000000', { authorization: 'Bearer not.a.token' })
    expectLimited(d, 120, [401])
  })

  it('a well-formed payment signed by nobody (refused at verification) counts as unpaid', async () => {
    const forged = Buffer.from(JSON.stringify({
      x402Version: 2,
      accepted: { scheme: 'exact', network: 'eip155:167000' },
      payload: { signature: '0x' + '11'.repeat(65), authorization: { from: '0x' + '22'.repeat(20), to: chain.payTo, value: '1000', validAfter: '0', validBefore: '9999999999', nonce: '0x' + '33'.repeat(32) } }
    })).toString('base64')
    const a = await attack('127.0.0.6', 150, 'POST', '/pins', { 'content-type': 'application/json', 'payment-signature': forged }, pinBody)
    expectLimited(a, 120, [402])
  })

  it('reads carrying payment and token headers count as reads (limit 100 here)', async () => {
    const a = await attack('127.0.0.7', 150, 'GET', '/pins', { authorization: 'Bearer not.a.token', 'x-payment': 'x', 'payment-signature': 'x' })
    expectLimited(a, 100, [401])
  })
})

describe('an honest payer', () => {
  it('is limited only on its unpaid 402s: three paid pins (six requests) under a limit of 3; garbage after them is owed, then refused', async () => {
    const from = clientAt('127.0.0.8', 1)
    // the 402 and the paid retry come from the same client address
    const pay = payingFetch(chain, chain.payers[0]!.privateKey, from.fetch)
    try {
      for (let i = 0; i < 3; i++) {
        const r = await pay(`${strict.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await pinBody() })
        expect(r.status).toBe(202)
      }
      // one request with a payment may run ahead of the empty allowance (as the last paid retry did);
      // this one turns out unpaid, so the client now owes it, and the next is refused
      const garbage = async (): Promise<{ status: number, retryAfter: number }> => {
        const r = await from.request(`${strict.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': 'garbage' }, body: await pinBody() })
        await r.body.dump()
        return { status: r.statusCode, retryAfter: Number(r.headers['retry-after']) }
      }
      expect((await garbage()).status).toBe(402)
      const refused = await garbage()
      expect(refused.status).toBe(429)
      expect(refused.retryAfter).toBeGreaterThanOrEqual(20)
    } finally {
      await from.close()
    }
  })
})
