/**
 * Real EIP-3009 authorizations on the dev chain, for settlement-note tests:
 * a payer signs a TransferWithAuthorization (to pay-to), and it is used on
 * chain (submitted by the pay-to account, which holds ETH and sends nothing
 * else), or left unused; plus the settlement note a request would write for it.
 */
import { randomBytes } from 'node:crypto'
import { parseSignature, toHex, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { authorizationTypedData, devChainClients, usdcAbi, type DevChain } from '../../scripts/devchain/index.mjs'
import type { SettlingRecord } from '../../src/ledger/lmdb/settlements.js'

export interface SignedAuthorization {
  from: Address
  to: Address
  value: bigint
  validAfter: bigint
  validBefore: bigint
  nonce: Hex
  signature: Hex
}

export const nowSeconds = (): bigint => BigInt(Math.floor(Date.now() / 1000))

export async function signAuthorization (chain: DevChain, payerKey: Hex, opts: { value?: bigint, validBefore?: bigint } = {}): Promise<SignedAuthorization> {
  const account = privateKeyToAccount(payerKey)
  const message = {
    from: account.address,
    to: chain.payTo,
    value: opts.value ?? 1000n,
    validAfter: 0n,
    validBefore: opts.validBefore ?? nowSeconds() + 3600n,
    nonce: toHex(randomBytes(32))
  }
  return { ...message, signature: await account.signTypedData(authorizationTypedData(chain, message)) }
}

/** Submits transferWithAuthorization and waits until it is mined: the authorization is used. Returns the transaction. */
export async function useAuthorization (chain: DevChain, a: SignedAuthorization): Promise<Hex> {
  const { publicClient, walletClient } = devChainClients(chain)
  const { v, r, s } = parseSignature(a.signature)
  const hash = await walletClient(chain.payToKey).writeContract({
    address: chain.usdc,
    abi: usdcAbi,
    functionName: 'transferWithAuthorization',
    args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v), r, s]
  })
  const receipt = await publicClient.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`transferWithAuthorization ${hash} reverted`)
  return hash
}

/** The note a paid request writes before settling this authorization (what settleNoted stores). */
export function noteFor (a: SignedAuthorization, extra: Partial<SettlingRecord> = {}): SettlingRecord {
  const payer = a.from.toLowerCase()
  return {
    paymentId: `${payer}:${a.nonce.toLowerCase()}`,
    payer,
    amount: a.value.toString(),
    purpose: `upload:bafkrei${a.nonce.slice(2, 12)}`,
    at: new Date().toISOString(),
    validBefore: a.validBefore.toString(),
    ...extra
  }
}
