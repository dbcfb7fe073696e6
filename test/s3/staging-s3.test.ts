/**
 * Staging for the S3 backend on the run's Ceph RADOS Gateway, in-process: an
 * import bound for the bucket is staged as one log (staging-log.ts), committed
 * by PUTs read from it by offset (and copied into the read cache); files staged
 * one per block (an import begun on disk before a migration switched to S3)
 * commit too; and after a crash a sealed log is taken over and committed, while
 * a torn one puts nothing in the bucket.
 */
import { mkdtempSync, readdirSync, rmSync, statSync, truncateSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { blockName } from '../../src/ipfs/block-backend.js'
import { importFile } from '../../src/ipfs/import.js'
import type { S3Backend } from '../../src/ipfs/s3-backend.js'
import { BlockStaging, UnusableImportError, type StagingLayout } from '../../src/ipfs/staging.js'
import { bucketKeys, newBucket, s3Backend, S3_PREFIX } from '../helpers/backend.js'

const cleanup: Array<() => Promise<void>> = []
afterEach(async () => { for (const c of cleanup.splice(0)) await c() })

async function setup (opts: { cache?: boolean } = {}): Promise<{ dir: string, bucket: string, backend: S3Backend }> {
  const dir = mkdtempSync(join(tmpdir(), 'pind-staging-s3-'))
  const bucket = await newBucket()
  const backend = await s3Backend({ bucket, ...(opts.cache === true ? { cacheDir: join(dir, 'cache'), cacheSize: 64 * 1_048_576 } : {}) })
  cleanup.push(async () => { await backend.close(); rmSync(dir, { recursive: true, force: true }) })
  return { dir, bucket, backend }
}

async function stageUpload (staging: BlockStaging, bytes: Uint8Array): Promise<Awaited<ReturnType<BlockStaging['begin']>>> {
  const staged = await staging.begin()
  await importFile((async function * () { yield bytes })(), { blockstore: staged.blockstore, chunker: staged.chunker(), maxBytes: bytes.length })
  await staging.seal(staged)
  return staged
}

describe('staging for S3', () => {
  it.each([['log', ['blocks.log']], ['files', undefined]] as Array<[StagingLayout, string[] | undefined]>)('commits an import staged as %s to the bucket, and the blocks into the read cache', async (layout, files) => {
    const { dir, bucket, backend } = await setup({ cache: true })
    // the default for an S3 backend is the log
    const staging = new BlockStaging(backend, join(dir, 'staging'), undefined, layout === 'log' ? undefined : () => layout)
    const bytes = randomBytes(3_500_000)
    const staged = await stageUpload(staging, bytes)
    if (files != null) expect(readdirSync(join(dir, 'staging', staged.id))).toEqual(files)
    expect(await bucketKeys(bucket)).toEqual([])
    await staging.commit(staged)
    const names = staged.cids.map(c => blockName(c))
    expect((await bucketKeys(bucket)).sort()).toEqual(names.map(n => `${S3_PREFIX}${n}`).sort())
    let total = 0
    for (const cid of staged.cids) {
      const stored = await backend.readFromBucket(blockName(cid)) as Uint8Array
      total += stored.byteLength
      expect(backend.cache?.has(blockName(cid))).toBe(true)
      expect(Buffer.from(await backend.read(cid) as Uint8Array).equals(stored)).toBe(true)
    }
    expect(total).toBe(staged.bytes)
    expect(readdirSync(join(dir, 'staging'))).toEqual([])
  })

  it('after a crash, a sealed log is taken over and committed; a torn one puts nothing in the bucket', async () => {
    const { dir, bucket, backend } = await setup()
    const first = new BlockStaging(backend, join(dir, 'staging'))
    const whole = await stageUpload(first, randomBytes(2_500_000))
    const torn = await stageUpload(first, randomBytes(2_500_000))
    const log = join(dir, 'staging', torn.id, 'blocks.log')
    truncateSync(log, statSync(log).size - 1000)

    // the next process: the notes keep both folders, and the takeover checks every block
    const staging = new BlockStaging(backend, join(dir, 'staging'))
    expect(await staging.sweepLeftovers(new Set([whole.id, torn.id]))).toBe(0)
    await expect(staging.adopt(torn.id, torn.cids)).rejects.toThrow(UnusableImportError)
    expect(await bucketKeys(bucket)).toEqual([])
    const adopted = await staging.adopt(whole.id, whole.cids)
    expect(adopted.bytes).toBe(whole.bytes)
    await staging.commit(adopted)
    expect((await bucketKeys(bucket)).sort()).toEqual(whole.cids.map(c => `${S3_PREFIX}${blockName(c)}`).sort())
    expect(readdirSync(join(dir, 'staging'))).toEqual([torn.id])
  })
})
