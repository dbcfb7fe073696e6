/**
 * A second network whose chain is not up when serve starts (docs/networks.md):
 * the first network takes payments at once; the 402 lists only it and /ready
 * names the other as not working. Once that chain answers (anvil started on
 * the port its entry names) the network starts in the background, the 402s
 * list both (the cached challenges rebuilt) and a payment on it settles there.
 */
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, uploadChallenge, uploadForm } from '../helpers/paying-client.js'
import { BINARY, startPind, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'

let taiko: DevChain
let base: DevChain | undefined
let pind: PindProcess
let basePort: number

const networksOf = async (): Promise<string[]> => {
  const r = await uploadChallenge(pind.url, 1000)
  expect(r.status).toBe(402)
  return decodePaymentRequiredHeader(r.headers.get('payment-required') as string).accepts.map(a => a.network)
}

beforeAll(async () => {
  taiko = await startDevChain({ payers: 1 })
  basePort = await freePort()
  const a = chainArgs(taiko)
  pind = await startPind({
    binary: BINARY,
    args: a.args,
    env: {
      ...a.env,
      PIND_BASE_KEY: taiko.settlerKey,
      // the dev chain's token lands at the same address on every chain (the deployer's first contract)
      PIND_NETWORKS: JSON.stringify([{ network: 'eip155:8453', asset: taiko.usdc, payTo: taiko.payTo, rpcUrl: `http://127.0.0.1:${basePort}`, settlerKeyEnv: 'PIND_BASE_KEY' }])
    }
  })
})
afterAll(async () => {
  await pind?.stop('SIGKILL')
  await Promise.all([taiko?.stop(), base?.stop()])
})

describe('a network whose chain is down at start', () => {
  it('is left out of the 402 and named by /ready until its chain answers; then it is offered and paid on', async () => {
    const r = await (await fetch(`${pind.url}/ready`)).json() as any
    expect(r.status).toBe('ready')
    expect(r.checks.payments).toMatchObject({ ok: true, state: 'degraded', networks: { 'eip155:167000': { ok: true }, 'eip155:8453': { ok: false, state: 'unreachable' } } })
    expect(await networksOf()).toEqual(['eip155:167000'])
    // the first network works meanwhile
    const onTaiko = await payingFetch(taiko, taiko.payers[0]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(1000)) })
    expect(onTaiko.status, await onTaiko.clone().text()).toBe(201)

    base = await startDevChain({ payers: 1, chainId: 8453, port: basePort })
    expect(base.usdc).toBe(taiko.usdc)
    await waitFor(async () => (await networksOf()).length === 2 ? true : undefined, 'the 402 to offer both networks', 90_000)
    expect(await networksOf()).toEqual(['eip155:167000', 'eip155:8453'])
    const ready = await (await fetch(`${pind.url}/ready`)).json() as any
    expect(ready.checks.payments).toMatchObject({ ok: true, state: 'ready' })

    const payer = base.payers[0]!
    const before = await usdcBalance(base, payer.address)
    const onBase = await payingFetch(base, payer.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(1000)) })
    expect(onBase.status, await onBase.clone().text()).toBe(201)
    expect((await onBase.json() as any).price.network).toBe('eip155:8453')
    expect(await usdcBalance(base, payer.address)).toBe(before - 1000n)
  })
})
