import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { unixfs } from '@helia/unixfs'
import { FsBlockstore } from 'blockstore-fs'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ChunkPool } from '../../../src/ipfs/chunk-pool.js'
import { CHUNK_SIZE, importFile } from '../../../src/ipfs/import.js'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { BlockStaging } from '../../../src/ipfs/staging.js'

async function * pieces (bytes: Uint8Array, sizes: number[]): AsyncGenerator<Uint8Array> {
  let at = 0
  let i = 0
  while (at < bytes.length) {
    const n = sizes[i++ % sizes.length] as number
    yield bytes.subarray(at, at + n)
    at += n
  }
}

async function collect (it: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = []
  for await (const c of it) out.push(Uint8Array.from(c))
  return out
}

describe('ChunkPool', () => {
  it('chunks like the fixed-size chunker: full chunks, then the rest; one empty chunk for nothing', async () => {
    const pool = new ChunkPool(10, 4)
    const bytes = randomBytes(37)
    const chunks = await collect(pool.chunker()(pieces(bytes, [3, 11, 1, 25])))
    expect(chunks.map(c => c.length)).toEqual([10, 10, 10, 7])
    expect(Buffer.concat(chunks)).toEqual(bytes)
    expect((await collect(pool.chunker()(pieces(randomBytes(20), [20])))).map(c => c.length)).toEqual([10, 10])
    expect((await collect(pool.chunker()(pieces(new Uint8Array(0), [1])))).map(c => c.length)).toEqual([0])
  })

  it('frees the pieces it owns once copied, when they span a whole ArrayBuffer, and only then', async () => {
    const pool = new ChunkPool(10, 4)
    const whole = [Uint8Array.from([1, 2, 3]), Uint8Array.from([4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15])]
    const big = Uint8Array.from([16, 17, 18, 19, 20])
    const partial = big.subarray(1, 4)
    async function * source (): AsyncGenerator<Uint8Array> { yield * whole; yield partial }
    const chunks = await collect(pool.chunker({ ownsInput: true })(source()))
    expect(Buffer.concat(chunks)).toEqual(Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19]))
    expect(whole.map(w => w.buffer.detached)).toEqual([true, true])
    expect(big.buffer.detached).toBe(false)
    // not owned: nothing is touched
    const kept = [Uint8Array.from([1, 2, 3])]
    await collect(pool.chunker()((async function * () { yield * kept })()))
    expect(kept[0]?.buffer.detached).toBe(false)
  })

  it('takes back only buffers it handed out, each once, and reuses them', () => {
    const pool = new ChunkPool(8, 2)
    const a = pool.take()
    pool.give(new Uint8Array(8))
    expect(pool.idleCount).toBe(0)
    pool.give(a.subarray(0, 3))
    pool.give(a)
    expect(pool.idleCount).toBe(1)
    const b = pool.take()
    expect(b.buffer).toBe(a.buffer)
    expect(b.length).toBe(8)
    // the idle list is bounded; a buffer given back past it is freed at once, not left to a collection
    const many = [pool.take(), pool.take(), pool.take(), pool.take()]
    for (const m of many) pool.give(m)
    expect(pool.idleCount).toBe(2)
    expect(many.map(m => (m.buffer as ArrayBuffer).detached)).toEqual([false, false, true, true])
  })

  it('an import whose chunk buffers are freed as soon as each leaf is written gives the stock importer\'s CID', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pind-chunks-'))
    try {
      const plain = new FsBlockstore(join(dir, 'plain'))
      await plain.open()
      const bytes = randomBytes(CHUNK_SIZE * 3 + 1234)
      const expected = await unixfs({ blockstore: plain }).addByteStream(pieces(bytes, [65536]), { cidVersion: 1, rawLeaves: true, reduceSingleLeafToSelf: true })
      // no idle buffers kept: each one given back is freed
      const pool = new ChunkPool(CHUNK_SIZE, 0)
      const freed: boolean[] = []
      const store = {
        get: plain.get.bind(plain),
        has: plain.has.bind(plain),
        put: async (cid: Parameters<FsBlockstore['put']>[0], block: Uint8Array) => {
          await plain.put(cid, block)
          pool.give(block)
          freed.push((block.buffer as ArrayBuffer).detached)
          return cid
        }
      }
      const result = await importFile(pieces(bytes, [65536]), { blockstore: store, chunker: pool.chunker(), maxBytes: bytes.length })
      // four leaves freed (the fifth block written is the root, not a pooled buffer)
      expect(freed).toEqual([true, true, true, true, false])
      expect(result.cid.toString()).toBe(expected.toString())
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('frees its idle buffers once it has been quiet for a while, not while it is in use', () => {
    vi.useFakeTimers()
    try {
      const pool = new ChunkPool(8, 4, 150)
      const a = pool.take()
      const b = pool.take()
      pool.give(a)
      // in use: a buffer given back within the quiet time keeps the idle ones
      vi.advanceTimersByTime(100)
      pool.give(b)
      vi.advanceTimersByTime(100)
      expect(pool.idleCount).toBe(2)
      expect((a.buffer as ArrayBuffer).detached).toBe(false)
      // quiet for 150 ms: freed at once (detached), not left to a garbage collection
      vi.advanceTimersByTime(60)
      expect(pool.idleCount).toBe(0)
      expect((a.buffer as ArrayBuffer).detached).toBe(true)
      expect((b.buffer as ArrayBuffer).detached).toBe(true)
      // and it goes on working
      const c = pool.take()
      expect(c.length).toBe(8)
      pool.give(c)
      expect(pool.idleCount).toBe(1)
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('staged import with reused chunk buffers', () => {
  const dirs: string[] = []
  afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }) })

  it.each(['files', 'log'] as const)('gives the same CID as the stock importer and every staged block holds its own bytes (%s)', async (layout) => {
    const dir = mkdtempSync(join(tmpdir(), 'pind-chunks-'))
    dirs.push(dir)
    const staging = new BlockStaging(new FsBackend(join(dir, 'blocks')), join(dir, 'staging'), undefined, () => layout)
    await staging.sweepLeftovers()
    // 13.5 chunks in odd-sized pieces, with repeated chunks (the same CID written twice)
    const unique = randomBytes(CHUNK_SIZE * 5)
    const bytes = Buffer.concat([unique, unique, randomBytes(CHUNK_SIZE * 3 + CHUNK_SIZE / 2)])
    const plain = new FsBlockstore(join(dir, 'plain'))
    await plain.open()
    const expected = await unixfs({ blockstore: plain }).addByteStream(pieces(bytes, [65536]), { cidVersion: 1, rawLeaves: true, reduceSingleLeafToSelf: true })
    for (let round = 0; round < 2; round++) {
      const staged = await staging.begin()
      const result = await importFile(pieces(bytes, [65536, 7, 100_003]), { blockstore: staged.blockstore, chunker: staged.chunker(), maxBytes: bytes.length })
      expect(result.cid.toString()).toBe(expected.toString())
      expect(result.fileSize).toBe(bytes.length)
      for (const cid of staged.cids) {
        if (cid.code !== 0x55) continue
        const block = Buffer.concat(await collect(staged.blockstore.get(cid)))
        expect(createHash('sha256').update(block).digest().equals(Buffer.from(cid.multihash.digest))).toBe(true)
      }
      await staging.discard(staged)
    }
  })
})
