/**
 * A paid write whose payment cannot be verified in time: a remote
 * facilitator whose /verify never answers, and an embedded facilitator whose
 * RPC stops answering (a pass-through in front of anvil that holds every
 * request). The request answers 503 with Retry-After in the error shape
 * within about the verify deadline (10 s; asserted with a generous bound),
 * its upload slot is free again (one slot only), and the payment was not
 * used: once the facilitator or RPC answers again, the same payment uploads.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { startFacilitatorStandIn, type StandIn } from '../helpers/facilitator-standin.js'
import { recordingPayer, uploadForm } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { startRpcProxy, type RpcProxy } from '../helpers/rpc-proxy.js'

/** far above the 10 s deadline, far below what the request waited without one (90 s and more) */
const GENEROUS_MS = 40_000

let chain: DevChain
let standIn: StandIn
let proxy: RpcProxy
let remote: PindProcess
let embedded: PindProcess
/** while set, the stand-in's /verify waits for it */
let verifyHeld: Promise<void> | undefined
let releaseVerify = (): void => {}

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  standIn = await startFacilitatorStandIn(chain, 0, { beforeVerify: async () => { await verifyHeld } })
  proxy = await startRpcProxy(chain.rpcUrl)
  const common = ['--asset', chain.usdc, '--pay-to', chain.payTo, '--upload-concurrency', '1']
  remote = await startPind({ args: [...common, '--rpc-url', chain.rpcUrl, '--facilitator-url', standIn.url] })
  embedded = await startPind({ args: [...common, '--rpc-url', proxy.url], env: { PIND_SETTLER_KEY: chain.settlerKey } })
})

afterAll(async () => {
  releaseVerify()
  proxy?.hang(false)
  await remote?.stop()
  await embedded?.stop()
  await standIn?.close()
  await proxy?.close()
  await chain?.stop()
})

/** uploads with a verifier that does not answer (stall .. resume), then again with the same payment */
async function stalledThenRetried (url: string, stall: () => void, resume: () => void): Promise<void> {
  const bytes = randomBytes(50_000)
  const { pay, signature } = recordingPayer(chain, chain.payers[0]!.privateKey)
  const before = await usdcBalance(chain, chain.payTo)
  stall()
  const t0 = Date.now()
  const r = await pay(`${url}/upload`, { method: 'POST', body: uploadForm(bytes) })
  const elapsed = Date.now() - t0
  const body = await r.json() as any
  resume()
  expect(r.status, JSON.stringify(body.error)).toBe(503)
  expect(r.headers.get('retry-after')).toMatch(/^[1-9]\d*$/)
  expect(Object.keys(body)).toEqual(['error'])
  expect(body.error).toMatchObject({ reason: 'SERVICE_UNAVAILABLE', details: expect.stringMatching(/verif/) })
  expect(elapsed).toBeLessThan(GENEROUS_MS)
  expect(await usdcBalance(chain, chain.payTo)).toBe(before)

  // the payment was not used and the only upload slot is free: the same payment uploads now
  const retry = await fetch(`${url}/upload`, { method: 'POST', headers: { 'payment-signature': signature() }, body: uploadForm(bytes) })
  const done = await retry.json() as any
  expect(retry.status, JSON.stringify(done.error)).toBe(201)
  expect((await usdcBalance(chain, chain.payTo)) - before).toBe(BigInt(done.price.amount))
}

describe('a payment verification that does not finish', () => {
  it('remote facilitator whose /verify hangs: 503 with Retry-After within about the deadline; the same payment later uploads (201)', async () => {
    await stalledThenRetried(remote.url, () => {
      verifyHeld = new Promise<void>(resolve => { releaseVerify = resolve })
    }, () => {
      verifyHeld = undefined
      releaseVerify()
    })
  }, 150_000)

  it('embedded facilitator whose RPC stops answering: 503 with Retry-After within about the deadline; the same payment later uploads (201)', async () => {
    await stalledThenRetried(embedded.url, () => { proxy.hang(true) }, () => { proxy.hang(false) })
  }, 150_000)
})
