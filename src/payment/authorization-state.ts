/**
 * EIP-3009 facts for reconciling settlement notes: has an authorization
 * (authorizer, nonce) been used on chain, what time the chain is at, and the
 * validBefore of a verified payment. Reads only, through a public client.
 */
import { parseAbi, parseAbiItem } from 'viem'
import { chainIdOf, publicClientFor } from './chain.js'
import type { VerifiedPayment } from './gate.js'

const ABI = parseAbi(['function authorizationState(address authorizer, bytes32 nonce) view returns (bool)'])
const AUTHORIZATION_USED = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)')
/** blocks per getLogs call (within what public RPCs allow) and how far back the search goes */
const LOG_WINDOW = 5000n
const LOG_LOOKBACK = 100_000n

export interface AuthorizationStateReader {
  /** the CAIP-2 network it reads (notes of other networks are not read through it) */
  readonly network?: string
  /** the timestamp of the chain's latest block, unix seconds (fails on another chain than the configured one) */
  chainTime(): Promise<bigint>
  /**
   * EIP-3009 authorizationState at the latest block: true once the
   * authorization was used (the transfer happened) or cancelled by its signer.
   */
  isUsed(authorizer: `0x${string}`, nonce: `0x${string}`): Promise<boolean>
  /**
   * The transaction that used the authorization (its AuthorizationUsed
   * event), searched from the latest block back over LOG_LOOKBACK blocks;
   * undefined when not found there.
   */
  usedIn(authorizer: `0x${string}`, nonce: `0x${string}`): Promise<`0x${string}` | undefined>
}

export interface AuthorizationStateSettings {
  network: string
  rpcUrl: string
  asset: `0x${string}`
}

export function authorizationStateReader (s: AuthorizationStateSettings, timeoutMs = 5000): AuthorizationStateReader {
  const client = publicClientFor(s.network, s.rpcUrl, timeoutMs)
  return {
    network: s.network,
    chainTime: async () => await rpc(async () => {
      // a wrong chain would answer "unused" for any nonce: notes must never be dropped on its word
      const [id, block] = await Promise.all([client.getChainId(), client.getBlock({ blockTag: 'latest' })])
      if (id !== chainIdOf(s.network)) throw new Error(`the RPC serves chain ${id}, not ${s.network}`)
      return block.timestamp
    }),
    isUsed: async (authorizer, nonce) => await rpc(async () =>
      await client.readContract({ address: s.asset, abi: ABI, functionName: 'authorizationState', args: [authorizer, nonce] })),
    usedIn: async (authorizer, nonce) => await rpc(async () => {
      const latest = await client.getBlockNumber({ cacheTime: 0 }) // viem caches it for seconds otherwise
      const oldest = latest > LOG_LOOKBACK ? latest - LOG_LOOKBACK : 0n
      for (let to = latest; to >= oldest; to -= LOG_WINDOW) {
        const from = to - LOG_WINDOW + 1n > oldest ? to - LOG_WINDOW + 1n : oldest
        const logs = await client.getLogs({ address: s.asset, event: AUTHORIZATION_USED, args: { authorizer, nonce }, fromBlock: from, toBlock: to })
        if (logs.length > 0) return logs[0]?.transactionHash ?? undefined
        if (from === oldest) break
      }
      return undefined
    })
  }
}

/** The RPC's failure in one line (viem's messages run over many, and may repeat the RPC URL). */
async function rpc<T> (call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (err) {
    throw new Error(`the chain could not be read: ${((err as { shortMessage?: string }).shortMessage ?? (err as Error).message).split('\n')[0] ?? ''}`)
  }
}

/** validBefore (unix seconds, decimal) of a verified payment's EIP-3009 authorization. */
export function validBeforeOf (payment: VerifiedPayment): string | undefined {
  const auth = (payment.payload.payload as { authorization?: { validBefore?: unknown } } | undefined)?.authorization
  const v = auth?.validBefore
  return typeof v === 'string' && /^\d{1,78}$/.test(v) ? v : undefined
}
