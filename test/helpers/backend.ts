/**
 * The block backend a test file runs against: `fs` (blocks/ on disk), or `s3`
 * when the vitest project `s3` runs it (PIND_TEST_BLOCKSTORE=s3, see
 * test/vitest.config.ts) — then against the run's Ceph RADOS Gateway
 * (test/helpers/s3-server.ts), each pind in a bucket of its own.
 */
import { randomBytes } from 'node:crypto'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { CreateBucketCommand } from '@aws-sdk/client-s3'
import { inject } from 'vitest'
import { s3Client } from '../../scripts/s3/index.mjs'
import { silentLogger } from '../../src/kernel/log.js'
import { packedBlocksIn, SMALL_BLOCKS_FILE } from '../../src/ipfs/small-blocks.js'
import type { S3Backend } from '../../src/ipfs/s3-backend.js'

export type Blockstore = 'fs' | 's3'
export const BLOCKSTORE: Blockstore = process.env.PIND_TEST_BLOCKSTORE === 's3' ? 's3' : 'fs'
export const S3_PREFIX = 'blocks/'

/** the run's S3 server (project s3 only) */
export const s3 = (): ReturnType<typeof inject<'s3'>> => inject('s3')

let client: ReturnType<typeof s3Client> | undefined
export const s3c = (): ReturnType<typeof s3Client> => (client ??= s3Client(s3()))

/** A new, empty bucket with a name no other test uses. */
export async function newBucket (): Promise<string> {
  const name = `t${process.pid}-${randomBytes(5).toString('hex')}`
  await s3c().send(new CreateBucketCommand({ Bucket: name }))
  return name
}

export interface BlockstoreUnderTest {
  kind: Blockstore
  /** flags for pind (serve and admin commands) */
  args: string[]
  /** environment for pind: the S3 credentials */
  env: Record<string, string>
  bucket?: string
  /** block objects (s3), or blocks on disk (fs: files and packed small blocks) stored for a data dir */
  count(dataDir: string): Promise<number>
}

/** What pind needs to run on `kind` (default: this project's backend), with a fresh bucket for s3. */
export async function blockstoreUnderTest (kind: Blockstore = BLOCKSTORE): Promise<BlockstoreUnderTest> {
  if (kind === 'fs') return { kind, args: [], env: {}, count: async (dataDir) => diskBlocks(join(dataDir, 'blocks')) }
  const server = s3()
  const bucket = await newBucket()
  return {
    kind,
    bucket,
    args: ['--blockstore', 's3', '--s3-endpoint', server.endpoint, '--s3-bucket', bucket, '--s3-force-path-style'],
    env: { PIND_S3_ACCESS_KEY_ID: server.accessKeyId, PIND_S3_SECRET_ACCESS_KEY: server.secretAccessKey },
    count: async () => (await bucketKeys(bucket, S3_PREFIX)).length
  }
}

export async function bucketKeys (bucket: string, prefix = ''): Promise<string[]> {
  const { ListObjectsV2Command } = await import('@aws-sdk/client-s3')
  const keys: string[] = []
  let token: string | undefined
  do {
    const r = await s3c().send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }))
    for (const o of r.Contents ?? []) keys.push(o.Key as string)
    token = r.IsTruncated === true ? r.NextContinuationToken : undefined
  } while (token != null)
  return keys
}

/** An S3Backend in this process, on a fresh bucket of the run's server. */
export async function s3Backend (opts: { bucket?: string, prefix?: string, cacheDir?: string, cacheSize?: number, verifyReads?: boolean } = {}): Promise<S3Backend> {
  const { openS3Backend } = await import('../../src/ipfs/open-backend.js')
  const server = s3()
  const bucket = opts.bucket ?? await newBucket()
  return await openS3Backend({ endpoint: server.endpoint, bucket, prefix: opts.prefix ?? S3_PREFIX, region: server.region, forcePathStyle: true },
    { s3AccessKeyId: server.accessKeyId, s3SecretAccessKey: server.secretAccessKey, s3CacheSize: opts.cacheSize ?? 0, ...(opts.verifyReads != null ? { s3VerifyReads: opts.verifyReads } : {}) },
    { blocksDir: '/nonexistent', cacheDir: opts.cacheDir ?? '/nonexistent', log: silentLogger, requireReachable: true })
}

/** The blocks a disk backend's folder holds: block files, and small blocks packed in small.mdb (src/ipfs/small-blocks.ts). */
export function diskBlocks (dir: string): number {
  let n = 0
  for (const d of readdirSync(dir)) {
    const p = join(dir, d)
    if (statSync(p).isDirectory()) n += readdirSync(p).filter(f => f.endsWith('.data')).length
  }
  return n + packedBlocksIn(join(dir, SMALL_BLOCKS_FILE))
}
