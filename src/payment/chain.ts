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

export function publicClientFor (network: string, rpcUrl: string, timeoutMs = 10_000) {
  return createPublicClient({ chain: chainFor(network, rpcUrl), transport: http(rpcUrl, { timeout: timeoutMs, retryCount: 0 }), pollingInterval: 100 })
}

/** A wallet client for the settler; viem's nonce manager keeps parallel settles from colliding. */
export function settlerClientFor (network: string, rpcUrl: string, settlerKey: `0x${string}`) {
  const account = privateKeyToAccount(settlerKey, { nonceManager })
  return createWalletClient({ account, chain: chainFor(network, rpcUrl), transport: http(rpcUrl, { timeout: 30_000 }), pollingInterval: 100 })
    .extend(publicActions)
}
