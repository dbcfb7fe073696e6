/**
 * fetchDag on real blockstores (the DAG held locally, so no network is
 * asked): what no later attempt can cure ends with a PermanentFetchError —
 * a DAG whose repeated links expand past the cap, a link to a codec this
 * node cannot walk, a block that does not decode as its codec — while the
 * same blocks repeated honestly within the cap are fetched once each.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import * as dagCbor from '@ipld/dag-cbor'
import * as dagPb from '@ipld/dag-pb'
import { FsBlockstore } from 'blockstore-fs'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import type { BlockCodec } from 'multiformats/codecs/interface'
import { sha256 } from 'multiformats/hashes/sha2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import { PIN_CODECS } from '../../../src/ipfs/codecs.js'
import { DagExpandsError, DagTooLargeError, expandedSize, fetchDag, PermanentFetchError, UnwalkableDagError, type FetchDagOptions } from '../../../src/ipfs/fetch-dag.js'
import { FetchBudget } from '../../../src/ipfs/fetch-budget.js'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { BlockStaging } from '../../../src/ipfs/staging.js'
import { tempDir } from '../../helpers/pind.js'

let local: FsBlockstore
let staging: BlockStaging

beforeAll(async () => {
  const dir = tempDir('pind-fetch-dag-')
  local = new FsBlockstore(join(dir, 'blocks'))
  await local.open()
  staging = new BlockStaging(new FsBackend(join(dir, 'blocks')), join(dir, 'staging'))
})
afterAll(async () => { await local.close() })

/** the node's codec table, as Helia's getCodec over it */
const helia = {
  getCodec: async (code: number) => {
    const c = PIN_CODECS.find(c => c.code === code)
    if (c == null) throw new Error(`no codec ${code}`)
    return c
  }
} as unknown as FetchDagOptions['helia']
const network = { retrieve: async (): Promise<Uint8Array> => { throw new Error('everything is local') } }

async function put<T> (codec: BlockCodec<number, T>, value: T): Promise<CID> {
  const bytes = codec.encode(value)
  const cid = CID.createV1(codec.code, await sha256.digest(bytes))
  await local.put(cid, bytes)
  return cid
}

async function fileOver (leaf: CID, times: number, leafSize: number, tsize: number): Promise<CID> {
  const data = new UnixFS({ type: 'file', blockSizes: Array.from({ length: times }, () => BigInt(leafSize)) })
  return await put(dagPb, dagPb.prepare({ Data: data.marshal(), Links: Array.from({ length: times }, () => ({ Hash: leaf, Name: '', Tsize: tsize })) }))
}

async function fetch (root: CID, maxBytes: number): Promise<{ blocks: number, bytes: number }> {
  const staged = await staging.begin()
  try {
    return await fetchDag({ root, staged, local, network, helia, maxBytes, concurrency: 8, stallMs: 5000 })
  } finally {
    await staging.discard(staged)
  }
}

