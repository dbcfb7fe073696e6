/**
 * Which block backend a data dir uses, recorded in <data-dir>/blockstore.json
 * (no credentials in it, ever). Absent: the blocks are on disk in blocks/.
 * `pind serve --blockstore s3` writes it on a data dir that holds no blocks on
 * disk yet; `pind blocks migrate --to s3` writes it once every block is in
 * the bucket and verified. From then on the data dir is served from that
 * bucket and prefix: a different bucket or prefix, or --blockstore fs, is
 * refused rather than serving an empty store.
 *
 * Written atomically (./atomic-json.ts).
 */
import { readJsonRecord, writeJsonAtomically } from './atomic-json.js'

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
  const rec = readJsonRecord(path, (m) => new BlockstoreRecordError(m)) as Partial<BlockstoreRecord> | undefined
  if (rec == null) return undefined
  if (rec.backend === 'fs') return rec as BlockstoreRecord
  const s3 = rec.s3
  if (rec.backend !== 's3' || s3 == null || typeof s3.bucket !== 'string' || typeof s3.prefix !== 'string' || typeof s3.region !== 'string' || typeof s3.forcePathStyle !== 'boolean') {
    throw new BlockstoreRecordError(`${path} does not describe a block backend ({"backend":"s3","s3":{"bucket","prefix","region","forcePathStyle"}})`)
  }
  return rec as BlockstoreRecord
}

export function writeBlockstoreRecord (path: string, rec: BlockstoreRecord): void {
  writeJsonAtomically(path, rec)
}
