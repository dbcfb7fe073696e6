/**
 * A settlement note of a payment on the second network (docs/networks.md): a
 * serve (the packaged binary) accepting Taiko (flags, embedded facilitator)
 * and Base (PIND_NETWORKS, a facilitator stand-in on the Base chain) is killed
 * right after a pin's payment settled on Base. The note records the network;
 * the next start reads it on Base's chain (not Taiko's, where the authorization
 * was never used) and records the pin it bought, paid on Base.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid } from '../../scripts/peer/index.mjs'
import { startFacilitatorStandIn, type StandIn } from '../helpers/facilitator-standin.js'
import { chainArgs, payingFetch } from '../helpers/paying-client.js'
import { BINARY, runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

let taiko: DevChain
let base: DevChain
let standIn: StandIn
let afterSettle: (() => Promise<void>) | undefined
let pind: PindProcess | undefined
const dataDir = tempDir()

async function serve (): Promise<PindProcess> {
  const a = chainArgs(taiko)
  pind = await startPind({
    binary: BINARY,
    dataDir,
    args: [...a.args, '--pin-probe-timeout', '0'],
    env: { ...a.env, PIND_NETWORKS: JSON.stringify([{ network: 'eip155:8453', asset: base.usdc, payTo: base.payTo, rpcUrl: base.rpcUrl, facilitatorUrl: standIn.url }]) }
  })
  return pind
}

async function exported (): Promise<Array<Record<string, unknown>>> {
  const r = await runPind(['export-ledger', '--data-dir', dataDir], { binary: BINARY })
  if (r.code !== 0) throw new Error(`export-ledger exited ${String(r.code)}: ${r.err}`)
  return r.out.split('\n').filter(l => l !== '').map(l => JSON.parse(l) as Record<string, unknown>)
}

beforeAll(async () => {
  ;[taiko, base] = await Promise.all([startDevChain({ payers: 1 }), startDevChain({ payers: 1, chainId: 8453 })])
  standIn = await startFacilitatorStandIn(base, 0, { afterSettle: async () => { await afterSettle?.() } })
})
afterAll(async () => {
  await pind?.stop('SIGKILL')
  await standIn?.close()
  await Promise.all([taiko?.stop(), base?.stop()])
})

describe('settlement notes on the second network', () => {
  it('a serve killed after a Base payment settled leaves a note naming Base; the next start reads it on Base and records the pin', async () => {
    const first = await serve()
    const payer = base.payers[0]!
    const before = await usdcBalance(base, payer.address)
    afterSettle = async () => { await first.stop('SIGKILL') }
    const cid = rawCid(randomBytes(64)).toString()
    const r = await payingFetch(base, payer.privateKey)(`${first.url}/pins`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-pin-size': '1000' }, body: JSON.stringify({ cid })
    }).catch((err: Error) => err)
    afterSettle = undefined
    expect(r).toBeInstanceOf(Error) // the server died before it answered
    // the money moved on Base
    expect(await usdcBalance(base, payer.address)).toBe(before - 1000n)

    const listed = await runPind(['settlements', 'list', '--json', '--data-dir', dataDir], { binary: BINARY })
    expect(listed.code, listed.err).toBe(0)
    expect(JSON.parse(listed.out).notes).toEqual([expect.objectContaining({ network: 'eip155:8453', state: 'unchecked' })])

    await serve()
    // reconciliation's first pass at start: Base's reconciler finds the authorization used and records the pin
    const pin = await waitFor(async () => {
      const lines = await exported()
      return lines.find(l => l.type === 'pin' && l.cid === cid)
    }, 'the pin recorded by reconciliation', 60_000)
    expect(pin).toMatchObject({ network: 'eip155:8453', asset: base.usdc, payer: payer.address.toLowerCase(), amount: '1000' })
    const lines = await exported()
    expect(lines.filter(l => l.type === 'payment')).toEqual([expect.objectContaining({ network: 'eip155:8453', amount: '1000' })])
    const after = await runPind(['settlements', 'list', '--json', '--data-dir', dataDir], { binary: BINARY })
    expect(JSON.parse(after.out).notes).toEqual([])
    // charged once, on Base only
    expect(await usdcBalance(base, payer.address)).toBe(before - 1000n)
  })
})
