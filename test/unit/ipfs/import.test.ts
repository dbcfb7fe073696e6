/**
 * importFile under a slow disk: how much of an upload's body is held in
 * memory while its leaves are written (issue 18: 16 concurrent uploads held
 * 100-150 MB of ArrayBuffers with the importer's batches of 10), that each
 * leaf's write starts as soon as it is cut, and that the CIDs are the
 * importer's own.
 */
import { randomBytes } from 'node:crypto'
import { unixfs } from '@helia/unixfs'
import { MemoryBlockstore } from 'blockstore-core'
import type { CID } from 'multiformats/cid'
import { describe, expect, it } from 'vitest'
import { CHUNK_SIZE, importFile, LEAF_WRITES, SHARED_LEAF_WRITES } from '../../../src/ipfs/import.js'

const sleep = async (ms: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, ms)) }

/** A memory blockstore whose writes take 5 ms each; counts the writes in flight (and the most at once). */
function slowDisk (onPut: () => void = () => {}): { get: MemoryBlockstore['get'], has: MemoryBlockstore['has'], put: (cid: CID, block: Uint8Array) => Promise<CID>, inFlightMax: () => number } {
  const store = new MemoryBlockstore()
  let inFlight = 0
  let most = 0
  return {
    get: store.get.bind(store),
    has: store.has.bind(store),
    put: async (cid, block) => {
      onPut()
      most = Math.max(most, ++inFlight)
      await sleep(5)
      inFlight--
      return await store.put(cid, block)
    },
    inFlightMax: () => most
  }
}

describe('importFile', () => {
  it('holds at most LEAF_WRITES leaves in flight, starts each write as its leaf is cut, and makes the importer\'s CIDs', async () => {
    const bytes = randomBytes(24 * CHUNK_SIZE + 12_345)
    let read = 0
    let written = 0
    let firstPutAfter: number | undefined
    let aheadMax = 0
    const disk = slowDisk(() => { firstPutAfter ??= read })
    const blockstore = { ...disk, put: async (cid: CID, block: Uint8Array) => { const r = await disk.put(cid, block); written += block.byteLength; return r } }
    async function * body (): AsyncGenerator<Uint8Array> {
      for (let at = 0; at < bytes.length; at += 65_536) {
        // what the body has handed over and no write has finished with yet: held in memory
        aheadMax = Math.max(aheadMax, read - written)
        const piece = bytes.subarray(at, at + 65_536)
        read += piece.byteLength
        yield piece
      }
    }
    const { cid, fileSize } = await importFile(body(), { blockstore, maxBytes: bytes.length })
    expect(fileSize).toBe(bytes.length)

    // the first leaf is written once it is cut, not once a batch of them is in hand
    expect(firstPutAfter).toBeLessThanOrEqual(CHUNK_SIZE + 65_536)
    // memory: the leaves being written plus the one being filled (the importer's default batch of 10 held 11)
    expect(disk.inFlightMax()).toBeLessThanOrEqual(LEAF_WRITES)
    expect(aheadMax).toBeLessThanOrEqual((LEAF_WRITES + 1) * CHUNK_SIZE)

    // the same CIDs as @helia/unixfs with the settings importFile uses
    const plain = await unixfs({ blockstore: new MemoryBlockstore() }).addBytes(bytes, { cidVersion: 1, rawLeaves: true, reduceSingleLeafToSelf: true })
    expect(cid.toString()).toBe(plain.toString())
  })

  it('holds at most one leaf per upload plus SHARED_LEAF_WRITES in flight across concurrent uploads, and every upload finishes', async () => {
    const uploads = 6
    const files = Array.from({ length: uploads }, () => randomBytes(12 * CHUNK_SIZE + 777))
    const disk = slowDisk()
    async function * body (bytes: Uint8Array): AsyncGenerator<Uint8Array> {
      for (let at = 0; at < bytes.length; at += 65_536) yield bytes.subarray(at, at + 65_536)
    }
    const results = await Promise.all(files.map(async bytes => await importFile(body(bytes), { blockstore: disk, maxBytes: bytes.length })))
    // without the shared budget each upload kept LEAF_WRITES in flight: 6 x 4 = 24
    expect(uploads * LEAF_WRITES).toBeGreaterThan(uploads + SHARED_LEAF_WRITES)
    expect(disk.inFlightMax()).toBeLessThanOrEqual(uploads + SHARED_LEAF_WRITES)
    expect(disk.inFlightMax()).toBeGreaterThan(uploads)
    for (const [i, r] of results.entries()) {
      const plain = await unixfs({ blockstore: new MemoryBlockstore() }).addBytes(files[i] as Uint8Array, { cidVersion: 1, rawLeaves: true, reduceSingleLeafToSelf: true })
      expect(r.cid.toString()).toBe(plain.toString())
    }
  })
})
