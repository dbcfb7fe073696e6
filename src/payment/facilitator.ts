/**
 * The facilitator that verifies and settles payments: embedded (pind submits
 * transferWithAuthorization itself with the settler key, paying the gas) or
 * remote (an x402 facilitator URL).
 */
import { x402Facilitator } from '@x402/core/facilitator'
import { HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server'
import { toFacilitatorEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import type { Logger } from '../kernel/log.js'
import { READ_TIMEOUT_MS, settlerClientFor, verifierClientFor } from './chain.js'
import { CodeCache } from './code-cache.js'
import { SettlerNonces } from './settler-nonce.js'

export type FacilitatorChoice =
  /** asset: the token payments are in (its code is read once, see `warm`) */
  | { kind: 'embedded', network: string, rpcUrl: string, settlerKey: `0x${string}`, asset?: `0x${string}` }
  | { kind: 'remote', url: string }

export interface BuiltFacilitator {
  client: FacilitatorClient
  /** the settler's address (embedded only) */
  settler?: `0x${string}`
  /** reads what verifications need once, before any (embedded: the asset's code); throws while the RPC does not answer */
  warm?: () => Promise<void>
  /** the settler's transactions (embedded only): stuck nonces re-sent, counted in `recoveries` */
  nonces?: SettlerNonces
}

export interface FacilitatorOptions {
  log?: Logger
  /** embedded: a settlement transaction whose nonce is not mined for this long is re-sent (settler-nonce.ts; default 15 s) */
  stuckAfterMs?: number
}

export function buildFacilitator (choice: FacilitatorChoice, opts: FacilitatorOptions = {}): BuiltFacilitator {
  if (choice.kind === 'remote') {
    // a verification (and the list of what it supports) is cut off well before the request's verify
    // deadline, its connection closed; a settlement keeps x402's 90 s (it waits for the chain)
    const quick = new HTTPFacilitatorClient({ url: choice.url, timeoutMs: 2 * READ_TIMEOUT_MS })
    const settler = new HTTPFacilitatorClient({ url: choice.url })
    return {
      client: {
        verify: async (payload, requirements) => await quick.verify(payload, requirements),
        settle: async (payload, requirements) => await settler.settle(payload, requirements),
        getSupported: async () => await quick.getSupported()
      }
    }
  }
  const wallet = settlerClientFor(choice.network, choice.rpcUrl, choice.settlerKey)
  // reads with a deliberate timeout and one retry (chain.ts); writes and receipts go through the wallet
  const reader = verifierClientFor(choice.network, choice.rpcUrl)
  const address = wallet.account.address
  // @x402/evm reads the asset's code at every verification without a cache of failures, and leaves
  // that read unawaited when the verification ends early (a bad signature, another read that failed):
  // a failed unawaited read is an unhandled rejection, which ends the process. The token's code does
  // not change: read once (warm, before payments are taken) and answered from memory from then on.
  const asset = choice.asset?.toLowerCase()
  let assetCode: `0x${string}` | undefined
  // a payer's code is asked four times per payment, one read after the other: kept briefly (code-cache.ts)
  const payers = new CodeCache(async (args) => await reader.getCode(args))
  const getCode = async (args: { address: `0x${string}` }): Promise<`0x${string}` | undefined> => {
    if (asset == null || args.address.toLowerCase() !== asset) return await payers.getCode(args)
    if (assetCode == null) {
      const code = await reader.getCode(args)
      if (code != null && code !== '0x') assetCode = code
      return code
    }
    return assetCode
  }
  // settlement transactions: sent and awaited by one keeper that re-sends a stuck nonce
  const nonces = new SettlerNonces({ wallet, log: opts.log, stuckAfterMs: opts.stuckAfterMs ?? 15_000 })
  const signer = toFacilitatorEvmSigner({
    address,
    readContract: async (args) => await reader.readContract(args as Parameters<typeof reader.readContract>[0]),
    verifyTypedData: async (args) => await reader.verifyTypedData(args as Parameters<typeof reader.verifyTypedData>[0]),
    writeContract: async (args) => await nonces.writeContract(args),
    sendTransaction: async (args) => await wallet.sendTransaction(args),
    waitForTransactionReceipt: async (args) => await nonces.waitForTransactionReceipt(args),
    getCode
  })
  const facilitator = new x402Facilitator().register(choice.network as `${string}:${string}`, new ExactEvmScheme(signer))
  return {
    settler: address,
    nonces,
    ...(choice.asset != null ? { warm: async () => { await getCode({ address: choice.asset as `0x${string}` }) } } : {}),
    client: {
      verify: async (payload, requirements) => await facilitator.verify(payload, requirements),
      // a settlement mined by a replacement answers with the replacement's hash
      settle: async (payload, requirements) => {
        const r = await facilitator.settle(payload, requirements)
        return r.transaction !== '' ? { ...r, transaction: nonces.minedHash(r.transaction) } : r
      },
      getSupported: async () => facilitator.getSupported() as Awaited<ReturnType<FacilitatorClient['getSupported']>>
    }
  }
}
