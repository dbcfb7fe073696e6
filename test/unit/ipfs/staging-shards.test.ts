/**
 * On disk, the shard folders a staged import's blocks go to are made while
 * the import runs (the store's `prepare`), so that the commit after the
 * payment only renames: the folders, and no block, are in blocks/ before
 * the commit.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NextToLast } from 'blockstore-fs/sharding'
import { afterEach, describe, expect, it } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { BlockStaging } from '../../../src/ipfs/staging.js'
import { SwitchableBackend } from '../../../src/ipfs/switchable-backend.js'

const SHARDING = new NextToLast()
const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

async function setup (): Promise<{ blocksDir: string, staging: BlockStaging, store: FsBackend }> {
  const dir = mkdtempSync(join(tmpdir(), 'pind-staging-shards-'))
  dirs.push(dir)
  const store = new FsBackend(join(dir, 'blocks'))
  await store.open()
  // as serve hands it to staging
  const staging = new BlockStaging(new SwitchableBackend(store), join(dir, 'staging'))
  return { blocksDir: join(dir, 'blocks'), staging, store }
}

describe('shard folders made ahead of the commit', () => {
  it('a staged block\'s shard folder is in blocks/ before the commit, the block only after it', async () => {
    const { blocksDir, staging, store } = await setup()
    const staged = await staging.begin()
    const blocks = Array.from({ length: 8 }, () => randomBytes(1000))
    for (const b of blocks) await staged.blockstore.put(rawCid(b), b)
    await staged.prepared()
    for (const b of blocks) {
      const shard = join(blocksDir, SHARDING.encode(rawCid(b)).dir)
      expect(existsSync(shard)).toBe(true)
      expect(readdirSync(shard)).toEqual([])
      expect(await store.read(rawCid(b))).toBeUndefined()
    }
    await staging.seal(staged)
    await staging.commit(staged)
    for (const b of blocks) expect(Buffer.from(await store.read(rawCid(b)) as Uint8Array).equals(b)).toBe(true)
  })

  it('prepare makes the folders and stores nothing; put and commit then write into them', async () => {
    const { blocksDir, store } = await setup()
    const b = randomBytes(100)
    const shard = join(blocksDir, SHARDING.encode(rawCid(b)).dir)
    await store.prepare([rawCid(b)])
    expect(readdirSync(shard)).toEqual([])
    expect(await store.put(rawCid(b), b)).toBe(true)
    expect(Buffer.from(await store.read(rawCid(b)) as Uint8Array).equals(b)).toBe(true)
  })
})
