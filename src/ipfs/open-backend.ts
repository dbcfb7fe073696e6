/**
 * Which block backend a data dir uses and how to open it: the settings
 * (--blockstore, --s3-*) against what the data dir records (blockstore.json,
 * see datadir/blockstore-record.ts). A data dir that keeps its blocks in a
 * bucket is never served from an empty disk, and a data dir with blocks on
 * disk does not switch to a bucket except by `pind blocks migrate`.
 */
import { opendirSync } from 'node:fs'
import { join } from 'node:path'
import { readBlockstoreRecord, writeBlockstoreRecord, type BlockstoreRecord, type S3Record } from '../datadir/blockstore-record.js'
import type { Logger } from '../kernel/log.js'
import type { BlockBackend } from './block-backend.js'
import { FsBackend } from './fs-backend.js'
import { packedBlocksIn, SMALL_BLOCKS_FILE } from './small-blocks.js'
import { ReadCache } from './read-cache.js'
import type { S3Backend } from './s3-backend.js'
import { readS3Credentials, type S3CredentialSources, type S3Location, type S3Observer } from './s3-settings.js'

export const DEFAULT_S3_PREFIX = 'blocks/'
export const DEFAULT_S3_REGION = 'us-east-1'

/** the settings that choose and reach the block backend (a subset of Config) */
export interface BlockstoreSettings extends S3CredentialSources {
  blockstore?: 'fs' | 's3'
  s3Endpoint?: string
  s3Bucket?: string
  s3Prefix?: string
  s3Region?: string
  s3ForcePathStyle?: boolean
  s3CacheSize: number
  /** the deadline of one S3 operation, seconds (default S3_TUNING.timeoutMs) */
  s3Timeout?: number
  /** hash every block read from the bucket (default false: the bucket this node wrote is trusted) */
  s3VerifyReads?: boolean
}

export type BackendChoice =
  | { kind: 'fs' }
  | { kind: 's3', location: S3Location, /** not recorded yet: a new data dir */ record: boolean }

export class BackendChoiceError extends Error {
  override name = 'BackendChoiceError'
}

/** The S3 location the settings name (bucket required), each value defaulted from `fallback`. */
export function s3LocationOf (s: BlockstoreSettings, fallback?: S3Record): S3Location {
  const bucket = s.s3Bucket ?? fallback?.bucket
  if (bucket == null) throw new BackendChoiceError('--s3-bucket (PIND_S3_BUCKET) is required with --blockstore s3')
  const endpoint = s.s3Endpoint ?? fallback?.endpoint
  return {
    ...(endpoint != null ? { endpoint } : {}),
    bucket,
    prefix: s.s3Prefix ?? fallback?.prefix ?? DEFAULT_S3_PREFIX,
    region: s.s3Region ?? fallback?.region ?? DEFAULT_S3_REGION,
    forcePathStyle: s.s3ForcePathStyle ?? fallback?.forcePathStyle ?? false
  }
}

export function recordOf (l: S3Location): S3Record {
  return { ...(l.endpoint != null ? { endpoint: l.endpoint } : {}), bucket: l.bucket, prefix: l.prefix, region: l.region, forcePathStyle: l.forcePathStyle }
}

/**
 * - recorded s3: served from the recorded bucket and prefix (the settings may
 *   change the endpoint, region and addressing, not which bucket or prefix);
 *   --blockstore fs is refused.
 * - nothing recorded (blocks on disk): --blockstore s3 is taken only while
 *   blocks/ holds no block (then it is recorded); otherwise it is refused
 *   with the way to migrate.
 */
export function chooseBackend (s: BlockstoreSettings, record: BlockstoreRecord | undefined, blocksDir: string): BackendChoice {
  if (record?.backend === 's3' && record.s3 != null) {
    const r = record.s3
    if (s.blockstore === 'fs') throw new BackendChoiceError(`this data dir keeps its blocks in S3 (bucket ${r.bucket}, prefix "${r.prefix}", see blockstore.json); --blockstore fs would serve none of them`)
    if (s.s3Bucket != null && s.s3Bucket !== r.bucket) throw new BackendChoiceError(`this data dir keeps its blocks in S3 bucket ${r.bucket}, not ${s.s3Bucket} (see blockstore.json)`)
    if (s.s3Prefix != null && s.s3Prefix !== r.prefix) throw new BackendChoiceError(`this data dir keeps its blocks under the prefix "${r.prefix}", not "${s.s3Prefix}" (see blockstore.json)`)
    return { kind: 's3', location: s3LocationOf(s, r), record: false }
  }
  if (s.blockstore !== 's3') return { kind: 'fs' }
  if (hasDiskBlocks(blocksDir)) {
    throw new BackendChoiceError(`this data dir keeps its blocks on disk (${blocksDir}); move them into the bucket first with: pind blocks migrate --to s3`)
  }
  return { kind: 's3', location: s3LocationOf(s), record: true }
}

