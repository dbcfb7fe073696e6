/**
 * A settlement that does not finish in time (--settle-timeout): the remote
 * facilitator stand-in holds its settle call. The paid upload answers 503
 * with Retry-After within about the deadline (asserted with a generous
 * bound), its settlement note stays, and its upload slot is free again (one
 * slot: a second paid upload gets as far as its own settlement). When the
 * held settlements then go through on chain, the retry with each payment
 * gets the pin it bought (200, replayed), charged once.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { identifyPayment } from '../../src/payment/gate.js'
import { startFacilitatorStandIn, type StandIn } from '../helpers/facilitator-standin.js'
import { recordingPayer, uploadForm } from '../helpers/paying-client.js'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

/** far above the 2 s deadline set here, far below what the request waited without one */
const GENEROUS_MS = 20_000

let chain: DevChain
let standIn: StandIn
let pind: PindProcess
/** while set, the stand-in's /settle waits for it */
let settleHeld: Promise<void> | undefined
let releaseSettle = (): void => {}

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  standIn = await startFacilitatorStandIn(chain, 0, { beforeSettle: async () => { await settleHeld } })
  pind = await startPind({ args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--facilitator-url', standIn.url, '--upload-concurrency', '1', '--settle-timeout', '2'] })
})

afterAll(async () => {
  releaseSettle()
  await pind?.stop()
  await standIn?.close()
  await chain?.stop()
})

describe('a settlement past --settle-timeout', () => {
  it('answers 503 with Retry-After, keeps the note, and the retry gets the pin once the settlement lands', async () => {
    const bytes = randomBytes(80_000)
    const { pay, signature } = recordingPayer(chain, chain.payers[0]!.privateKey)
    const before = await usdcBalance(chain, chain.payTo)
    settleHeld = new Promise<void>(resolve => { releaseSettle = resolve })
    const t0 = Date.now()
    const r = await pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes, 'slow.bin') })
    const elapsed = Date.now() - t0
    const body = await r.json() as any
    expect(r.status, JSON.stringify(body.error)).toBe(503)
    expect(r.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(body.error).toMatchObject({ reason: 'SERVICE_UNAVAILABLE', details: expect.any(String) })
    expect(elapsed).toBeLessThan(GENEROUS_MS)
    // the note stays (the money may move yet)
    const notes = await runPind(['settlements', 'list', '--json', '--data-dir', pind.dataDir])
    expect(notes.code, notes.err).toBe(0)
    expect(JSON.parse(notes.out).notes.map((n: { paymentId: string }) => n.paymentId)).toContain(identifyPayment(signature())?.id)
    // the one upload slot is free again: another paid upload gets as far as its own settlement
    const second = recordingPayer(chain, chain.payers[0]!.privateKey)
    const other = randomBytes(20_000)
    const r2 = await second.pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(other, 'second.bin') })
    const body2 = await r2.json() as any
    expect(r2.status, JSON.stringify(body2.error)).toBe(503)
    expect(body2.error.details).toMatch(/could not settle/)

    // the held settlements go through on chain; each retry with its payment gets its pin
    releaseSettle()
    settleHeld = undefined
    const moved = async (): Promise<bigint> => (await usdcBalance(chain, chain.payTo)) - before
    let charged = 0n
    for (const [sign, data, name] of [[signature, bytes, 'slow.bin'], [second.signature, other, 'second.bin']] as const) {
      await waitFor(async () => (await moved()) > charged ? true : undefined, 'the held settlement on chain', 20_000)
      const retry = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'payment-signature': sign() }, body: uploadForm(data, name) })
      const got = await retry.json() as any
      expect(retry.status, JSON.stringify(got.error)).toBe(200)
      expect(got).toMatchObject({ replayed: true, status: 'pinned', size: data.length })
      expect(Buffer.from(await (await fetch(`${pind.url}/ipfs/${got.cid as string}`)).arrayBuffer()).equals(data)).toBe(true)
      charged += BigInt(got.price.amount)
    }
    // charged once each
    expect(await moved()).toBe(charged)
  })
})
