/**
 * An honest retry of a payment whose settlement had an uncertain outcome,
 * sent before reconciliation's next pass (it runs hourly here: the default
 * sweep interval, capped at 5 minutes, is far away). The remote facilitator
 * stand-in fails its settle call after settling on chain (the money moved)
 * or before (it did not); either way pind answers 503 and keeps the note.
 * The retry with the same payment reconciles that note at once:
 *   - moved: the pin it bought is recorded and the retry gets it (upload 200
 *     replayed, POST /pins 202, replace 202 — and again once the replaced pin
 *     is gone —, renew 200), never 402 "already used";
 *   - not moved: the payment is unused and the retry does the work;
 *   - a chain that cannot be read (no --rpc-url): 503 with Retry-After.
 * The same payment on another request stays refused (402).
 */
import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid } from '../../scripts/peer/index.mjs'
import { identifyPayment } from '../../src/payment/gate.js'
import { startFacilitatorStandIn, type StandIn } from '../helpers/facilitator-standin.js'
import { recordingPayer, signChallenge, uploadForm } from '../helpers/paying-client.js'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'

let chain: DevChain
let standIn: StandIn
let pind: PindProcess
let blind: PindProcess | undefined
/** how the stand-in's next settle call fails: after settling on chain, before, or not at all */
let failSettle: 'after' | 'before' | undefined

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  standIn = await startFacilitatorStandIn(chain, 0, {
    beforeSettle: () => { if (failSettle === 'before') { failSettle = undefined; throw new Error('the facilitator went away before settling') } },
    afterSettle: () => { if (failSettle === 'after') { failSettle = undefined; throw new Error('the answer was lost') } }
  })
  pind = await startPind({ args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--facilitator-url', standIn.url, '--pin-probe-timeout', '0'] })
})

afterAll(async () => {
  await blind?.stop()
  await pind?.stop()
  await standIn?.close()
  await chain?.stop()
})

async function expectUncertain (r: Response): Promise<void> {
  const body = await r.json() as any
  expect(r.status, JSON.stringify(body.error)).toBe(503)
  expect(r.headers.get('retry-after')).toMatch(/^\d+$/)
}

/** the open settlement notes of the payment a PAYMENT-SIGNATURE carries */
async function openNotes (dataDir: string, signature: string): Promise<any[]> {
  const r = await runPind(['settlements', 'list', '--json', '--data-dir', dataDir])
  expect(r.code, r.err).toBe(0)
  return JSON.parse(r.out).notes.filter((n: { paymentId: string }) => n.paymentId === identifyPayment(signature)?.id)
}

