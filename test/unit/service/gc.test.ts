/**
 * gc against a real block backend — a blockstore folder, or (vitest project
 * s3) a bucket of the run's Ceph RADOS Gateway — and a real LMDB ledger: a
 * block committed (commit lock held shared) while gc is between its mark and
 * its sweep is not deleted, nor one the mark missed that a pin references by
 * the time its batch is deleted; unreferenced blocks are, with exact byte counts;
 * a dry run changes nothing.
 */
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import type { BlockBackend } from '../../../src/ipfs/block-backend.js'
import { CommitLock } from '../../../src/ipfs/commit-lock.js'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { openLmdbLedger, type LmdbLedger } from '../../../src/ledger/lmdb/ledger.js'
import type { PinLedger } from '../../../src/ledger/pins.js'
import type { PinRecord } from '../../../src/ledger/records.js'
import { runGc } from '../../../src/service/background/gc.js'
import { DirectImports } from '../../../src/ipfs/direct-import.js'
import { InFlightBlocks } from '../../../src/ipfs/in-flight-blocks.js'
import { tempDir } from '../../helpers/pind.js'
import { pinRecord } from '../../helpers/records.js'
import { BLOCKSTORE, s3Backend } from '../../helpers/backend.js'

let dir: string
let ledger: LmdbLedger
let pins: PinLedger
let backend: BlockBackend

beforeEach(async () => {
  dir = tempDir('pind-gc-')
  ledger = await openLmdbLedger(join(dir, 'ledger.mdb'), { graceMs: () => 0 })
  pins = ledger.pins
  if (BLOCKSTORE === 's3') backend = await s3Backend()
  else {
    const fs = new FsBackend(join(dir, 'blocks'))
    await fs.open()
    backend = fs
  }
})
afterEach(async () => {
  await backend.close()
  await ledger.close()
  rmSync(dir, { recursive: true, force: true })
})

async function block (size: number): Promise<string> {
  const b = randomBytes(size)
  const cid = rawCid(b)
  await backend.blockstore.put(cid, b)
  return cid.toString()
}

const pin = (id: string, cid: string, extra: Partial<PinRecord> = {}): PinRecord => pinRecord(id, cid, { source: 'upload', ...extra })

