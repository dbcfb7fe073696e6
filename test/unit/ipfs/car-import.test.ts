/**
 * CARs read by src/ipfs/car-import.ts: built with @ipld/car's writer (and a
 * CARv2 wrapped by hand, as the spec lays it out), blocks of every codec pind
 * pins. What a good CAR stages, and each way a bad one is refused, naming the
 * first bad or missing CID.
 */
import * as dagCbor from '@ipld/dag-cbor'
import * as dagJson from '@ipld/dag-json'
import * as dagPb from '@ipld/dag-pb'
import { MemoryBlockstore } from 'blockstore-core'
import { CID } from 'multiformats/cid'
import * as json from 'multiformats/codecs/json'
import * as raw from 'multiformats/codecs/raw'
import { identity } from 'multiformats/hashes/identity'
import { sha256, sha512 } from 'multiformats/hashes/sha2'
import type { MultihashHasher } from 'multiformats/hashes/interface'
import { describe, expect, it } from 'vitest'
import { CarError, importCar, MAX_CAR_BLOCK } from '../../../src/ipfs/car-import.js'
import { TooLargeError } from '../../../src/ipfs/import.js'
import { carOf, dagOf, type Block } from '../../helpers/car.js'

async function block (codec: { code: number, encode: (v: any) => Uint8Array }, value: unknown, hasher: MultihashHasher<number> = sha256): Promise<Block> {
  const bytes = codec.encode(value)
  return { cid: CID.createV1(codec.code, await hasher.digest(bytes)), bytes }
}

/** CARv2: pragma, header (characteristics, data offset and size, no index), then the CARv1 */
function carV2 (v1: Uint8Array): Uint8Array {
  const pragma = Uint8Array.from([0x0a, 0xa1, 0x67, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x02])
  const header = Buffer.alloc(40)
  header.writeBigUInt64LE(51n, 16)
  header.writeBigUInt64LE(BigInt(v1.byteLength), 24)
  header.writeBigUInt64LE(0n, 32)
  return Buffer.concat([pragma, header, v1])
}

/** streamed in small pieces, as a request body arrives */
async function * pieces (bytes: Uint8Array, size = 7_000): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.byteLength; i += size) yield bytes.subarray(i, i + size)
}

const read = async (bytes: Uint8Array, maxBytes = 10_000_000): Promise<{ result: Awaited<ReturnType<typeof importCar>>, store: MemoryBlockstore }> => {
  const store = new MemoryBlockstore()
  const result = await importCar(pieces(bytes), { blockstore: store, maxBytes })
  return { result, store }
}

const refusal = async (bytes: Uint8Array, maxBytes?: number): Promise<Error> => await read(bytes, maxBytes).then(() => { throw new Error('accepted') }, (err: Error) => err)

