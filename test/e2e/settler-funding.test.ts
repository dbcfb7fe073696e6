/**
 * Payments that cannot work are visible, not 402s (issue 15, item 2), on the
 * real local chain: an embedded facilitator whose settler holds no ETH logs
 * its address and balance, is alive but not ready (/ready names the state),
 * and answers paid writes 503 + Retry-After before any payment is used; once
 * funded it takes payments. A settle that fails on this side (the settler
 * drained after the check) answers 503, not 402, and the payer keeps the
 * money; metrics show the balance and the failures by reason.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { payingFetch, signChallenge, uploadChallenge, uploadForm } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'

let chain: DevChain
let pind: PindProcess
let metricsUrl: string
/** a settler with no ETH: a payer key (those hold USDC only) */
let settler: { privateKey: `0x${string}`, address: `0x${string}` }

async function rpc (method: string, params: unknown[]): Promise<unknown> {
  const r = await fetch(chain.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
  const body = await r.json() as { result?: unknown, error?: unknown }
  if (body.error != null) throw new Error(JSON.stringify(body.error))
  return body.result
}
const setBalance = async (wei: bigint): Promise<void> => { await rpc('anvil_setBalance', [settler.address, `0x${wei.toString(16)}`]) }
const metric = async (name: string): Promise<string[]> => (await (await fetch(metricsUrl)).text()).split('\n').filter(l => l.startsWith(name))

beforeAll(async () => {
  chain = await startDevChain({ payers: 3 })
  settler = chain.payers[2] as typeof settler
  const port = await freePort()
  metricsUrl = `http://127.0.0.1:${port}/metrics`
  pind = await startPind({
    args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--metrics-listen', `127.0.0.1:${port}`],
    env: { PIND_SETTLER_KEY: settler.privateKey }
  })
})
afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

describe('a settler that cannot pay gas', () => {
  it('is logged with its address and balance at start, and shown in the start-up summary', () => {
    expect(pind.stdout()).toMatch(new RegExp(`settler:\\s+${settler.address} \\(0 wei\\)`))
    expect(pind.stdout()).toMatch(/payments:\s+unfunded/)
    const line = pind.stderr().split('\n').find(l => l.includes('the settler cannot pay gas'))
    expect(line).toBeDefined()
    expect(JSON.parse(line as string)).toMatchObject({ level: 'error', settler: settler.address, balanceWei: '0' })
  })

  it('leaves the service alive (/health 200) but not ready (/ready 503, payments: unfunded)', async () => {
    expect((await fetch(`${pind.url}/health`)).status).toBe(200)
    const r = await fetch(`${pind.url}/ready`)
    expect(r.status).toBe(503)
    expect((await r.json() as any).checks.payments).toMatchObject({ ok: false, state: 'unfunded', error: expect.stringMatching(/cannot pay gas/) })
    expect(await metric('pind_settler_balance_wei')).toContain('pind_settler_balance_wei 0')
  })

  it('answers paid writes 503 with Retry-After before any payment is used, and the payer keeps the money', async () => {
    const unpaid = await uploadChallenge(pind.url, 1000)
    expect(unpaid.status).toBe(503)
    expect(unpaid.headers.get('retry-after')).toMatch(/^\d+$/)
    expect((await unpaid.json() as any).error.details).toMatch(/cannot pay gas/)
    const payer = chain.payers[0]!
    const before = await usdcBalance(chain, payer.address)
    const paid = await payingFetch(chain, payer.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(2000)) })
    expect(paid.status).toBe(503)
    expect(await usdcBalance(chain, payer.address)).toBe(before)
  })

  it('takes payments once funded (seen within seconds, not at the next periodic read)', async () => {
    await setBalance(10n ** 18n)
    const challenge = await waitFor(async () => {
      const r = await uploadChallenge(pind.url, 1000)
      return r.status === 402 ? r : undefined
    }, 'payments after funding', 20_000)
    expect(challenge.status).toBe(402)
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(3000)) })
    expect(r.status, await r.clone().text()).toBe(201)
    const ready = await fetch(`${pind.url}/ready`)
    expect(ready.status).toBe(200)
    expect((await ready.json() as any).checks.payments).toMatchObject({ ok: true, state: 'ready' })
    expect(pind.stderr()).toMatch(/"msg":"the settler is funded again"/)
  })

  it('a settlement that fails on this side answers 503 (not 402), keeps the payer\'s money, and is counted by reason', async () => {
    // the balance was read as funded; drain it now: the next settle cannot pay its gas
    await setBalance(0n)
    const payer = chain.payers[1]!
    const before = await usdcBalance(chain, payer.address)
    const challenge = await uploadChallenge(pind.url, 4000)
    expect(challenge.status).toBe(402)
    const signature = await signChallenge(chain, payer.privateKey, challenge)
    const form = uploadForm(randomBytes(4000))
    const r = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'payment-signature': signature, 'x-upload-size': '4000' }, body: form })
    expect(r.status, await r.clone().text()).toBe(503)
    expect(r.headers.get('retry-after')).toMatch(/^\d+$/)
    expect((await r.json() as any).error.details).toMatch(/a problem on its side, not the payment's/)
    expect(await usdcBalance(chain, payer.address)).toBe(before)
    expect((await metric('pind_settles_failed_total')).some(l => /reason="server:[^"]+"\} 1/.test(l))).toBe(true)
    expect(await metric('pind_settles_pending')).toContain('pind_settles_pending 0')
    // and the failure made it read the balance again: the next write is turned away before payment
    await waitFor(async () => (await uploadChallenge(pind.url, 1000)).status === 503 ? true : undefined, 'unfunded again')
    // the same signed payment goes through once the settler is funded
    await setBalance(10n ** 18n)
    await waitFor(async () => (await uploadChallenge(pind.url, 1000)).status === 402 ? true : undefined, 'funded again')
    const again = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'payment-signature': signature, 'x-upload-size': '4000' }, body: form })
    expect(again.status, await again.clone().text()).toBe(201)
    expect(await usdcBalance(chain, payer.address)).toBeLessThan(before)
  })
})
