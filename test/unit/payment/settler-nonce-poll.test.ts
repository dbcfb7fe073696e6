/**
 * The settler's receipt poll, on a real anvil that mines each transaction as
 * it arrives (or a moment later): a transaction just sent is looked for at
 * once and again shortly after, not a whole poll interval later. With a 60 s
 * interval, a receipt that waited for the interval would miss the test's
 * deadline by far.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../../scripts/devchain/index.mjs'
import { settlerClientFor } from '../../../src/payment/chain.js'
import { SettlerNonces } from '../../../src/payment/settler-nonce.js'

const APPROVE = [{ type: 'function', name: 'approve', stateMutability: 'nonpayable', inputs: [{ name: 'spender', type: 'address' }, { name: 'value', type: 'uint256' }], outputs: [{ name: '', type: 'bool' }] }] as const

let chain: DevChain

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
})

afterAll(async () => {
  await chain?.stop()
})

describe('SettlerNonces receipt poll', () => {
  it('finds the receipt of a transaction a chain mined as it arrived without waiting for the poll interval', async () => {
    const nonces = new SettlerNonces({ wallet: settlerClientFor('eip155:167000', chain.rpcUrl, chain.settlerKey as `0x${string}`), stuckAfterMs: 600_000, pollMs: 60_000 })
    try {
      for (let i = 0; i < 3; i++) {
        const t0 = performance.now()
        const hash = await nonces.writeContract({ address: chain.usdc as `0x${string}`, abi: APPROVE, functionName: 'approve', args: [chain.payTo, BigInt(i + 1)] })
        const receipt = await nonces.waitForTransactionReceipt({ hash, timeout: 20_000 })
        expect(receipt.status).toBe('success')
        expect(receipt.transactionHash).toBe(hash)
        // far below the 60 s interval, with room for a loaded machine
        expect(performance.now() - t0).toBeLessThan(10_000)
      }
    } finally {
      nonces.stop()
    }
  }, 60_000)

  it('finds it when the chain mines a moment after the send (the first poll misses it)', async () => {
    const rpc = async (method: string, params: unknown[] = []): Promise<void> => {
      const r = await fetch(chain.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
      const body = await r.json() as { error?: unknown }
      if (body.error != null) throw new Error(`${method}: ${JSON.stringify(body.error)}`)
    }
    const nonces = new SettlerNonces({ wallet: settlerClientFor('eip155:167000', chain.rpcUrl, chain.settlerKey as `0x${string}`), stuckAfterMs: 600_000, pollMs: 60_000 })
    await rpc('evm_setAutomine', [false])
    try {
      const hash = await nonces.writeContract({ address: chain.usdc as `0x${string}`, abi: APPROVE, functionName: 'approve', args: [chain.payTo, 7n] })
      const t0 = performance.now()
      const receipt = nonces.waitForTransactionReceipt({ hash, timeout: 20_000 })
      // mined after the settler's first look, which found nothing
      await new Promise(resolve => setTimeout(resolve, 300))
      await rpc('evm_mine')
      expect((await receipt).transactionHash).toBe(hash)
      expect(performance.now() - t0).toBeLessThan(10_000)
    } finally {
      nonces.stop()
      await rpc('evm_setAutomine', [true])
    }
  }, 60_000)
})