describe('importCar', () => {
  it('a UnixFS file\'s CAR (v1 and v2): its root and every block, each hash-checked and staged; a block sent twice kept once, one the root does not reach left out', async () => {
    const content = Buffer.alloc(2_500_000, 7)
    content.write('not all the same', 1_200_000)
    const { root, blocks } = await dagOf(pieces(content, 65_536))
    const file = { cid: root }
    const stray = await block(raw, Buffer.from('not part of the DAG'))
    const bytes = await carOf([file.cid], [...blocks, blocks[0] as Block, stray])
    for (const form of [bytes, carV2(bytes)]) {
      const { result, store } = await read(form)
      expect(result.cid.equals(file.cid)).toBe(true)
      expect(result.carBytes).toBe(form.byteLength)
      expect(new Set(result.reachable.map(String))).toEqual(new Set(blocks.map(b => b.cid.toString())))
      expect(result.dagSize).toBe(blocks.reduce((n, b) => n + b.bytes.byteLength, 0))
      for (const b of blocks) expect(await store.has(b.cid)).toBe(true)
    }
  })

  it('DAGs of dag-cbor, dag-json, json and raw blocks, sha2-512 too, through identity CIDs (walked, never stored)', async () => {
    const leaf = await block(raw, Buffer.from('leaf'), sha512)
    const jsonLeaf = await block(json, { plain: 'json' })
    const inline = CID.createV1(dagCbor.code, identity.digest(dagCbor.encode({ inline: leaf.cid })))
    const mid = await block(dagJson, { leaf: leaf.cid, inline, alsoPlain: jsonLeaf.cid })
    const root = await block(dagCbor, { mid: mid.cid, list: [mid.cid] })
    const { result } = await read(await carOf([root.cid], [root, jsonLeaf, mid, leaf]))
    expect(result.cid.equals(root.cid)).toBe(true)
    expect(new Set(result.reachable.map(String))).toEqual(new Set([root, mid, leaf, jsonLeaf].map(b => b.cid.toString())))
  })

  it('refuses, naming the problem: no root or two, a root it does not hold, a missing block, a block that does not match its CID, truncation, a codec or hash pind does not pin, an oversized section, too many bytes', async () => {
    const a = await block(raw, Buffer.from('a'))
    const b = await block(raw, Buffer.from('b'))
    const parent = await block(dagCbor, { a: a.cid, b: b.cid })
    const good = await carOf([parent.cid], [parent, a, b])

    expect((await refusal(await carOf([], [a]))).message).toMatch(/exactly one root; this one names 0/)
    expect((await refusal(await carOf([a.cid, b.cid], [a, b]))).message).toMatch(/exactly one root; this one names 2/)
    expect((await refusal(await carOf([parent.cid], [a, b]))).message).toBe(`the CAR names root ${parent.cid.toString()} but does not hold it`)
    const missing = await refusal(await carOf([parent.cid], [parent, a]))
    expect(missing).toBeInstanceOf(CarError)
    expect(missing.message).toMatch(new RegExp(`missing block ${b.cid.toString()} \\(linked from ${parent.cid.toString()}\\)`))
    const lying = await refusal(await carOf([parent.cid], [parent, a, { cid: b.cid, bytes: Buffer.from('not b') }]))
    expect(lying.message).toBe(`block ${b.cid.toString()} does not match its CID (its bytes hash to something else)`)
    expect((await refusal(good.subarray(0, good.byteLength - 1))).message).toMatch(/cannot be read: it is truncated/)
    const foreign = { cid: CID.createV1(0x71, await sha256.digest(Buffer.from('x'))), bytes: Buffer.from('x') }
    const unknownCodec = { cid: CID.createV1(0x0129 + 1, await sha256.digest(Buffer.from('y'))), bytes: Buffer.from('y') }
    expect((await refusal(await carOf([unknownCodec.cid], [unknownCodec]))).message).toMatch(/has codec 0x12a, which this service cannot pin/)
    expect((await refusal(await carOf([foreign.cid], [foreign]))).message).toMatch(/is not valid dag-cbor/)
    const md5ish = { cid: CID.createV1(raw.code, { code: 0xd5, size: 16, digest: new Uint8Array(16), bytes: Uint8Array.from([0xd5, 0x01, 16, ...new Uint8Array(16)]) } as any), bytes: Buffer.from('z') }
    expect((await refusal(await carOf([md5ish.cid], [md5ish]))).message).toMatch(/hash function 0xd5/)
    const big = await block(raw, Buffer.alloc(MAX_CAR_BLOCK + 1))
    expect((await refusal(await carOf([big.cid], [big]))).message).toMatch(/a block may be at most 2097152 bytes/)
    expect(await refusal(good, good.byteLength - 1)).toBeInstanceOf(TooLargeError)
    const tooMany = await importCar(pieces(good), { blockstore: new MemoryBlockstore(), maxBytes: 10_000, maxBlocks: 2 }).then(() => undefined, (err: Error) => err)
    expect(tooMany?.message).toBe('the CAR holds more than 2 blocks, the most one upload may')
    expect((await read(good, good.byteLength)).result.cid.equals(parent.cid)).toBe(true)
    // a dag-pb block is dag-pb
    const pb = await block(dagPb, { Data: new Uint8Array(0), Links: [{ Hash: a.cid, Name: 'a', Tsize: 1 }] })
    expect((await read(await carOf([pb.cid], [pb, a]))).result.reachable).toHaveLength(2)
  })

  it('passes a failing store\'s own error on, not a 400 about the CAR, once no write is under way', async () => {
    const dag = await dagOf(Buffer.alloc(3_000_000, 7))
    const car = await carOf([dag.root], dag.blocks)
    let underWay = 0
    let puts = 0
    const failing = new MemoryBlockstore()
    const put = failing.put.bind(failing)
    failing.put = async (cid, bytes) => {
      underWay++
      try {
        await new Promise(resolve => setTimeout(resolve, 5))
        if (++puts === 2) throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' })
        return await put(cid, bytes)
      } finally {
        underWay--
      }
    }
    const err = await importCar(pieces(car), { blockstore: failing, maxBytes: 10_000_000 }).then(() => undefined, (e: Error) => e)
    expect(err).not.toBeInstanceOf(CarError)
    expect(err?.message).toBe('no space left on device')
    expect(underWay).toBe(0)
  })

  it('keeps no view of the body: the CIDs it stages and returns own their bytes (a view would keep the buffer it was read from, several blocks of the CAR, until the import ends)', async () => {
    const content = Buffer.alloc(4_500_000, 3)
    for (let i = 0; i < content.byteLength; i += 100_000) content.write(`piece ${i}`, i)
    const { root, blocks } = await dagOf(pieces(content, 65_536))
    const bytes = await carOf([root], blocks)
    const staged: CID[] = []
    const store = new MemoryBlockstore()
    const { result } = { result: await importCar(pieces(bytes, 65_536), { blockstore: { put: async (cid, b) => { staged.push(cid); return await store.put(cid, b) }, get: store.get.bind(store), has: store.has.bind(store) }, maxBytes: 10_000_000 }) }
    expect(staged).toHaveLength(blocks.length)
    for (const cid of [result.cid, ...result.reachable, ...staged]) for (const view of [cid.bytes, cid.multihash.bytes, cid.multihash.digest]) expect(view.buffer.byteLength, cid.toString()).toBeLessThan(100)
  })
})
