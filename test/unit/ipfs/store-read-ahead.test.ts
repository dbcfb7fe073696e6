/**
 * A store whose reads are round trips (S3) asks the gateway's reader for a
 * deeper read-ahead (`readAhead` on the store, 8 on S3). The hint must reach
 * the reader through the wrappers the daemon puts around the store (denials,
 * the network read-through), and the reader must keep exactly that many
 * blocks in flight, never more, and give the bytes in order, ranges included.
 */
import { randomBytes } from 'node:crypto'
import { unixfs } from '@helia/unixfs'
import { MemoryBlockstore } from 'blockstore-core/memory'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import type { CID } from 'multiformats/cid'
import { describe, expect, it } from 'vitest'
import { loadEntry, readFile, type FileEntry, type LocalBlockstore } from '../../../src/ipfs/content.js'
import { networkReadThrough } from '../../../src/ipfs/network-read.js'
import type { BlockNetwork } from '../../../src/ipfs/network.js'
import { refusingDenied } from '../../../src/service/serving/denials.js'

const BLOCK = 1024
const BLOCKS = 40

/** the file's blocks in memory, read with a delay, counting reads in flight */
async function slowStore (bytes: Uint8Array): Promise<{ store: LocalBlockstore, root: CID, peak: () => number, reset: () => void }> {
  const mem = new MemoryBlockstore()
  const root = await unixfs({ blockstore: mem }).addBytes(bytes, { cidVersion: 1, rawLeaves: true, chunker: fixedSize({ chunkSize: BLOCK }) })
  let inFlight = 0
  let peak = 0
  const store = {
    readAhead: 8,
    has: async (cid: CID) => await mem.has(cid),
    get: async function * (cid: CID) {
      inFlight++
      peak = Math.max(peak, inFlight)
      try {
        await new Promise(resolve => setTimeout(resolve, 2))
        yield * mem.get(cid)
      } finally {
        inFlight--
      }
    }
  }
  return { store: store as unknown as LocalBlockstore, root, peak: () => peak, reset: () => { peak = 0 } }
}

async function readAll (bs: LocalBlockstore, file: FileEntry, range?: { offset: bigint, length?: bigint }): Promise<Buffer> {
  const parts: Uint8Array[] = []
  for await (const part of readFile(bs, file, range)) parts.push(part)
  return Buffer.concat(parts)
}

describe("a store's read-ahead hint", () => {
  it('reaches the reader through the denial and network wrappers: 8 reads in flight, never more, bytes in order', async () => {
    const bytes = randomBytes(BLOCK * BLOCKS)
    const s = await slowStore(bytes)
    const network = { retrieve: async () => undefined } as unknown as BlockNetwork
    const wrapped: Record<string, LocalBlockstore> = {
      denials: refusingDenied(s.store, () => undefined) as LocalBlockstore,
      'network read-through': networkReadThrough(s.store, network, 1000) as LocalBlockstore,
      both: refusingDenied(networkReadThrough(s.store, network, 1000), () => undefined) as LocalBlockstore
    }
    for (const [name, bs] of Object.entries(wrapped)) {
      expect(bs.readAhead, name).toBe(8)
      const file = await loadEntry(bs, s.root) as FileEntry
      s.reset()
      expect((await readAll(bs, file)).equals(bytes), name).toBe(true)
      // the default (2) without the hint; more would be unbounded memory
      expect(s.peak(), name).toBe(8)
      // a range across blocks: the right bytes, in order
      const offset = BLOCK * 3 + 100
      const length = BLOCK * 20 + 17
      s.reset()
      expect((await readAll(bs, file, { offset: BigInt(offset), length: BigInt(length) })).equals(bytes.subarray(offset, offset + length)), name).toBe(true)
      expect(s.peak(), name).toBeLessThanOrEqual(8)
    }
  })
})