describe('fetchDag', () => {
  it('fails a DAG whose repeated links expand it past what was paid for, and takes honest repeats once', async () => {
    const leafBytes = randomBytes(10_000)
    const leaf = rawCid(leafBytes)
    await local.put(leaf, leafBytes)
    const bomb = await fileOver(leaf, 1000, leafBytes.length, 1) // 10 MB to a reader, 10 kB of leaf
    const err = await fetch(bomb, 1_000_000).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(DagExpandsError)
    expect(err).toBeInstanceOf(PermanentFetchError)
    expect((err as PermanentFetchError).reason).toMatch(/repeated link.*1000000 bytes paid for/)

    const honest = await fileOver(leaf, 5, leafBytes.length, leafBytes.length)
    const r = await fetch(honest, 60_000)
    expect(r.blocks).toBe(2)
    expect(r.bytes).toBeLessThan(11_000)
    await expect(fetch(honest, 45_000)).rejects.toBeInstanceOf(DagExpandsError)
    await expect(fetch(honest, 5_000)).rejects.toBeInstanceOf(DagTooLargeError)
  })

  it('fails at once on a link to a codec it cannot walk, and on a block that is not its codec', async () => {
    const git = CID.createV1(0x78, await sha256.digest(randomBytes(10)))
    const root = await put(dagCbor, { commit: git })
    const unwalkable = await fetch(root, 1_000_000).catch((e: unknown) => e)
    expect(unwalkable).toBeInstanceOf(UnwalkableDagError)
    expect((unwalkable as PermanentFetchError).reason).toMatch(/links to .*codec 0x78/)

    const rawBytes = Uint8Array.from([0xff, 0xff, 0xff, 0x01])
    const relabelled = CID.createV1(dagPb.code, await sha256.digest(rawBytes))
    await local.put(relabelled, rawBytes)
    const garbled = await fetch(relabelled, 1_000_000).catch((e: unknown) => e)
    expect(garbled).toBeInstanceOf(UnwalkableDagError)
    expect((garbled as PermanentFetchError).reason).toMatch(/cannot be decoded/)
  })

  it('keeps the bytes wanted by concurrent fetches within their shared budget, and every fetch completes', async () => {
    // two files of 80 leaves of 128 KiB, held by "the network" only: a stand-in that answers each want
    // after a few ms and counts the bytes wanted and not yet answered
    const held = new Map<string, Uint8Array>()
    const file = async (): Promise<CID> => {
      const leaves = Array.from({ length: 80 }, () => randomBytes(128 * 1024))
      const links = leaves.map(b => { const cid = rawCid(b); held.set(cid.toString(), b); return { Hash: cid, Name: '', Tsize: b.length } })
      const bytes = dagPb.encode(dagPb.prepare({ Data: new UnixFS({ type: 'file', blockSizes: leaves.map(b => BigInt(b.length)) }).marshal(), Links: links }))
      const cid = CID.createV1(dagPb.code, await sha256.digest(bytes))
      held.set(cid.toString(), bytes)
      return cid
    }
    const roots = [await file(), await file()]
    const run = async (budget?: FetchBudget): Promise<{ peak: number, blocks: number[] }> => {
      let wanted = 0
      let peak = 0
      const net = {
        retrieve: async (cid: CID): Promise<Uint8Array> => {
          const bytes = held.get(cid.toString()) as Uint8Array
          wanted += bytes.length
          peak = Math.max(peak, wanted)
          await new Promise(resolve => setTimeout(resolve, 3))
          wanted -= bytes.length
          return bytes
        }
      }
      const results = await Promise.all(roots.map(async root => {
        const staged = await staging.begin()
        try {
          return await fetchDag({ root, staged, local, network: net, helia, maxBytes: 20_000_000, concurrency: 32, stallMs: 5000, ...(budget != null ? { budget } : {}) })
        } finally {
          await staging.discard(staged)
        }
      }))
      return { peak, blocks: results.map(r => r.blocks) }
    }
    const LIMIT = 1024 * 1024
    const shared = new FetchBudget(LIMIT)
    const within = await run(shared)
    expect(within.blocks).toEqual([81, 81])
    // the budget, and at most one want over it for the other fetch (one with nothing in flight is never refused)
    expect(within.peak).toBeLessThanOrEqual(LIMIT + 128 * 1024)
    expect(shared.inUse()).toBe(0)
    // each on its own window: well past the shared budget
    const alone = await run()
    expect(alone.blocks).toEqual([81, 81])
    expect(alone.peak).toBeGreaterThan(2 * LIMIT)
  })
})

describe('expandedSize', () => {
  it('counts each block once per path to it, and stops growing past the limit', () => {
    // 0 → 1, 1, 2; 1 → 3; 2 → 3, 3
    const sizes = [10, 20, 30, 40]
    const kids = [Int32Array.from([1, 1, 2]), Int32Array.from([3]), Int32Array.from([3, 3]), new Int32Array(0)]
    // 3 is reached by 4 paths, 1 by 2, 2 by 1
    expect(expandedSize(sizes, kids, 1e9)).toBe(10 + 2 * 20 + 30 + 4 * 40)
    expect(expandedSize(sizes, kids, 100)).toBe(101)
  })

  it('walks long chains without recursion', () => {
    const n = 200_000
    const sizes = Array.from({ length: n }, () => 1)
    const kids = Array.from({ length: n }, (_, i) => i + 1 < n ? Int32Array.from([i + 1]) : new Int32Array(0))
    expect(expandedSize(sizes, kids, 1e12)).toBe(n)
  })
})
