/**
 * The facilitator that verifies and settles payments: embedded (pind submits
 * transferWithAuthorization itself with the settler key, paying the gas) or
 * remote (an x402 facilitator URL).
 */
import { x402Facilitator } from '@x402/core/facilitator'
import { HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server'
import { toFacilitatorEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import { settlerClientFor } from './chain.js'

export type FacilitatorChoice =
  | { kind: 'embedded', network: string, rpcUrl: string, settlerKey: `0x${string}` }
  | { kind: 'remote', url: string }

export interface BuiltFacilitator {
  client: FacilitatorClient
  /** the settler's address (embedded only) */
  settler?: `0x${string}`
}

export function buildFacilitator (choice: FacilitatorChoice): BuiltFacilitator {
  if (choice.kind === 'remote') return { client: new HTTPFacilitatorClient({ url: choice.url }) }
  const wallet = settlerClientFor(choice.network, choice.rpcUrl, choice.settlerKey)
  const address = wallet.account.address
  const signer = toFacilitatorEvmSigner({
    address,
    readContract: async (args) => await wallet.readContract(args as Parameters<typeof wallet.readContract>[0]),
    verifyTypedData: async (args) => await wallet.verifyTypedData(args as Parameters<typeof wallet.verifyTypedData>[0]),
    writeContract: async (args) => await wallet.writeContract(args as Parameters<typeof wallet.writeContract>[0]),
    sendTransaction: async (args) => await wallet.sendTransaction(args),
    waitForTransactionReceipt: async (args) => await wallet.waitForTransactionReceipt({ ...args, pollingInterval: 100 }),
    getCode: async (args) => await wallet.getCode(args)
  })
  const facilitator = new x402Facilitator().register(choice.network as `${string}:${string}`, new ExactEvmScheme(signer))
  return {
    settler: address,
    client: {
      verify: async (payload, requirements) => await facilitator.verify(payload, requirements),
      settle: async (payload, requirements) => await facilitator.settle(payload, requirements),
      getSupported: async () => facilitator.getSupported() as Awaited<ReturnType<FacilitatorClient['getSupported']>>
    }
  }
}
