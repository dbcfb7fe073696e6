/**
 * Sign-In-With-X as a client does it, with the x402 packages' own client side:
 * x402HTTPClient reads the challenge in PAYMENT-REQUIRED and runs
 * @x402/extensions' SIWX client hook, which signs with a viem account. Plus
 * signers for an EIP-1271 wallet (its owner signs) and an EIP-6492 one (not
 * deployed: the owner's signature wrapped with the factory call), and a way
 * to sign fields a test chose (tampered challenges), still with the
 * package's own message builder.
 */
import { x402Client, x402HTTPClient } from '@x402/core/client'
import { createSIWxClientHook, createSIWxMessage, encodeSIWxHeader, type CompleteSIWxInfo, type EVMSigner, type SIWxExtension } from '@x402/extensions/sign-in-with-x'
import { encodeFunctionData, serializeErc6492Signature, type Address, type Hex } from 'viem'
import type { PrivateKeyAccount } from 'viem/accounts'
import { artifacts } from '../../scripts/devchain/index.mjs'

/** the challenge of a 401 (or 402), as the x402 client reads it */
export function challengeOf (res: Response): { extension: SIWxExtension, accepts: unknown[], error?: string } {
  const pr = new x402HTTPClient(new x402Client()).getPaymentRequiredResponse((name) => res.headers.get(name))
  const extension = pr.extensions?.['sign-in-with-x'] as SIWxExtension | undefined
  if (extension == null) throw new Error(`no sign-in-with-x challenge in the ${res.status}`)
  return { extension, accepts: pr.accepts, ...(pr.error != null ? { error: pr.error } : {}) }
}

/** The SIGN-IN-WITH-X header for the challenge of `res`, signed by `signer` (x402HTTPClient + createSIWxClientHook). */
export async function signIn (res: Response, requestUrl: string, signer: EVMSigner): Promise<string> {
  const http = new x402HTTPClient(new x402Client()).onPaymentRequired(createSIWxClientHook(signer))
  const headers = await http.handlePaymentRequired(http.getPaymentRequiredResponse((name) => res.headers.get(name)), requestUrl)
  const header = headers?.['sign-in-with-x']
  if (header == null) throw new Error('the SIWX client hook did not sign the challenge')
  return header
}

/** Signs the fields given (a test's own, tampered or not) as the package builds the message. */
export async function signFields (info: CompleteSIWxInfo, address: Address, sign: (message: string) => Promise<Hex>): Promise<string> {
  const message = createSIWxMessage(info, address)
  return encodeSIWxHeader({ ...info, address, signature: await sign(message) })
}

/** The fields of a challenge with the payment chain chosen, as the client hook completes them. */
export function completeInfo (extension: SIWxExtension): CompleteSIWxInfo {
  const chain = extension.supportedChains[0]!
  return { ...extension.info, chainId: chain.chainId, type: chain.type }
}

/** an EOA: the viem account itself */
export const eoa = (account: PrivateKeyAccount): EVMSigner => account as unknown as EVMSigner

/** a deployed EIP-1271 wallet: `signer` signs for it (its owner, or not) */
export function contractWallet (wallet: Address, signer: PrivateKeyAccount): EVMSigner {
  return { address: wallet, signMessage: async ({ message }) => await signer.signMessage({ message }) }
}

/** a wallet the factory will deploy at `wallet` for `owner` with `salt` (EIP-6492: the deployment travels with the signature) */
export function counterfactualWallet (wallet: Address, factory: Address, salt: Hex, owner: PrivateKeyAccount): EVMSigner {
  const data = encodeFunctionData({ abi: artifacts.OwnedWalletFactory.abi, functionName: 'deploy', args: [owner.address, salt] })
  return {
    address: wallet,
    signMessage: async ({ message }) => serializeErc6492Signature({ address: factory, data, signature: await owner.signMessage({ message }) })
  }
}
