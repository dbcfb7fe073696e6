/**
 * Wanting a block again from the peer that sent it, through BlockNetwork,
 * between two real Helia nodes on loopback (the origin runs stock
 * @helia/bitswap): at once after it arrived, after a want of it was
 * abandoned, and right after the previous want ended. Without the cancels of
 * ipfs/want-cancels.ts each second want went unanswered until its signal.
 */
import { randomBytes } from 'node:crypto'
import { multiaddr } from '@multiformats/multiaddr'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawCid, startPeer, type Peer } from '../../../scripts/peer/index.mjs'
import { BlockNetwork } from '../../../src/ipfs/network.js'
import type { IpfsNode } from '../../../src/ipfs/node.js'

let origin: Peer
/** reads each block in 300 ms: a want abandoned after 100 ms is answered all the same */
let slow: Peer
let fetcher: Peer
let network: BlockNetwork

beforeAll(async () => {
  origin = await startPeer()
  slow = await startPeer({ readDelayMs: 300 })
  fetcher = await startPeer()
  await fetcher.helia.libp2p.dial(multiaddr(origin.multiaddrs()[0] as string))
  await fetcher.helia.libp2p.dial(multiaddr(slow.multiaddrs()[0] as string))
  // the parts of IpfsNode BlockNetwork uses, over the fetcher's Helia (as src/ipfs/node.ts builds them)
  const helia = fetcher.helia
  const node: Pick<IpfsNode, 'dial' | 'isConnected' | 'connections' | 'bitswap' | 'getHasher'> = {
    dial: async (addr, options) => { await helia.libp2p.dial(addr, options) },
    isConnected: (peer) => helia.libp2p.getConnections().some(c => c.remotePeer.toString() === peer),
    connections: () => helia.libp2p.getConnections().map(c => ({ peer: c.remotePeer.toString(), addr: c.remoteAddr.toString() })),
    getHasher: async (code) => await helia.getHasher(code),
    bitswap: () => (helia as unknown as { blockBrokers: Array<ReturnType<IpfsNode['bitswap']>> }).blockBrokers.find(b => b.name === 'bitswap') as ReturnType<IpfsNode['bitswap']>
  }
  network = new BlockNetwork(node)
})
afterAll(async () => {
  await fetcher?.stop()
  await slow?.stop()
  await origin?.stop()
})

async function block (on = origin, size = 200_000): Promise<{ cid: ReturnType<typeof rawCid>, bytes: Buffer }> {
  const bytes = randomBytes(size)
  const cid = rawCid(bytes)
  await on.putBlock(cid, bytes)
  return { cid, bytes }
}

const want = async (cid: ReturnType<typeof rawCid>, ms = 5000): Promise<Buffer> =>
  Buffer.from(await network.retrieve(cid, AbortSignal.timeout(ms)))

describe('wanting a block again from the peer that sent it', () => {
  it('is answered at once after it arrived', async () => {
    const { cid, bytes } = await block()
    expect((await want(cid)).equals(bytes)).toBe(true)
    expect((await want(cid)).equals(bytes)).toBe(true)
  })

  it('is answered after the peer sent it for a want that was abandoned', async () => {
    const { cid, bytes } = await block(slow)
    // abandoned while the origin reads it; it sends it all the same, and holds it as sent
    const first = await network.retrieve(cid, AbortSignal.timeout(100)).catch((err: Error) => err)
    expect(first).toBeInstanceOf(Error)
    await new Promise(resolve => setTimeout(resolve, 500))
    expect((await want(cid)).equals(bytes)).toBe(true)
  })

  it('is answered when it follows the end of the previous want within bitswap\'s send debounce', async () => {
    const { cid, bytes } = await block()
    const gone = await network.retrieve(cid, AbortSignal.timeout(1)).catch((err: Error) => err)
    expect(gone).toBeInstanceOf(Error)
    expect((await want(cid)).equals(bytes)).toBe(true)
  })
})
