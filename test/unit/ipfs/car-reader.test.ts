/**
 * src/ipfs/car-reader.ts, the CAR decoder's source of bytes: the same blocks as @ipld/car's own
 * reader whatever the body's pieces, each large block in a buffer of its own from blockBuffer,
 * a CARv2's seek past bytes not yet arrived, truncation as the decoder expects it.
 */
import { asyncIterableReader, createDecoder } from '@ipld/car/decoder'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { describe, expect, it } from 'vitest'
import { carReader, OWN_BUFFER_BYTES } from '../../../src/ipfs/car-reader.js'
import { carOf, dagOf, type Block } from '../../helpers/car.js'

/** a small pseudo-random generator (the same pieces every run) */
function sizes (seed: number, max: number): () => number {
  let x = seed
  return () => { x = (x * 1103515245 + 12345) % 2 ** 31; return 1 + (x % max) }
}

/** bytes cut into pieces of random sizes up to max */
async function * pieces (bytes: Uint8Array, next: () => number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.byteLength;) {
    const n = next()
    yield bytes.subarray(i, i + n)
    i += n
  }
}

async function decoded (reader: ReturnType<typeof asyncIterableReader>): Promise<{ roots: CID[], blocks: Block[] }> {
  const decoder = createDecoder(reader)
  const roots = (await decoder.header()).roots
  const blocks: Block[] = []
  for await (const b of decoder.blocks()) blocks.push({ cid: b.cid, bytes: b.bytes })
  return { roots, blocks }
}

/** a file's DAG (blocks of 1 MiB and its root) and small raw blocks, as one CAR */
async function fixture (): Promise<{ car: Uint8Array, blocks: Block[] }> {
  const content = Buffer.alloc(3_300_000)
  for (let i = 0; i < content.byteLength; i += 4) content.writeUInt32LE(i * 2654435761 >>> 0, i)
  const { root, blocks } = await dagOf(content)
  const small: Block[] = []
  for (const text of ['a', 'bb', 'x'.repeat(70_000), '']) {
    const bytes = Buffer.from(text)
    small.push({ cid: CID.createV1(raw.code, await sha256.digest(bytes)), bytes })
  }
  const all = [...small, ...blocks]
  return { car: await carOf([root], all), blocks: all }
}

describe('carReader', () => {
  it('gives the blocks @ipld/car\'s reader gives, whatever the pieces (1 byte to 200 KB)', async () => {
    const { car, blocks } = await fixture()
    const expected = await decoded(asyncIterableReader(pieces(car, sizes(1, 65_536))))
    expect(expected.blocks).toHaveLength(blocks.length)
    for (const [seed, max] of [[2, 1], [3, 7], [4, 1000], [5, 65_536], [6, 200_000]] as const) {
      // one byte at a time is slow: only the start of the CAR
      const bytes = max === 1 ? car.subarray(0, 300) : car
      const got = await decoded(carReader(pieces(bytes, sizes(seed, max))) as ReturnType<typeof asyncIterableReader>).catch((err: Error) => err)
      if (max === 1) {
        expect((got as Error).message).toBe('Unexpected end of data')
        continue
      }
      const g = got as Awaited<ReturnType<typeof decoded>>
      expect(g.roots.map(String)).toEqual(expected.roots.map(String))
      expect(g.blocks.map(b => b.cid.toString())).toEqual(expected.blocks.map(b => b.cid.toString()))
      for (const [i, b] of g.blocks.entries()) expect(Buffer.compare(b.bytes, (expected.blocks[i] as Block).bytes), `${max}: block ${i}`).toBe(0)
    }
  })

  it('with ownsInput, frees each piece read past none of which was handed out, and no other', async () => {
    const { car } = await fixture()
    const expected = await decoded(asyncIterableReader(pieces(car, sizes(1, 65_536))))
    // each piece the whole of a buffer of its own, as node:http reads a body
    const sent: Uint8Array[] = []
    const own = async function * (): AsyncGenerator<Uint8Array> { for await (const p of pieces(car, sizes(9, 30_000))) { const c = Uint8Array.from(p); sent.push(c); yield c } }
    const got = await decoded(carReader(own(), undefined, true) as ReturnType<typeof asyncIterableReader>)
    // every block (views of pieces among them) reads back whole after the last piece was read
    expect(got.blocks.map(b => b.cid.toString())).toEqual(expected.blocks.map(b => b.cid.toString()))
    for (const [i, b] of got.blocks.entries()) expect(Buffer.compare(b.bytes, (expected.blocks[i] as Block).bytes), `block ${i}`).toBe(0)
    const freed = sent.filter(p => (p.buffer as ArrayBuffer).detached)
    expect(freed.length).toBeGreaterThan(sent.length / 2)
  })

  it('reads each block of 64 KiB or more into a buffer of its own from blockBuffer, and no other', async () => {
    const { car } = await fixture()
    const handed: Uint8Array[] = []
    const blockBuffer = (size: number): Uint8Array => { const b = new Uint8Array(size + 10).subarray(0, size); handed.push(b); return b }
    const { blocks } = await decoded(carReader(pieces(car, sizes(7, 50_000)), blockBuffer) as ReturnType<typeof asyncIterableReader>)
    const large = blocks.filter(b => b.bytes.byteLength >= OWN_BUFFER_BYTES)
    expect(large.length).toBeGreaterThan(3)
    expect(handed).toHaveLength(large.length)
    for (const [i, b] of large.entries()) expect(b.bytes.buffer).toBe((handed[i] as Uint8Array).buffer)
    // the small ones are views of the body's pieces (or small copies), never of a handed-out buffer
    const buffers = new Set(handed.map(h => h.buffer))
    for (const b of blocks.filter(b => b.bytes.byteLength < OWN_BUFFER_BYTES)) expect(buffers.has(b.bytes.buffer)).toBe(false)
  })

  it('seeks past bytes that have not arrived yet (a CARv2 whose data starts after padding), in small pieces', async () => {
    const { car, blocks } = await fixture()
    const pragma = Uint8Array.from([0x0a, 0xa1, 0x67, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x02])
    const header = Buffer.alloc(40)
    const padding = 5_000
    header.writeBigUInt64LE(BigInt(51 + padding), 16)
    header.writeBigUInt64LE(BigInt(car.byteLength), 24)
    const v2 = Buffer.concat([pragma, header, Buffer.alloc(padding, 0xee), car])
    const got = await decoded(carReader(pieces(v2, sizes(8, 300))) as ReturnType<typeof asyncIterableReader>)
    expect(got.blocks.map(b => b.cid.toString())).toEqual(blocks.map(b => b.cid.toString()))
  })
})
