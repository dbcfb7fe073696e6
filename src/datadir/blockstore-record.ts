/**
 * Which block backend a data dir uses, recorded in <data-dir>/blockstore.json
 * (no credentials in it, ever). Absent: the blocks are on disk in blocks/.
 * `pind serve --blockstore s3` writes it on a data dir that holds no blocks on
 * disk yet; `pind blocks migrate --to s3` writes it once every block is in
 * the bucket and verified. From then on the data dir is served from that
 * bucket and prefix: a different bucket or prefix, or --blockstore fs, is
 * refused rather than serving an empty store.
 *
 * Written atomically (temporary file, fsync, rename, fsync of the folder).
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'

export interface S3Record {
  /** absent: AWS S3 itself */
  endpoint?: string
  bucket: string
  prefix: string
  region: string
  forcePathStyle: boolean
}

export interface BlockstoreRecord {
  backend: 'fs' | 's3'
  s3?: S3Record
  /** when this backend was recorded (UTC) */
  since: string
  /** how: a fresh data dir, or a migration from disk */
  how: 'new' | 'migrated'
}

export class BlockstoreRecordError extends Error {
  override name = 'BlockstoreRecordError'
}

export function readBlockstoreRecord (path: string): BlockstoreRecord | undefined {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new BlockstoreRecordError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  let rec: Partial<BlockstoreRecord>
  try {
    rec = JSON.parse(text) as Partial<BlockstoreRecord>
  } catch {
    throw new BlockstoreRecordError(`${path} is not valid JSON`)
  }
  if (rec.backend === 'fs') return rec as BlockstoreRecord
  const s3 = rec.s3
  if (rec.backend !== 's3' || s3 == null || typeof s3.bucket !== 'string' || typeof s3.prefix !== 'string' || typeof s3.region !== 'string' || typeof s3.forcePathStyle !== 'boolean') {
    throw new BlockstoreRecordError(`${path} does not describe a block backend ({"backend":"s3","s3":{"bucket","prefix","region","forcePathStyle"}})`)
  }
  return rec as BlockstoreRecord
}

export function writeBlockstoreRecord (path: string, rec: BlockstoreRecord): void {
  const tmp = `${path}.${process.pid}.tmp`
  const fd = openSync(tmp, 'w', 0o600)
  try {
    writeSync(fd, JSON.stringify(rec, null, 2) + '\n')
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, path)
  const dir = openSync(dirname(path), 'r')
  try { fsyncSync(dir) } finally { closeSync(dir) }
}