export interface OpenOptions {
  blocksDir: string
  cacheDir: string
  log: Logger
  observer?: S3Observer
  /** refuse to open an S3 bucket that does not answer (admin commands); serve starts anyway and recovers */
  requireReachable?: boolean
}

export async function openBackend (choice: BackendChoice, s: BlockstoreSettings, o: OpenOptions): Promise<BlockBackend> {
  if (choice.kind === 'fs') {
    const fs = new FsBackend(o.blocksDir)
    await fs.open()
    return fs
  }
  return await openS3Backend(choice.location, s, o)
}

export async function openS3Backend (location: S3Location, s: BlockstoreSettings, o: OpenOptions): Promise<S3Backend> {
  // the AWS SDK loads only for a data dir whose blocks are in S3 (~100 ms of every start otherwise)
  const [{ S3Connection }, { S3Backend }] = await Promise.all([import('./s3-client.js'), import('./s3-backend.js')])
  const conn = new S3Connection(location, readS3Credentials(s), o.log.child({ component: 's3' }), s.s3Timeout != null ? { timeoutMs: s.s3Timeout * 1000 } : {})
  if (o.observer != null) conn.observer = o.observer
  try {
    await conn.check()
  } catch (err) {
    const why = conn.failure()
    if (o.requireReachable === true || /does not exist|HTTP 40[13]/.test(why)) {
      conn.close()
      throw new BackendChoiceError(`the S3 bucket ${location.bucket}${location.endpoint != null ? ` at ${location.endpoint}` : ''} cannot be used: ${why}`)
    }
    o.log.warn('the S3 bucket does not answer yet: starting anyway, writes answer 503 until it does', { bucket: location.bucket, reason: why, error: (err as Error).message })
  }
  const cache = s.s3CacheSize > 0 ? new ReadCache(o.cacheDir, s.s3CacheSize) : undefined
  return new S3Backend(conn, cache, { verifyReads: s.s3VerifyReads === true })
}

/**
 * The data dir's block backend, as its record and the settings say. `record`:
 * a new data dir chosen for S3 is recorded as such (serve); admin commands
 * never record.
 */
export async function openDataDirBackend (s: BlockstoreSettings, paths: { blocks: string, s3Cache: string, blockstoreRecord: string }, o: { log: Logger, observer?: S3Observer, record: boolean, requireReachable?: boolean }): Promise<BlockBackend> {
  const choice = chooseBackend(s, readBlockstoreRecord(paths.blockstoreRecord), paths.blocks)
  const backend = await openBackend(choice, s, { blocksDir: paths.blocks, cacheDir: paths.s3Cache, log: o.log, ...(o.observer != null ? { observer: o.observer } : {}), ...(o.requireReachable != null ? { requireReachable: o.requireReachable } : {}) })
  if (o.record && choice.kind === 's3' && choice.record) {
    writeBlockstoreRecord(paths.blockstoreRecord, { backend: 's3', s3: recordOf(choice.location), since: new Date().toISOString(), how: 'new' })
  }
  return backend
}

/** Does the blocks folder hold any block file? (stops at the first) */
/** whether blocks/ holds a block: a block file, or a small block packed in small.mdb */
export function hasDiskBlocks (blocksDir: string): boolean {
  if (packedBlocksIn(join(blocksDir, SMALL_BLOCKS_FILE)) > 0) return true
  let top
  try { top = opendirSync(blocksDir) } catch { return false }
  try {
    for (let d = top.readSync(); d != null; d = top.readSync()) {
      if (!d.isDirectory()) continue
      const shard = opendirSync(join(blocksDir, d.name))
      try {
        for (let f = shard.readSync(); f != null; f = shard.readSync()) if (f.isFile() && f.name.endsWith('.data')) return true
      } finally { shard.closeSync() }
    }
    return false
  } finally { top.closeSync() }
}
