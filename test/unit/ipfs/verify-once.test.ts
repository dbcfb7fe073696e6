/**
 * A block from bitswap is hashed once (issue 34): bitswap hashes every block
 * it receives to find the want it answers, and BlockNetwork hashed it again.
 * Bitswap's check stands for ours only when the multihash it computed, code
 * and length included, is the wanted CID's sha2-256: it matches a block to a
 * want on the digest alone, so a peer naming the identity hash with the
 * wanted digest as its "block" passes bitswap and must still be refused.
 */
import { randomBytes } from 'node:crypto'
import { multiaddr } from '@multiformats/multiaddr'
import { describe, expect, it } from 'vitest'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { sha256 } from 'multiformats/hashes/sha2'
import { rawCid, startPeer } from '../../../scripts/peer/index.mjs'
import { BlockHashMismatchError, BlockNetwork } from '../../../src/ipfs/network.js'
import type { IpfsNode } from '../../../src/ipfs/node.js'

/** a node whose bitswap "receives" `sent` as the block of multihash `computed`, as @helia/bitswap's WantList announces it */
function nodeReceiving (sent: Uint8Array, computed: CID | undefined): { node: IpfsNode, hashed: () => number } {
  let hashed = 0
  const wantList = Object.assign(new EventTarget(), { wants: new Map(), peers: new Map() })
  const node = {
    bitswap: () => ({
      retrieve: async () => {
        if (computed != null) wantList.dispatchEvent(new CustomEvent('block', { detail: { cid: computed, block: sent } }))
        return sent
      },
      bitswap: { wantList }
    }),
    getHasher: async () => { hashed++; return sha256 },
    connections: () => [],
    isConnected: () => false
  } as unknown as IpfsNode
  return { node, hashed: () => hashed }
}

describe('blocks from bitswap are hashed once', () => {
  it('takes a block bitswap hashed to the wanted sha2-256 multihash without hashing it again', async () => {
    const block = randomBytes(4096)
    const cid = rawCid(block)
    const { node, hashed } = nodeReceiving(block, cid)
    const got = await new BlockNetwork(node).retrieve(cid, AbortSignal.timeout(1000))
    expect(Buffer.from(got).equals(block)).toBe(true)
    expect(hashed()).toBe(0)
  })

  it('hashes a block bitswap did not announce, and refuses one that does not match', async () => {
    const block = randomBytes(4096)
    const cid = rawCid(block)
    const ok = nodeReceiving(block, undefined)
    await new BlockNetwork(ok.node).retrieve(cid, AbortSignal.timeout(1000))
    expect(ok.hashed()).toBe(1)
    const bad = nodeReceiving(randomBytes(4096), undefined)
    await expect(new BlockNetwork(bad.node).retrieve(cid, AbortSignal.timeout(1000))).rejects.toBeInstanceOf(BlockHashMismatchError)
  })

  it('refuses a block that matched the want under another hash function (the identity hash of the digest)', async () => {
    const block = randomBytes(4096)
    const cid = rawCid(block)
    // the forged "block" is the wanted digest itself; its identity multihash has that same digest
    const forged = Uint8Array.from(cid.multihash.digest)
    const identity = CID.createV1(0x55, Digest.create(0x00, forged))
    expect(Buffer.from(identity.multihash.digest).equals(cid.multihash.digest)).toBe(true)
    const { node, hashed } = nodeReceiving(forged, identity)
    await expect(new BlockNetwork(node).retrieve(cid, AbortSignal.timeout(1000))).rejects.toBeInstanceOf(BlockHashMismatchError)
    expect(hashed()).toBe(1)
  })

  it('hashes a block announced under a different multihash than the one wanted', async () => {
    const block = randomBytes(4096)
    const cid = rawCid(block)
    const other = rawCid(randomBytes(16))
    const { node, hashed } = nodeReceiving(block, other)
    const got = await new BlockNetwork(node).retrieve(cid, AbortSignal.timeout(1000))
    expect(Buffer.from(got).equals(block)).toBe(true)
    expect(hashed()).toBe(1)
  })
})

describe('over @helia/bitswap itself', () => {
  it('a block from a peer is hashed by bitswap alone: its want list announces what BlockNetwork relies on', async () => {
    const origin = await startPeer()
    const fetcher = await startPeer()
    try {
      await fetcher.helia.libp2p.dial(multiaddr(origin.multiaddrs()[0] as string))
      const helia = fetcher.helia
      let hashed = 0
      const node = {
        dial: async () => {},
        isConnected: (peer: string) => helia.libp2p.getConnections().some(c => c.remotePeer.toString() === peer),
        connections: () => [],
        getHasher: async (code: number) => { hashed++; return await helia.getHasher(code) },
        bitswap: () => (helia as unknown as { blockBrokers: Array<ReturnType<IpfsNode['bitswap']>> }).blockBrokers.find(b => b.name === 'bitswap')
      } as unknown as IpfsNode
      const network = new BlockNetwork(node)
      for (let i = 0; i < 3; i++) {
        const bytes = randomBytes(100_000 + i)
        const cid = rawCid(bytes)
        await origin.putBlock(cid, bytes)
        expect(Buffer.from(await network.retrieve(cid, AbortSignal.timeout(10_000))).equals(bytes)).toBe(true)
      }
      expect(hashed).toBe(0)
    } finally {
      await fetcher.stop()
      await origin.stop()
    }
  })
})
