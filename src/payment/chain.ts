/**
 * viem clients for the payment network (JSON-RPC). Receipts are polled fast:
 * viem's default 4 s polling would dominate settle time.
 */
import { createPublicClient, createWalletClient, defineChain, http, nonceManager, publicActions, type Chain } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

export function chainIdOf (network: string): number {
  const m = /^eip155:(\d+)$/.exec(network)
  if (m == null) throw new Error(`not an EVM network id: ${network}`)
  return Number(m[1])
}

export function chainFor (network: string, rpcUrl: string): Chain {
  const id = chainIdOf(network)
  return defineChain({
    id,
    name: id === 167000 ? 'Taiko Alethia' : `eip155:${id}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } }
  })
}

export function publicClientFor (network: string, rpcUrl: string, timeoutMs = 10_000, retryCount = 0) {
  return createPublicClient({ chain: chainFor(network, rpcUrl), transport: http(rpcUrl, { timeout: timeoutMs, retryCount }), pollingInterval: 100 })
}

/**
 * The embedded facilitator's reads while it verifies a payment (the token's
 * state, the simulated transfer, the payer's code): each RPC call gets
 * READ_TIMEOUT_MS and one retry, so that a hung RPC fails a verification
 * within the request's verify deadline (gate.ts VERIFY_DEADLINE_MS) rather
 * than holding it for viem's defaults (10 s per call, 3 retries).
 */
export const READ_TIMEOUT_MS = 4000
export const READ_RETRIES = 1

export function verifierClientFor (network: string, rpcUrl: string) {
  return publicClientFor(network, rpcUrl, READ_TIMEOUT_MS, READ_RETRIES)
}

/** A wallet client for the settler; viem's nonce manager keeps parallel settles from colliding. */
export function settlerClientFor (network: string, rpcUrl: string, settlerKey: `0x${string}`) {
  const account = privateKeyToAccount(settlerKey, { nonceManager })
  return createWalletClient({ account, chain: chainFor(network, rpcUrl), transport: http(rpcUrl, { timeout: 30_000 }), pollingInterval: 100 })
    .extend(publicActions)
}
