/**
 * The disk backend's small blocks, packed in blocks/small.mdb (src/ipfs/small-blocks.ts): at
 * most PACKED_MAX bytes there, larger ones a file each; read, listed, sized, removed and counted
 * like files; durable across a reopen; a small block an earlier version stored as a file is read,
 * listed and removed as before; a second FsBackend on the folder (an admin command's, never
 * opened) sees what the first wrote.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { FsBlockstore } from 'blockstore-fs'
import type { CID } from 'multiformats/cid'
import { afterEach, describe, expect, it } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import { blockName } from '../../../src/ipfs/block-backend.js'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { PACKED_MAX } from '../../../src/ipfs/small-blocks.js'
import { BlockStaging } from '../../../src/ipfs/staging.js'
import { diskBlocks } from '../../helpers/backend.js'
import { tempDir } from '../../helpers/pind.js'

const dirs: string[] = []
const open: FsBackend[] = []
afterEach(async () => {
  for (const b of open.splice(0)) await b.close()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

async function backend (dir?: string): Promise<{ dir: string, store: FsBackend }> {
  dir ??= tempDir('pind-small-blocks-')
  dirs.push(dir)
  const store = new FsBackend(join(dir, 'blocks'))
  await store.open()
  open.push(store)
  return { dir, store }
}

const files = (dir: string): string[] => readdirSync(join(dir, 'blocks'), { recursive: true }).map(String).filter(f => f.endsWith('.data'))
const bytesOf = async (store: FsBackend, cid: CID): Promise<Buffer> => {
  const pieces: Uint8Array[] = []
  for await (const p of store.blockstore.get(cid)) pieces.push(p)
  return Buffer.concat(pieces)
}
async function names (store: FsBackend): Promise<string[]> {
  const out: string[] = []
  for await (const page of store.list()) out.push(...page.map(b => b.name))
  return out.sort()
}

describe('small blocks packed on disk', () => {
  it('a block of at most PACKED_MAX bytes is packed, a larger one is a file; both read, list, size, count and remove exactly', async () => {
    const { dir, store } = await backend()
    const edge = randomBytes(PACKED_MAX)
    const tiny = randomBytes(10)
    const large = randomBytes(PACKED_MAX + 1)
    const cids = [edge, tiny, large].map(b => rawCid(b))
    // the ticket path: one block at a time, straight to the store
    for (const [i, b] of [edge, tiny, large].entries()) expect(await store.put(cids[i] as CID, b)).toBe(true)
    expect(await store.put(cids[1] as CID, tiny)).toBe(false) // held already
    expect(files(dir)).toEqual([join(blockName(cids[2] as CID).slice(-2), `${blockName(cids[2] as CID)}.data`)])
    expect(diskBlocks(join(dir, 'blocks'))).toBe(3)
    for (const [i, b] of [edge, tiny, large].entries()) {
      expect((await bytesOf(store, cids[i] as CID)).equals(b)).toBe(true)
      expect(Buffer.from(await store.read(cids[i] as CID) as Uint8Array).equals(b)).toBe(true)
      expect(await store.blockstore.has(cids[i] as CID)).toBe(true)
      expect(await store.sizeOf({ name: blockName(cids[i] as CID) })).toBe(b.byteLength)
    }
    expect(await names(store)).toEqual(cids.map(blockName).sort())
    expect(await store.usage()).toEqual({ blocks: 3, bytes: PACKED_MAX + 10 + PACKED_MAX + 1 })

    expect(await store.remove([{ name: blockName(cids[0] as CID) }, { name: blockName(cids[2] as CID) }, { name: 'BCIQNOTSTORED' }])).toEqual({ removed: 2, freedBytes: PACKED_MAX + PACKED_MAX + 1 })
    expect(await store.read(cids[0] as CID)).toBeUndefined()
    expect(await store.blockstore.has(cids[0] as CID)).toBe(false)
    await expect(bytesOf(store, cids[0] as CID)).rejects.toMatchObject({ name: 'NotFoundError' })
    expect(files(dir)).toEqual([])
    expect(await store.usage()).toEqual({ blocks: 1, bytes: 10 })
    // removing again is not an error, and frees nothing
    expect(await store.remove([{ name: blockName(cids[0] as CID) }])).toEqual({ removed: 0, freedBytes: 0 })
  })

  it('a commit packs a staged import\'s small blocks once (a block held already adds nothing); they outlive a reopen', async () => {
    const { dir, store } = await backend()
    const blocks = Array.from({ length: 300 }, (_, i) => randomBytes(1 + (i * 997) % PACKED_MAX))
    const stage = async (these: Buffer[]): Promise<{ added: number }> => {
      let added = 0
      const s = new BlockStaging(store, join(dir, 'staging'), (n) => { added += n })
      const staged = await s.begin()
      await Promise.all(these.map(async b => { await staged.blockstore.put(rawCid(b), Uint8Array.from(b)) }))
      await s.seal(staged)
      await s.commit(staged)
      return { added }
    }
    expect(await stage(blocks.slice(0, 200))).toEqual({ added: 200 })
    // the second import shares 100 blocks with the first
    expect(await stage(blocks.slice(100))).toEqual({ added: 100 })
    expect(files(dir)).toEqual([])
    expect(readdirSync(join(dir, 'staging'))).toEqual([])
    await store.close()
    open.splice(open.indexOf(store), 1)

    // a new process: everything is there, with its bytes
    const again = await backend(dir)
    expect(await again.store.usage()).toEqual({ blocks: 300, bytes: blocks.reduce((n, b) => n + b.byteLength, 0) })
    for (const b of blocks) expect(Buffer.from(await again.store.read(rawCid(b)) as Uint8Array).equals(b)).toBe(true)
  })

  it('a small block an earlier version stored as a file is read, listed, counted and removed as before', async () => {
    const { dir, store } = await backend()
    const old = randomBytes(500)
    const legacy = new FsBlockstore(join(dir, 'blocks'))
    await legacy.open()
    await legacy.put(rawCid(old), old)
    const packed = randomBytes(600)
    await store.put(rawCid(packed), packed)
    expect(files(dir)).toHaveLength(1)
    expect(Buffer.from(await store.read(rawCid(old)) as Uint8Array).equals(old)).toBe(true)
    expect((await bytesOf(store, rawCid(old))).equals(old)).toBe(true)
    expect(await names(store)).toEqual([blockName(rawCid(old)), blockName(rawCid(packed))].sort())
    expect(await store.usage()).toEqual({ blocks: 2, bytes: 1100 })
    expect(await store.remove([{ name: blockName(rawCid(old)) }, { name: blockName(rawCid(packed)) }])).toEqual({ removed: 2, freedBytes: 1100 })
    expect(files(dir)).toEqual([])
    expect(await names(store)).toEqual([])
  })

  it('a backend never opened (an admin command\'s) reads what the serve\'s wrote, and creates nothing when there is nothing', async () => {
    const { dir, store } = await backend()
    const empty = tempDir('pind-small-blocks-')
    dirs.push(empty)
    const idle = new FsBackend(join(empty, 'blocks'))
    expect(await idle.read(rawCid(Buffer.from('x')))).toBeUndefined()
    expect(await idle.usage()).toEqual({ blocks: 0, bytes: 0 })
    expect(existsSync(join(empty, 'blocks'))).toBe(false)
    await idle.close()

    const b = randomBytes(2000)
    await store.put(rawCid(b), b)
    const reader = new FsBackend(join(dir, 'blocks'))
    try {
      expect(Buffer.from(await reader.read(rawCid(b)) as Uint8Array).equals(b)).toBe(true)
      expect(await reader.blockstore.has(rawCid(b))).toBe(true)
    } finally {
      await reader.close()
    }
    // the serve's store still works after the other closed
    expect(Buffer.from(await store.read(rawCid(b)) as Uint8Array).equals(b)).toBe(true)
  })
})
