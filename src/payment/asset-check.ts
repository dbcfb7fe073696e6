/**
 * Start-up check that the configured asset really is an EIP-3009 token with
 * the configured EIP-712 domain on the configured chain. A mismatch is fatal
 * (payments would never verify); an unreachable RPC is not (retried later).
 */
import { PindError } from '../kernel/errors.js'
import { domainSeparator, parseAbi } from 'viem'
import { chainIdOf, publicClientFor } from './chain.js'

const ABI = parseAbi([
  'function name() view returns (string)',
  'function version() view returns (string)',
  'function decimals() view returns (uint8)',
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)'
])

export class AssetMismatchError extends PindError {
  override name = 'AssetMismatchError'
}

export class RpcUnreachableError extends PindError {
  override name = 'RpcUnreachableError'
}

export interface AssetCheckInput {
  network: string
  rpcUrl: string
  asset: `0x${string}`
  assetName: string
  assetVersion: string
}

export async function checkAsset (c: AssetCheckInput, timeoutMs = 5000): Promise<void> {
  const client = publicClientFor(c.network, c.rpcUrl, timeoutMs)
  let chainId: number
  try {
    chainId = await client.getChainId()
  } catch (err) {
    throw new RpcUnreachableError(`RPC ${c.rpcUrl} did not answer: ${(err as Error).message.split('\n')[0]}`)
  }
  const want = chainIdOf(c.network)
  if (chainId !== want) throw new AssetMismatchError(`RPC ${c.rpcUrl} serves chain ${chainId}, but the network is ${c.network}`)
  const read = async <T>(functionName: 'name' | 'version' | 'decimals' | 'DOMAIN_SEPARATOR'): Promise<T> => {
    try {
      return await client.readContract({ address: c.asset, abi: ABI, functionName }) as T
    } catch {
      throw new AssetMismatchError(`asset ${c.asset} on ${c.network} has no ${functionName}(): it is not an EIP-3009 USDC-like token`)
    }
  }
  const [name, version, decimals, separator] = [await read<string>('name'), await read<string>('version'), await read<number>('decimals'), await read<string>('DOMAIN_SEPARATOR')]
  if (name !== c.assetName) throw new AssetMismatchError(`asset ${c.asset} is named "${name}", expected EIP-712 name "${c.assetName}" (--asset-name)`)
  if (version !== c.assetVersion) throw new AssetMismatchError(`asset ${c.asset} has version "${version}", expected "${c.assetVersion}" (--asset-version)`)
  if (decimals !== 6) throw new AssetMismatchError(`asset ${c.asset} has ${decimals} decimals; prices assume 6 (USDC)`)
  const expected = domainSeparator({ domain: { name: c.assetName, version: c.assetVersion, chainId: want, verifyingContract: c.asset } })
  if (separator.toLowerCase() !== expected.toLowerCase()) throw new AssetMismatchError(`asset ${c.asset}: DOMAIN_SEPARATOR does not match the EIP-712 domain {${c.assetName}, ${c.assetVersion}, ${want}}`)
  try {
    await client.readContract({ address: c.asset, abi: ABI, functionName: 'authorizationState', args: ['0x0000000000000000000000000000000000000000', `0x${'00'.repeat(32)}`] })
  } catch {
    throw new AssetMismatchError(`asset ${c.asset} has no authorizationState(): it does not implement EIP-3009`)
  }
}
