/**
 * One import's staged blocks as one file per block, named as in the
 * blockstore, in one flat folder (the staging of blocks bound for the disk
 * backend: see staging.ts). The commit renames each file into its shard, so
 * the bytes are written once.
 *
 * A staged block is written straight to its name inside `put`, while the
 * body is still arriving (blockstore-fs writes a temp file and renames it,
 * and never fsyncs). The temp-and-rename step is not needed here: nothing
 * else reads a staging folder, a failed write removes its file, and a crash
 * leaves the whole folder to the start-up sweep. Each block's fdatasync
 * starts as soon as its bytes are written and runs behind the import (at
 * most MAX_SYNCING at once per import), so the disk flushes while the body
 * streams in instead of holding up the importer; `synced` waits for every
 * one of them (and fails if one failed).
 */
import { open, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { FsBlockstore } from 'blockstore-fs'
import { NextToLast, type ShardingStrategy } from 'blockstore-fs/sharding'
import type { CID } from 'multiformats/cid'
import type { StagedBlock } from './block-backend.js'

/** the blockstore's layout */
const SHARDING = new NextToLast()
/**
 * A staging folder is flat: the blockstore's file names with no shard
 * directories (one import has no need for them, and each would be one more
 * mkdir and rmdir); a commit renames each file into its shard.
 */
export const FLAT: ShardingStrategy = {
  extension: SHARDING.extension,
  encode: (cid) => ({ dir: '', file: SHARDING.encode(cid).file }),
  decode: (path) => SHARDING.decode(path)
}
/** staged blocks of one import whose fdatasync is still running (each holds a file handle): a put waits below this */
const MAX_SYNCING = 32

/** An FsBlockstore whose `put` writes the final file directly and fsyncs it behind the import (see above). */
export class StagingFiles extends FsBlockstore {
  private readonly writing = new Map<string, Promise<void>>()
  /** file name → the block written there (this process's writes, or those found by `adopt`) */
  private readonly written = new Map<string, { cid: CID, size: number }>()
  /** fdatasyncs under way (they never reject: a failure is kept in syncError) */
  private readonly syncing = new Set<Promise<void>>()
  private syncError: unknown

  /** `onWritten` is told of each block once its file is written */
  constructor (private readonly root: string, private readonly onWritten?: (cid: CID, size: number) => void) {
    super(root, { shardingStrategy: FLAT })
  }

  override async put (cid: CID, bytes: Uint8Array): Promise<CID> {
    const file = FLAT.encode(cid).file
    const path = join(this.root, file)
    // the same block twice in one DAG (runs of zeros): written and counted once; the second
    // waits for the first write if it is still under way
    if (this.written.has(file)) return cid
    const inFlight = this.writing.get(path)
    if (inFlight != null) {
      await inFlight
      return cid
    }
    const done = this.write(path, bytes)
    this.writing.set(path, done)
    try {
      await done
    } finally {
      this.writing.delete(path)
    }
    this.written.set(file, { cid, size: bytes.byteLength })
    this.onWritten?.(cid, bytes.byteLength)
    return cid
  }

  /** A block found in this folder by a takeover (see staging.ts adopt). */
  found (cid: CID, size: number): void {
    this.written.set(FLAT.encode(cid).file, { cid, size })
  }

  /** The blocks held, each once, as the block backend's commit takes them. */
  blocks (): StagedBlock[] {
    return [...this.written].map(([file, b]) => ({ cid: b.cid, path: join(this.root, file), offset: 0, size: b.size, whole: true }))
  }

  /** Every block written so far is on disk; throws the first fdatasync failure. */
  async synced (): Promise<void> {
    while (this.syncing.size > 0) await Promise.all([...this.syncing])
    if (this.syncError != null) throw this.syncError
  }

  private async write (path: string, bytes: Uint8Array): Promise<void> {
    while (this.syncing.size >= MAX_SYNCING) await Promise.race(this.syncing)
    if (this.syncError != null) throw this.syncError
    let fh
    try {
      fh = await open(path, 'wx')
    } catch (err) {
      // written by an earlier attempt (a pin fetch resumes into the same staging folder)
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return
      throw err
    }
    try {
      // one write call (fh.writeFile writes in pieces of 512 KiB: two trips through the thread pool per block)
      for (let at = 0; at < bytes.byteLength;) at += (await fh.write(bytes, at, bytes.byteLength - at, at)).bytesWritten
    } catch (err) {
      await fh.close().catch(() => {})
      await unlink(path).catch(() => {})
      throw err
    }
    // the bytes are in the page cache (and the chunk buffer free again): the flush to disk runs behind the import
    const handle = fh
    const sync: Promise<void> = handle.datasync()
      .catch((err: unknown) => { this.syncError ??= err })
      .finally(async () => {
        await handle.close().catch(() => {})
        this.syncing.delete(sync)
      })
    this.syncing.add(sync)
  }
}