describe('a retry after an uncertain settlement, before reconciliation', () => {
  it('upload: settled on chain, the retry with the same payment gets the pin (200 replayed), not 402', async () => {
    const bytes = randomBytes(300_000)
    const { pay, signature } = recordingPayer(chain, chain.payers[0]!.privateKey)
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'after'
    await expectUncertain(await pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes, 'lost.bin') }))
    expect(await usdcBalance(chain, chain.payTo)).toBeGreaterThan(before)
    expect(await openNotes(pind.dataDir, signature())).toHaveLength(1)

    const retry = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'payment-signature': signature() }, body: uploadForm(bytes, 'lost.bin') })
    const body = await retry.json() as any
    expect(retry.status, JSON.stringify(body.error)).toBe(200)
    expect(body).toMatchObject({ replayed: true, status: 'pinned', size: bytes.length })
    const served = Buffer.from(await (await fetch(`${pind.url}/ipfs/${body.cid}`)).arrayBuffer())
    expect(served.equals(bytes)).toBe(true)
    expect(await openNotes(pind.dataDir, signature())).toEqual([])
    // charged once
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(BigInt(body.price.amount))
  })

  it('upload: never settled, the retry with the same payment does the upload (201)', async () => {
    const bytes = randomBytes(200_000)
    const { pay, signature } = recordingPayer(chain, chain.payers[0]!.privateKey)
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'before'
    await expectUncertain(await pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes, 'unsent.bin') }))
    expect(await usdcBalance(chain, chain.payTo)).toBe(before)

    const retry = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'payment-signature': signature() }, body: uploadForm(bytes, 'unsent.bin') })
    const body = await retry.json() as any
    expect(retry.status, JSON.stringify(body.error)).toBe(201)
    expect(body.replayed).toBeUndefined()
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(BigInt(body.price.amount))
    expect(await openNotes(pind.dataDir, signature())).toEqual([])
    // the staged blocks the first attempt's note kept are gone with it
    expect(readdirSync(join(pind.dataDir, 'staging'))).toEqual([])
  })

  it('POST /pins: settled on chain, the retry gets the pin (202); the same payment for another CID stays 402', async () => {
    const cid = rawCid(randomBytes(64)).toString()
    const { pay, signature } = recordingPayer(chain, chain.payers[0]!.privateKey)
    const pin = (c: string, sig?: string): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-pin-size': '1000', ...(sig != null ? { 'payment-signature': sig } : {}) },
      body: JSON.stringify({ cid: c })
    })
    failSettle = 'after'
    await expectUncertain(await pay(`${pind.url}/pins`, pin(cid)))

    // another request with this payment: refused, and the note is left for its own request
    const other = await fetch(`${pind.url}/pins`, pin(rawCid(randomBytes(64)).toString(), signature()))
    expect(other.status).toBe(402)
    expect(((await other.json()) as any).error.reason).toBe('PAYMENT_REQUIRED')

    const retry = await fetch(`${pind.url}/pins`, pin(cid, signature()))
    const body = await retry.json() as any
    expect(retry.status, JSON.stringify(body.error)).toBe(202)
    expect(body).toMatchObject({ pin: { cid } })
    const again = await fetch(`${pind.url}/pins`, pin(cid, signature()))
    expect(again.status).toBe(202)
    expect(((await again.json()) as any).requestid).toBe(body.requestid)
    expect(await openNotes(pind.dataDir, signature())).toEqual([])
  })

  it('POST /pins/{requestid} (replace): settled on chain, the retry gets the replacement (202), the old pin is gone', async () => {
    const { pay, signature } = recordingPayer(chain, chain.payers[0]!.privateKey)
    const pin = (c: string, headers: Record<string, string> = {}): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-pin-size': '1000', ...headers },
      body: JSON.stringify({ cid: c })
    })
    const first = await recordingPayer(chain, chain.payers[0]!.privateKey).pay(`${pind.url}/pins`, pin(rawCid(randomBytes(64)).toString()))
    const old = await first.json() as any
    expect(first.status, JSON.stringify(old.error)).toBe(202)
    const auth = { authorization: `Bearer ${first.headers.get('x-wallet-auth-token') as string}` }
    const next = rawCid(randomBytes(64)).toString()
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'after'
    await expectUncertain(await pay(`${pind.url}/pins/${old.requestid as string}`, pin(next, auth)))
    const charged = (await usdcBalance(chain, chain.payTo)) - before
    expect(charged).toBeGreaterThan(0n)
    expect(await openNotes(pind.dataDir, signature())).toHaveLength(1)

    const retry = await fetch(`${pind.url}/pins/${old.requestid as string}`, pin(next, { ...auth, 'payment-signature': signature() }))
    const body = await retry.json() as any
    expect(retry.status, JSON.stringify(body.error)).toBe(202)
    expect(body.pin.cid).toBe(next)
    expect(body.requestid).not.toBe(old.requestid)
    expect((await fetch(`${pind.url}/pins/${old.requestid as string}`, { headers: auth })).status).toBe(404)
    // a second retry is the same replay
    const again = await fetch(`${pind.url}/pins/${old.requestid as string}`, pin(next, { ...auth, 'payment-signature': signature() }))
    expect(again.status).toBe(202)
    expect(((await again.json()) as any).requestid).toBe(body.requestid)
    expect(await openNotes(pind.dataDir, signature())).toEqual([])
    // to anything but that retry, the replaced pin is gone (404), and this payment is used up (402)
    expect((await fetch(`${pind.url}/pins/${old.requestid as string}`, pin(next, auth))).status).toBe(404)
    const otherCid = await fetch(`${pind.url}/pins/${old.requestid as string}`, pin(rawCid(randomBytes(64)).toString(), { ...auth, 'payment-signature': signature() }))
    expect(otherCid.status).toBe(402)
    expect(((await otherCid.json()) as any).error.reason).toBe('PAYMENT_REQUIRED')
    // charged once: the retries moved no more money
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(charged)
  })

  it('POST /pins/{requestid}/renew: settled on chain, the retry gets the renewed pin (200)', async () => {
    const { pay } = recordingPayer(chain, chain.payers[0]!.privateKey)
    const up = await pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(10_000)) })
    const made = await up.json() as any
    expect(up.status, JSON.stringify(made.error)).toBe(201)
    const auth = { authorization: `Bearer ${up.headers.get('x-wallet-auth-token') as string}`, 'x-pin-duration-months': '2' }
    const challenge = await fetch(`${pind.url}/pins/${made.requestid as string}/renew`, { method: 'POST', headers: auth })
    const signature = await signChallenge(chain, chain.payers[0]!.privateKey, challenge)
    failSettle = 'after'
    await expectUncertain(await fetch(`${pind.url}/pins/${made.requestid as string}/renew`, { method: 'POST', headers: { ...auth, 'payment-signature': signature } }))

    const retry = await fetch(`${pind.url}/pins/${made.requestid as string}/renew`, { method: 'POST', headers: { ...auth, 'payment-signature': signature } })
    const body = await retry.json() as any
    expect(retry.status, JSON.stringify(body.error)).toBe(200)
    expect(body.info.months).toBe('3')
    expect(Date.parse(body.info.pinned_until)).toBeGreaterThan(Date.parse(made.pinned_until))
    expect(await openNotes(pind.dataDir, signature)).toEqual([])
  })

  it('a chain that cannot be read (no --rpc-url) answers the retry 503 with Retry-After, and keeps the note', async () => {
    blind = await startPind({ args: ['--asset', chain.usdc, '--pay-to', chain.payTo, '--facilitator-url', standIn.url, '--pin-probe-timeout', '0'] })
    const cid = rawCid(randomBytes(64)).toString()
    const { pay, signature } = recordingPayer(chain, chain.payers[0]!.privateKey)
    const pin = { method: 'POST', headers: { 'content-type': 'application/json', 'x-pin-size': '1000' }, body: JSON.stringify({ cid }) }
    failSettle = 'after'
    await expectUncertain(await pay(`${blind.url}/pins`, pin))
    const retry = await fetch(`${blind.url}/pins`, { ...pin, headers: { ...pin.headers, 'payment-signature': signature() } })
    const body = await retry.json() as any
    expect(retry.status, JSON.stringify(body.error)).toBe(503)
    expect(retry.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(body.error).toMatchObject({ reason: 'SERVICE_UNAVAILABLE', details: expect.any(String) })
    await blind.stop()
    expect(await openNotes(blind.dataDir, signature())).toHaveLength(1)
    blind = undefined
  })
})
