/**
 * The gateway's optional read-through to the network (operator opt-in,
 * `--gateway-network-timeout`): a block this node does not hold is wanted
 * over bitswap from the connected peers (there is no DHT: configured
 * `--p2p-peers` and peers that dialled us), each block bounded by the
 * timeout and hash-checked. Fetched blocks are not stored — serving is not
 * pinning — so they cost nothing past the response.
 */
import type { Blockstore } from 'interface-blockstore'
import type { CID } from 'multiformats/cid'
import type { BlockNetwork } from './network.js'

export function networkReadThrough (local: Pick<Blockstore, 'get' | 'has'>, network: Pick<BlockNetwork, 'retrieve'>, timeoutMs: number): Pick<Blockstore, 'get' | 'has'> {
  const fetched = new Map<string, Promise<Uint8Array | undefined>>()
  const want = (cid: CID): Promise<Uint8Array | undefined> => {
    const key = cid.toString()
    let p = fetched.get(key)
    if (p == null) {
      p = network.retrieve(cid, AbortSignal.timeout(timeoutMs), { remember: true }).catch(() => undefined)
      fetched.set(key, p)
      // remembered only while a response is likely to ask again (has → get)
      void p.finally(() => { setTimeout(() => fetched.delete(key), 5_000).unref() })
    }
    return p
  }
  return {
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
  } as Pick<Blockstore, 'get' | 'has'>
}
