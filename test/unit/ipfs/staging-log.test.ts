/**
 * The staging log (one append-only file per import, the S3 backend's
 * staging): flushed behind the import, seal and commit wait for the tail, and
 * after a crash a sealed log is taken over block by block, each checked
 * against its CID's hash: a torn tail or a damaged record is never committed.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { CID } from 'multiformats/cid'
import { rawCid } from '../../../scripts/peer/index.mjs'
import { blockName } from '../../../src/ipfs/block-backend.js'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { PACKED_MAX } from '../../../src/ipfs/small-blocks.js'
import { BlockStaging, UnusableImportError, type StagedImport } from '../../../src/ipfs/staging.js'
import { SYNC_EVERY } from '../../../src/ipfs/staging-log.js'
import { fileHandleProto, holdDatasyncs } from '../../helpers/file-handle.js'

const dirs: string[] = []
afterEach(() => {
  vi.restoreAllMocks()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function tempDir (): string {
  const dir = mkdtempSync(join(tmpdir(), 'pind-staging-log-'))
  dirs.push(dir)
  return dir
}

/** staging in `dir` that writes logs, committing to blocks on disk in dir/blocks */
function logStaging (dir: string): { staging: BlockStaging, store: FsBackend } {
  const store = new FsBackend(join(dir, 'blocks'))
  return { staging: new BlockStaging(store, join(dir, 'staging'), undefined, () => 'log'), store }
}

async function stage (staging: BlockStaging, blocks: Buffer[]): Promise<{ staged: StagedImport, cids: CID[] }> {
  const staged = await staging.begin()
  const cids = blocks.map(b => rawCid(b))
  // the importer's way: several puts at once
  await Promise.all(blocks.map(async (b, i) => { await staged.blockstore.put(cids[i] as CID, b) }))
  return { staged, cids }
}

const logOf = (dir: string, staged: { id: string }): string => join(dir, 'staging', staged.id, 'blocks.log')

/** two blocks staged and sealed in a log of a fresh folder, as a crash would leave them before the commit */
async function sealedTwoBlocks (): Promise<{ dir: string, first: ReturnType<typeof logStaging>, blocks: Buffer[], staged: StagedImport, cids: CID[] }> {
  const dir = tempDir()
  const first = logStaging(dir)
  const blocks = [randomBytes(5000), randomBytes(6000)]
  const { staged, cids } = await stage(first.staging, blocks)
  await first.staging.seal(staged)
  return { dir, first, blocks, staged, cids }
}

