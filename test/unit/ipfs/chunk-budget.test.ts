/**
 * The process-wide budget of upload chunk buffers (src/ipfs/chunk-budget.ts,
 * issue 18): concurrent imports whose leaf writes are held back hold at most
 * the budget's buffers (plus one each), a stalled import cannot starve the
 * others, and buffers an import stops with come back.
 */
import { randomBytes } from 'node:crypto'
import { unixfs } from '@helia/unixfs'
import { MemoryBlockstore } from 'blockstore-core'
import type { CID } from 'multiformats/cid'
import { describe, expect, it } from 'vitest'
import { ChunkBudget } from '../../../src/ipfs/chunk-budget.js'
import { ChunkPool } from '../../../src/ipfs/chunk-pool.js'
import { CHUNK_SIZE, importFile, SHARED_LEAF_WRITES } from '../../../src/ipfs/import.js'

async function * body (bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  // a copy per piece, as node:http gives each read of a body its own buffer
  for (let at = 0; at < bytes.length; at += 65_536) yield Uint8Array.from(bytes.subarray(at, at + 65_536))
}

/**
 * A blockstore whose writes wait until `open()` (a disk busy with other
 * imports' flushes), each buffer given back to the pool once written; counts
 * the pool's buffers that hold bytes in flight: cut and not yet written.
 */
function heldDisk (pool: ChunkPool): { blockstore: { get: MemoryBlockstore['get'], has: MemoryBlockstore['has'], put: (cid: CID, block: Uint8Array) => Promise<CID> }, open: () => void, writing: () => number } {
  const store = new MemoryBlockstore()
  let opened: () => void = () => {}
  const gate = new Promise<void>(resolve => { opened = resolve })
  let writing = 0
  return {
    blockstore: {
      get: store.get.bind(store),
      has: store.has.bind(store),
      put: async (cid, block) => {
        writing++
        await gate
        const r = await store.put(cid, Uint8Array.from(block))
        writing--
        pool.give(block)
        return r
      }
    },
    open: () => { opened() },
    writing: () => writing
  }
}

/** lets every promise chain that can move on do so */
async function settle (): Promise<void> {
  for (let i = 0; i < 50; i++) await new Promise(resolve => setImmediate(resolve))
}

async function stockCid (bytes: Uint8Array): Promise<string> {
  return (await unixfs({ blockstore: new MemoryBlockstore() }).addBytes(bytes, { cidVersion: 1, rawLeaves: true, reduceSingleLeafToSelf: true })).toString()
}

describe('ChunkBudget', () => {
  it('concurrent imports whose writes are held back hold the budget\'s buffers at most (plus one each), and all finish with the importer\'s CIDs', async () => {
    const budget = new ChunkBudget(4)
    const pool = new ChunkPool(CHUNK_SIZE, 0, 10_000, budget)
    const disk = heldDisk(pool)
    const files = Array.from({ length: 6 }, () => randomBytes(5 * CHUNK_SIZE + 999))
    let out = 0
    let outMax = 0
    // every buffer the chunkers hand out, counted until it is given back (written)
    const cut = new WeakSet<ArrayBufferLike>()
    const give = pool.give.bind(pool)
    pool.give = (bytes) => { if (cut.delete(bytes.buffer)) out--; give(bytes) }
    const imports = files.map(async bytes => {
      const chunker = pool.chunker({ ownsInput: true })
      return await importFile(body(bytes), {
        blockstore: disk.blockstore,
        maxBytes: bytes.length,
        chunker: async function * (source) { for await (const c of chunker(source)) { cut.add(c.buffer); outMax = Math.max(outMax, ++out); yield c } }
      })
    })
    await settle()
    // each import cut its first leaf, whose write is held; none may cut another: 6 over a budget of 4.
    // Without the budget each held its own write, a share of SHARED_LEAF_WRITES and a leaf waiting for one
    expect(disk.writing()).toBe(6)
    expect(outMax).toBe(6)
    expect(budget.inUse).toBe(6)
    expect(budget.waits).toBeGreaterThanOrEqual(6)
    expect(6 * 2 + SHARED_LEAF_WRITES).toBeGreaterThan(outMax)
    disk.open()
    const results = await Promise.all(imports)
    for (const [i, r] of results.entries()) expect(r.cid.toString()).toBe(await stockCid(files[i] as Uint8Array))
    expect(budget.inUse).toBe(0)
    expect(budget.peak).toBe(6)
    expect(out).toBe(0)
  })

  it('an import whose client stalls mid-chunk holds one buffer and does not hold up another import', async () => {
    const budget = new ChunkBudget(1)
    const pool = new ChunkPool(CHUNK_SIZE, 0, 10_000, budget)
    let resume: () => void = () => {}
    const stalled = new Promise<void>(resolve => { resume = resolve })
    async function * stalling (): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(1000)
      await stalled
      yield new Uint8Array(1000)
    }
    const store = new MemoryBlockstore()
    const blockstore = { get: store.get.bind(store), has: store.has.bind(store), put: async (cid: CID, block: Uint8Array) => { const r = await store.put(cid, Uint8Array.from(block)); pool.give(block); return r } }
    const slow = importFile(stalling(), { blockstore, maxBytes: 2000, chunker: pool.chunker() })
    await settle()
    expect(budget.inUse).toBe(1)
    // the budget is spent by the stalled import's partly filled buffer; this one still goes through, a buffer at a time
    const bytes = randomBytes(3 * CHUNK_SIZE + 5)
    const other = await importFile(body(bytes), { blockstore, maxBytes: bytes.length, chunker: pool.chunker({ ownsInput: true }) })
    expect(other.cid.toString()).toBe(await stockCid(bytes))
    expect(budget.inUse).toBe(1)
    resume()
    await slow
    expect(budget.inUse).toBe(0)
  })

  it('gives back the buffer being filled when the body fails, and never counts a buffer twice', async () => {
    const budget = new ChunkBudget(2)
    const pool = new ChunkPool(CHUNK_SIZE, 0, 10_000, budget)
    async function * failing (): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(CHUNK_SIZE + 10)
      throw new Error('the client aborted the upload')
    }
    const store = new MemoryBlockstore()
    const blockstore = { get: store.get.bind(store), has: store.has.bind(store), put: async (cid: CID, block: Uint8Array) => { const r = await store.put(cid, Uint8Array.from(block)); pool.give(block); pool.give(block); return r } }
    await expect(importFile(failing(), { blockstore, maxBytes: 10 * CHUNK_SIZE, chunker: pool.chunker() })).rejects.toThrow('aborted')
    await settle()
    expect(budget.inUse).toBe(0)
    expect(budget.peak).toBeLessThanOrEqual(2)
  })
})
