/**
 * Staged blocks are flushed to disk behind the import: a put returns once its
 * bytes are written, its fdatasync runs on, and `seal` (before a payment
 * settles) and `commit` wait for every one of them and fail if one failed.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import type { BlockBackend } from '../../../src/ipfs/block-backend.js'
import { BlockStaging } from '../../../src/ipfs/staging.js'
import { fileHandleProto, holdDatasyncs } from '../../helpers/file-handle.js'

const dirs: string[] = []
afterEach(() => {
  vi.restoreAllMocks()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function setup (): { staging: BlockStaging, committed: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'pind-staging-sync-'))
  dirs.push(dir)
  const committed: string[] = []
  const store = { commit: async (files: Array<{ cid: { toString: () => string } }>) => { committed.push(...files.map(f => f.cid.toString())); return { added: files.length, addedBytes: 0 } } } as unknown as BlockBackend
  return { staging: new BlockStaging(store, dir), committed }
}

describe('staging fdatasync', () => {
  it('a put returns before its block is flushed; seal and commit wait for every flush', async () => {
    const held = await holdDatasyncs()
    const { staging, committed } = setup()
    const staged = await staging.begin()
    const blocks = Array.from({ length: 5 }, () => randomBytes(1000))
    for (const b of blocks) await staged.blockstore.put(rawCid(b), b)
    expect(held.started()).toBe(5)
    let sealed = false
    const seal = staging.seal(staged).then(() => { sealed = true })
    let done = false
    const commit = staging.commit(staged).then(() => { done = true })
    await new Promise(resolve => setTimeout(resolve, 50))
    expect(sealed).toBe(false)
    expect(done).toBe(false)
    expect(committed).toEqual([])
    held.release()
    await seal
    await commit
    expect(committed.length).toBe(5)
  })

  it('a failed flush fails seal and commit: nothing is settled or committed', async () => {
    const proto = await fileHandleProto()
    vi.spyOn(proto, 'datasync').mockImplementation(async () => { throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }) })
    const { staging, committed } = setup()
    const staged = await staging.begin()
    const b = randomBytes(1000)
    await staged.blockstore.put(rawCid(b), b)
    await expect(staging.seal(staged)).rejects.toThrow(/EIO/)
    await expect(staging.commit(staged)).rejects.toThrow(/EIO/)
    expect(committed).toEqual([])
  })
})
