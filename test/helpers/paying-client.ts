/**
 * The real x402 client agents use (@x402/fetch) with a viem account, allowed
 * to spend the dev chain's USDC.
 */
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { toClientEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { privateKeyToAccount } from 'viem/accounts'
import type { DevChain } from '../../scripts/devchain/index.mjs'

/** the x402 client a payer signs with: exact EIP-3009 on the chain's own network only, its USDC allowed (of several networks in a 402's accepts, it picks that one) */
export function clientFor (chain: DevChain, privateKey: `0x${string}`): x402Client {
  const network = (chain.network ?? 'eip155:167000') as `${string}:${string}`
  return x402Client.fromConfig({
    schemes: [{ network, client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(privateKey))) }],
    spendControls: { allowedAssets: [{ network, asset: chain.usdc }] }
  })
}

/** `base`: the fetch it pays through (default the global one) */
export function payingFetch (chain: DevChain, privateKey: `0x${string}`, base: typeof fetch = fetch): typeof fetch {
  return wrapFetchWithPayment(base, clientFor(chain, privateKey)) as typeof fetch
}

/** Signs the challenge of a 402 response by hand (for tests that replay or tamper with payments). */
/**
 * A paying fetch that remembers the PAYMENT-SIGNATURE it sent, so that a test can
 * send the same payment again by hand (a retry, a replay). `signature()` fails the
 * test when no payment was sent.
 */
export function recordingPayer (chain: DevChain, privateKey: `0x${string}`): { pay: typeof fetch, signature: () => string } {
  let sent: string | null = null
  const recording: typeof fetch = async (input, init) => {
    sent ??= (input instanceof Request ? input.headers : new Headers(init?.headers)).get('payment-signature')
    return await fetch(input, init)
  }
  return {
    pay: payingFetch(chain, privateKey, recording),
    signature: () => {
      if (sent == null) throw new Error('no PAYMENT-SIGNATURE was sent')
      return sent
    }
  }
}

export async function signChallenge (chain: DevChain, privateKey: `0x${string}`, res: Response): Promise<string> {
  const header = res.headers.get('payment-required')
  if (res.status !== 402 || header == null) throw new Error(`expected a 402 challenge, got ${res.status}`)
  const payload = await clientFor(chain, privateKey).createPaymentPayload(decodePaymentRequiredHeader(header))
  return encodePaymentSignatureHeader(payload)
}

/** A 402 challenge for an upload of `size` bytes, without sending any file. */
export async function uploadChallenge (url: string, size: number, months = 1): Promise<Response> {
  return await fetch(`${url}/upload`, {
    method: 'POST',
    headers: { 'x-upload-size': String(size), 'x-pin-duration-months': String(months), 'content-type': 'multipart/form-data; boundary=x' },
    body: '--x--\r\n'
  })
}

/** The flags that point pind at a dev chain with the embedded facilitator. */
export function chainArgs (chain: DevChain): { args: string[], env: Record<string, string> } {
  return {
    args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo],
    env: { PIND_SETTLER_KEY: chain.settlerKey }
  }
}

export function uploadForm (bytes: Uint8Array, name = 'file.bin'): FormData {
  const form = new FormData()
  form.append('file', new Blob([bytes]), name)
  return form
}