describe('staging log', () => {
  it('an import bound for the disk stages its small blocks in the log (packed on commit) and each larger one in a file of its own (moved on commit)', async () => {
    const dir = tempDir()
    const store = new FsBackend(join(dir, 'blocks'))
    await store.open()
    const staging = new BlockStaging(store, join(dir, 'staging'))
    const small = [randomBytes(1000), randomBytes(PACKED_MAX)]
    const large = randomBytes(PACKED_MAX + 1)
    const { staged, cids } = await stage(staging, [...small, large])
    const files = readdirSync(join(dir, 'staging', staged.id)).sort()
    expect(files).toHaveLength(2)
    expect(files[0]).toMatch(/^[A-Z2-7]+\.data$/)
    expect(files[1]).toBe('blocks.log')
    expect(statSync(join(dir, 'staging', staged.id, files[0] as string)).size).toBe(large.byteLength)
    await staging.commit(staged)
    // the larger block is a file in its shard; the small ones are in small.mdb, not files
    const blockFiles = readdirSync(join(dir, 'blocks'), { recursive: true }).map(String).filter(f => f.endsWith('.data'))
    expect(blockFiles).toEqual([join(blockName(cids[2] as CID).slice(-2), `${blockName(cids[2] as CID)}.data`)])
    for (const [i, b] of [...small, large].entries()) expect(Buffer.from(await store.read(cids[i] as CID) as Uint8Array).equals(b)).toBe(true)
    expect(await store.usage()).toEqual({ blocks: 3, bytes: 1000 + PACKED_MAX + PACKED_MAX + 1 })
    await store.close()
  })

  it('one file per import; flushed behind the import every SYNC_EVERY bytes; seal and commit wait for the tail', async () => {
    const held = await holdDatasyncs()
    const dir = tempDir()
    const { staging, store } = logStaging(dir)
    const staged = await staging.begin()
    const block = (): Buffer => randomBytes(1_048_576)
    const perFlush = Math.ceil(SYNC_EVERY / (1_048_576 + 100))
    for (let i = 0; i < perFlush - 1; i++) { const b = block(); await staged.blockstore.put(rawCid(b), b) }
    expect(held.started()).toBe(0)
    // the block that passes SYNC_EVERY starts a flush; the put does not wait for it, nor do the next
    for (let i = 0; i < 3; i++) { const b = block(); await staged.blockstore.put(rawCid(b), b) }
    expect(held.started()).toBe(1)
    expect(readdirSync(join(dir, 'staging', staged.id))).toEqual(['blocks.log'])
    let sealed = false
    const seal = staging.seal(staged).then(() => { sealed = true })
    await new Promise(resolve => setTimeout(resolve, 50))
    expect(sealed).toBe(false)
    // the tail written after the first flush began gets a flush of its own, started at once beside it
    expect(held.started()).toBe(2)
    held.release()
    await seal
    expect(held.started()).toBe(2)
    await staging.commit(staged)
    expect(staged.cids).toHaveLength(perFlush + 2)
    for (const cid of staged.cids) expect(await store.read(cid)).toBeDefined()
    expect(existsSync(join(dir, 'staging', staged.id))).toBe(false)
  })

  it('a failed flush fails seal and commit: nothing is settled or committed', async () => {
    const proto = await fileHandleProto()
    vi.spyOn(proto, 'datasync').mockImplementation(async () => { throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }) })
    const dir = tempDir()
    const { staging, store } = logStaging(dir)
    const { staged, cids } = await stage(staging, [randomBytes(1000)])
    await expect(staging.seal(staged)).rejects.toThrow(/EIO/)
    await expect(staging.commit(staged)).rejects.toThrow(/EIO/)
    expect(await store.read(cids[0] as CID)).toBeUndefined()
    // what the store readied behind the import (a shard folder) ends before the folder is removed
    await staged.prepared()
    await staging.discard(staged)
  })

  it('the same block twice is written once; a staged block reads back', async () => {
    const dir = tempDir()
    const { staging } = logStaging(dir)
    const b = randomBytes(3000)
    const { staged, cids } = await stage(staging, [b, b, randomBytes(10)])
    expect(staged.cids).toHaveLength(2)
    expect(new Set(staged.cids.map(String))).toEqual(new Set(cids.map(String)))
    expect(await staged.blockstore.has(cids[0] as CID)).toBe(true)
    const chunks: Uint8Array[] = []
    for await (const c of staged.blockstore.get(cids[0] as CID)) chunks.push(c)
    expect(Buffer.concat(chunks).equals(b)).toBe(true)
    await staging.seal(staged)
    expect(statSync(logOf(dir, staged)).size).toBe(2 * 12 + 2 * 36 + 3000 + 10)
    await staging.discard(staged)
  })

  it('after a crash, a sealed log is taken over block by block; a torn tail is not a block', async () => {
    const dir = tempDir()
    const blocks = [randomBytes(200_000), randomBytes(300_000), randomBytes(400_000)]
    const first = logStaging(dir)
    const staged = await first.staging.begin()
    const cids = blocks.map(b => rawCid(b))
    // written in order, so that the last block is the file's tail
    for (const [i, b] of blocks.entries()) await staged.blockstore.put(cids[i] as CID, b)
    await first.staging.seal(staged)
    const log = logOf(dir, staged)
    const size = statSync(log).size
    // the next process: the note keeps the folder, and the takeover checks every block
    const { staging, store } = logStaging(dir)
    expect(await staging.sweepLeftovers(new Set([staged.id]))).toBe(0)
    // the last record cut short; or, in its place, bytes that are no record (a write reserved but never made)
    for (const tear of [() => { truncateSync(log, size - 1000) }, () => { truncateSync(log, size - 400_048); writeFileSync(log, Buffer.alloc(4096), { flag: 'a' }) }]) {
      tear()
      const err = await staging.adopt(staged.id, cids).catch((e: Error) => e)
      expect(err).toBeInstanceOf(UnusableImportError)
      expect((err as Error).message).toBe(`block ${String(cids[2])} is neither staged nor in the blockstore`)
    }
    // what is whole is usable, and commits as files of their own in the blockstore
    const adopted = await staging.adopt(staged.id, cids.slice(0, 2))
    expect(adopted.bytes).toBe(500_000)
    await staging.commit(adopted)
    for (const [i, cid] of cids.slice(0, 2).entries()) expect(Buffer.from(await store.read(cid) as Uint8Array).equals(blocks[i] as Buffer)).toBe(true)
    expect(await store.read(cids[2] as CID)).toBeUndefined()
    expect(readdirSync(join(dir, 'staging'))).toEqual([])
  })

  it('a record whose bytes do not hash to its CID is refused, and nothing is committed', async () => {
    const { dir, first, blocks, staged, cids } = await sealedTwoBlocks()
    // one byte of the second block's bytes flipped on disk
    const log = logOf(dir, staged)
    const bytes = readFileSync(log)
    const at = bytes.indexOf((blocks[1] as Buffer).subarray(0, 64)) + 100
    bytes[at] = (bytes[at] as number) ^ 0xff
    writeFileSync(log, bytes)
    const { staging, store } = logStaging(dir)
    await expect(staging.adopt(staged.id, cids)).rejects.toThrow(`block ${String(cids[1])} does not hash to its CID`)
    expect(await store.usage()).toEqual({ blocks: 0, bytes: 0 })
  })

  it('blocks committed before the crash (the folder gone with them) are read back from the store and checked', async () => {
    const { dir, first, blocks, staged, cids } = await sealedTwoBlocks()
    await first.staging.commit(staged)
    const { staging } = logStaging(dir)
    const adopted = await staging.adopt(staged.id, cids)
    expect(adopted.cids).toEqual([])
    expect(adopted.bytes).toBe(11_000)
    await staging.commit(adopted)
  })
})
