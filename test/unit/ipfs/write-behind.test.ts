/**
 * Block writes behind an import (src/ipfs/write-behind.ts): `put` returns while its write is under
 * way, within MAX_BLOCKS and MAX_BYTES; a block being written is read back from memory; `flush`
 * waits for every write and throws the first failure; `settle` waits without throwing.
 */
import { MemoryBlockstore } from 'blockstore-core'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { describe, expect, it } from 'vitest'
import { MAX_BLOCKS, MAX_BYTES, WriteBehind } from '../../../src/ipfs/write-behind.js'

const blockOf = async (bytes: Uint8Array): Promise<{ cid: CID, bytes: Uint8Array }> => ({ cid: CID.createV1(raw.code, await sha256.digest(bytes)), bytes })
const collect = async (it: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<Uint8Array> => { const out: Uint8Array[] = []; for await (const c of it) out.push(c); return Buffer.concat(out) }

/** a store whose writes end only when the test lets them: it counts what is under way */
class GatedStore extends MemoryBlockstore {
  underWay = 0
  most = 0
  mostBytes = 0
  private bytesUnderWay = 0
  gates: Array<() => void> = []
  failWith?: Error

  override async put (cid: CID, bytes: any): Promise<CID> {
    this.underWay++
    this.bytesUnderWay += (bytes as Uint8Array).byteLength
    this.most = Math.max(this.most, this.underWay)
    this.mostBytes = Math.max(this.mostBytes, this.bytesUnderWay)
    await new Promise<void>(resolve => { this.gates.push(resolve) })
    this.underWay--
    this.bytesUnderWay -= (bytes as Uint8Array).byteLength
    if (this.failWith != null) throw this.failWith
    return await super.put(cid, bytes)
  }

  openAll (): void { for (const g of this.gates.splice(0)) g() }
}

/** lets every gated write through as it comes, until `stop` */
function drain (store: GatedStore): () => void {
  const timer = setInterval(() => { store.openAll() }, 1)
  return () => { clearInterval(timer) }
}

describe('WriteBehind', () => {
  it('returns from put while the write is under way, and reads that block back from memory', async () => {
    const store = new GatedStore()
    const writer = new WriteBehind(store)
    const b = await blockOf(Buffer.from('hello'))
    await writer.put(b.cid, b.bytes)
    expect(store.underWay).toBe(1)
    expect(await store.has(b.cid)).toBe(false)
    expect(await writer.has(b.cid)).toBe(true)
    expect(Buffer.from(await collect(writer.get(b.cid)))).toEqual(Buffer.from('hello'))
    const flushed = writer.flush()
    store.openAll()
    await flushed
    expect(await store.has(b.cid)).toBe(true)
    expect(Buffer.from(await collect(writer.get(b.cid)))).toEqual(Buffer.from('hello'))
  })

  it('keeps at most MAX_BLOCKS writes, and MAX_BYTES of blocks, under way', async () => {
    const store = new GatedStore()
    const writer = new WriteBehind(store)
    const stop = drain(store)
    try {
      for (let i = 0; i < MAX_BLOCKS * 3; i++) {
        const b = await blockOf(Buffer.from(`small ${i}`))
        await writer.put(b.cid, b.bytes)
      }
      await writer.flush()
      expect(store.most).toBe(MAX_BLOCKS)
      const big = MAX_BYTES / 4 + 1
      store.most = 0
      store.mostBytes = 0
      for (let i = 0; i < 12; i++) {
        const b = await blockOf(Buffer.alloc(big, i))
        await writer.put(b.cid, b.bytes)
      }
      await writer.flush()
      expect(store.most).toBe(3)
      expect(store.mostBytes).toBeLessThanOrEqual(MAX_BYTES)
    } finally {
      stop()
    }
  })

  it('throws a write\'s failure from flush, and from the next put; settle waits without throwing', async () => {
    const store = new GatedStore()
    store.failWith = new Error('disk full')
    const writer = new WriteBehind(store)
    const a = await blockOf(Buffer.from('a'))
    await writer.put(a.cid, a.bytes)
    const settled = writer.settle()
    store.openAll()
    await settled
    expect(store.underWay).toBe(0)
    expect(writer.isWriteFailure(store.failWith)).toBe(true)
    await expect(writer.flush()).rejects.toThrow('disk full')
    const b = await blockOf(Buffer.from('b'))
    await expect(writer.put(b.cid, b.bytes)).rejects.toThrow('disk full')
  })

  it('writes a block put twice once', async () => {
    const store = new GatedStore()
    const writer = new WriteBehind(store)
    const a = await blockOf(Buffer.from('a'))
    await writer.put(a.cid, a.bytes)
    await writer.put(a.cid, a.bytes)
    expect(store.gates).toHaveLength(1)
    const flushed = writer.flush()
    store.openAll()
    await flushed
  })
})
