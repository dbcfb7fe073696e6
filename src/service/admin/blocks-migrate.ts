/**
 * `pind blocks migrate --to s3` as a use case, for a stopped data dir and for
 * a running serve alike (see ipfs/migrate.ts for how blocks are copied,
 * verified and journalled). Once every block is in the bucket and verified,
 * under the commit lock, the data dir's record (blockstore.json) is switched
 * to the bucket, and a running serve switches its live backend: from then on
 * every read and commit goes to the bucket. The files in blocks/ are left for
 * the operator to remove.
 */
import { writeBlockstoreRecord } from '../../datadir/blockstore-record.js'
import type { BlockBackend } from '../../ipfs/block-backend.js'
import type { CommitLock } from '../../ipfs/commit-lock.js'
import { FsBackend } from '../../ipfs/fs-backend.js'
import { migrateBlocks, MigrateError, type MigrateProgress, type MigrateResult } from '../../ipfs/migrate.js'
import { recordOf } from '../../ipfs/open-backend.js'
import type { S3Backend } from '../../ipfs/s3-backend.js'
import type { S3Location } from '../../ipfs/s3-settings.js'
import type { PinLedger } from '../../ledger/pins.js'

export interface BlocksMigrateDeps {
  /** the backend in use: blocks on disk */
  current: () => BlockBackend
  /** connects to the target bucket (refuses one that does not answer) */
  openTarget: (location: S3Location) => Promise<S3Backend>
  lock: CommitLock
  paths: { migrateJournal: string, blockstoreRecord: string }
  /** the blocks the ledger references (checked against what was found on disk) */
  pins?: Pick<PinLedger, 'referencedBlocks'>
  /** a running serve: go on with the bucket from now on */
  switchTo?: (target: S3Backend) => void
}

export interface MigrateReport extends MigrateResult {
  bucket: string
  prefix: string
  endpoint: string | null
  /** the folder whose files are no longer used */
  blocksDir: string
}

export async function migrateToS3 (d: BlocksMigrateDeps, location: S3Location, onProgress?: (p: MigrateProgress) => void, signal?: AbortSignal): Promise<MigrateReport> {
  const source = d.current()
  if (!(source instanceof FsBackend)) throw new MigrateError(`this data dir keeps its blocks in S3 already (${source.describe()})`)
  const target = await d.openTarget(location)
  const pins = d.pins
  let switched = false
  try {
    const result = await migrateBlocks({
      source,
      target,
      journalPath: d.paths.migrateJournal,
      targetId: `${location.endpoint ?? 'aws'} ${location.bucket} ${location.prefix}`,
      lock: d.lock,
      ...(pins != null ? { referenced: () => pins.referencedBlocks() } : {}),
      ...(onProgress != null ? { onProgress } : {}),
      ...(signal != null ? { signal } : {}),
      switchOver: async () => {
        writeBlockstoreRecord(d.paths.blockstoreRecord, { backend: 's3', s3: recordOf(location), since: new Date().toISOString(), how: 'migrated' })
        d.switchTo?.(target)
        switched = true
      }
    })
    return { ...result, bucket: location.bucket, prefix: location.prefix, endpoint: location.endpoint ?? null, blocksDir: source.dir }
  } finally {
    if (!switched || d.switchTo == null) await target.close()
  }
}