describe('runGc', () => {
  it('removes unreferenced blocks and expired pins, exactly; a dry run changes nothing', async () => {
    const keep = await block(100)
    const drop = await block(200)
    const old = await block(300)
    await pins.create(pin('live', keep), undefined, [keep])
    await pins.create(pin('expired', old, { pinnedUntil: new Date(Date.now() - 1000).toISOString() }), undefined, [old])
    const deps = { pins, blocks: backend, lock: new CommitLock(), graceMs: 0 }
    const has = async (c: string): Promise<boolean> => await backend.blockstore.has(CID.parse(c))
    const dry = await runGc(deps, { dryRun: true })
    expect(dry).toMatchObject({ dryRun: true, expiredPins: 1, scannedBlocks: 3, removedBlocks: 2, freedBytes: 500 })
    expect([await has(keep), await has(drop), await has(old)]).toEqual([true, true, true])
    expect((await pins.get('expired'))?.removed).toBeUndefined()
    const real = await runGc(deps)
    expect(real).toMatchObject({ dryRun: false, expiredPins: 1, scannedBlocks: 3, removedBlocks: 2, freedBytes: 500, keptBlocks: 1 })
    expect((await pins.get('expired'))?.removed?.why).toBe('expired')
    expect([await has(keep), await has(drop), await has(old)]).toEqual([true, false, false])
  })

  it('keeps a block a pin references by the time its batch is deleted, though the mark missed it and no new reference was seen', async () => {
    // what lmdb's async commits allow: a transaction whose body ran (watchers fired) before gc watched,
    // committed after the mark read the ledger; the soak lost a fetched pin's four blocks so
    const kept = await block(100)
    const drop = await block(200)
    await pins.create(pin('live', kept), undefined, [kept])
    const stale: typeof pins = Object.assign(Object.create(pins) as PinLedger, { referencedBlocks: async function * (): AsyncGenerator<string> {} })
    const r = await runGc({ pins: stale, blocks: backend, lock: new CommitLock(), graceMs: 0 })
    expect(r).toMatchObject({ removedBlocks: 1, freedBytes: 200, keptBlocks: 1 })
    expect(await backend.blockstore.has(CID.parse(kept))).toBe(true)
    expect(await backend.blockstore.has(CID.parse(drop))).toBe(false)
  })

  it('keeps the blocks a settlement note holds for an upload still to be recorded, and frees them once the note is gone', async () => {
    const held = await block(100)
    const orphan = await block(200)
    let holding = [held]
    const deps = { pins, blocks: backend, lock: new CommitLock(), graceMs: 0, held: async () => holding }
    expect(await runGc(deps)).toMatchObject({ scannedBlocks: 2, removedBlocks: 1, freedBytes: 200, keptBlocks: 1, markedBlocks: 0 })
    expect(await backend.blockstore.has(CID.parse(held))).toBe(true)
    expect(await backend.blockstore.has(CID.parse(orphan))).toBe(false)
    holding = []
    expect(await runGc(deps)).toMatchObject({ removedBlocks: 1, freedBytes: 100 })
  })

  it('does not delete a block committed while it ran', async () => {
    const lock = new CommitLock()
    const fresh = await block(123) // stored by a commit that has not written its pin yet
    let gcDone = false
    let gc!: Promise<unknown>
    await lock.shared(async () => {
      gc = runGc({ pins, blocks: backend, lock, graceMs: 0 }).finally(() => { gcDone = true })
      // gc has marked and found `fresh` unreferenced; it now waits for the lock
      await new Promise(resolve => setTimeout(resolve, 100))
      expect(gcDone).toBe(false)
      await pins.create(pin('new', fresh), undefined, [fresh])
    })
    const result = await gc as { removedBlocks: number, keptBlocks: number }
    expect(result).toMatchObject({ removedBlocks: 0, keptBlocks: 1 })
    expect(await backend.blockstore.has(CID.parse(fresh))).toBe(true)
  })

  it('keeps blocks that uploads in flight wrote straight to the store, counted per upload, and frees them once both released them', async () => {
    const lock = new CommitLock()
    const inFlight = new InFlightBlocks(lock)
    const direct = new DirectImports(backend, inFlight)
    const [a, b] = [direct.begin(), direct.begin()]
    const bytes = randomBytes(1000)
    const shared = rawCid(bytes)
    // both uploads hold the same block (the second finds it stored already)
    await a.blockstore.put(shared, Uint8Array.from(bytes))
    await a.stored()
    await b.blockstore.put(shared, Uint8Array.from(bytes))
    await b.stored()
    const orphan = await block(200)
    const deps = { pins, blocks: backend, lock, graceMs: 0, inFlight }
    expect(await runGc(deps)).toMatchObject({ scannedBlocks: 2, removedBlocks: 1, keptBlocks: 1, freedBytes: 200 })
    expect(await backend.blockstore.has(CID.parse(orphan))).toBe(false)
    await a.release()
    expect(await runGc(deps)).toMatchObject({ removedBlocks: 0, keptBlocks: 1 })
    expect(await backend.blockstore.has(shared)).toBe(true)
    await b.release()
    expect(await runGc(deps)).toMatchObject({ removedBlocks: 1, freedBytes: 1000 })
  })

  it('a block an upload writes while gc waits to delete it (an orphan of the same content) is in the store afterwards', async () => {
    const lock = new CommitLock()
    const inFlight = new InFlightBlocks(lock)
    const direct = new DirectImports(backend, inFlight)
    const bytes = randomBytes(1500)
    const cid = rawCid(bytes)
    await backend.blockstore.put(cid, bytes) // left by an upload that failed
    const upload = direct.begin()
    let gc!: Promise<unknown>
    let put!: Promise<unknown>
    await lock.shared(async () => {
      gc = runGc({ pins, blocks: backend, lock, graceMs: 0, inFlight })
      // gc has found the orphan unreferenced and waits for the lock; the upload's write waits behind it
      await new Promise(resolve => setTimeout(resolve, 100))
      put = Promise.resolve(upload.blockstore.put(cid, Uint8Array.from(bytes)))
    })
    await gc
    await put
    await upload.stored()
    expect(await backend.blockstore.has(cid)).toBe(true)
    expect(Buffer.from(await backend.read(cid) as Uint8Array).equals(bytes)).toBe(true)
    await upload.release()
  })
})
