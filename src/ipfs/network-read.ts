/**
 * The gateway's optional read-through to the network (operator opt-in,
 * `--gateway-network-timeout`): a block this node does not hold is wanted
 * over bitswap from the connected peers (configured `--p2p-peers`, peers
 * that dialled us, and — with --routing on — providers the routing finds for
 * a block that does not arrive from them within FIND_AFTER_MS: the root,
 * typically; its children then come from the same providers), each block
 * bounded by the timeout and hash-checked. Fetched blocks are not stored —
 * serving is not pinning — so they cost nothing past the response.
 */
import type { Blockstore } from 'interface-blockstore'
import type { CID } from 'multiformats/cid'
import type { BlockNetwork } from './network.js'

const FIND_AFTER_MS = 500

export function networkReadThrough (local: Pick<Blockstore, 'get' | 'has'> & { readonly readAhead?: number }, network: Pick<BlockNetwork, 'retrieve'>, timeoutMs: number, findProviders?: (cid: CID, signal: AbortSignal) => Promise<unknown>): Pick<Blockstore, 'get' | 'has'> & { readonly readAhead?: number } {
  const fetched = new Map<string, Promise<Uint8Array | undefined>>()
  const want = (cid: CID): Promise<Uint8Array | undefined> => {
    const key = cid.toString()
    let p = fetched.get(key)
    if (p == null) {
      const signal = AbortSignal.timeout(timeoutMs)
      const find = findProviders != null ? setTimeout(() => { findProviders(cid, signal).catch(() => {}) }, FIND_AFTER_MS) : undefined
      p = network.retrieve(cid, signal, { remember: true }).catch(() => undefined).finally(() => { clearTimeout(find) })
      fetched.set(key, p)
      // remembered only while a response is likely to ask again (has → get)
      void p.finally(() => { setTimeout(() => fetched.delete(key), 5_000).unref() })
    }
    return p
  }
  return {
    // the local store's read-ahead hint (S3: a round trip per block) reaches the gateway's reader (content.ts)
    get readAhead () { return local.readAhead },
    has: async (cid) => await local.has(cid) || (await want(cid)) != null,
    get: async function * (cid, options) {
      if (await local.has(cid)) {
        yield * local.get(cid, options)
        return
      }
      const bytes = await want(cid)
      if (bytes == null) throw Object.assign(new Error(`block ${cid.toString()} not found on the network within ${timeoutMs} ms`), { name: 'NotFoundError' })
      yield bytes
    }
  } as Pick<Blockstore, 'get' | 'has'> & { readonly readAhead?: number }
}
