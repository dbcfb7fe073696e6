/**
 * Staged writes: an import writes its blocks into a private staging folder
 * (the blockstore's file names, in one flat folder), and only a commit moves
 * them into the blockstore. So:
 *   - a failed, refused (413) or unpaid import leaves nothing in the blockstore;
 *   - gc never sees half-imported DAGs (in-flight imports are invisible to it);
 *   - a crash leaves either a staging folder (removed at start) or committed,
 *     durable blocks — never a half-written block under a valid name.
 *
 * A staged block is written straight to its name inside `put`, while the
 * body is still arriving (blockstore-fs writes a temp file and renames it,
 * and never fsyncs). The temp-and-rename step is not needed here: nothing
 * else reads a staging folder, a failed write removes its file, and a crash
 * leaves the whole folder to the start-up sweep. Each block's fdatasync
 * starts as soon as its bytes are written and runs behind the import (at
 * most MAX_SYNCING at once per import), so the disk flushes while the body
 * streams in instead of holding up the importer; `seal` and `commit` wait
 * for every one of them (and fail if one failed), so nothing is settled or
 * committed before all of its blocks are on disk. The commit hands
 * the staged files to the block backend: on disk, only renames and directory
 * fsyncs, run in parallel so the file system can group them into few journal
 * commits; in S3, one PUT per block (see block-backend.ts). Whatever the
 * backend, nothing reaches the store before the commit, which the caller
 * makes only once the upload is paid or the fetched DAG complete.
 *
 * Commits run under the blockstore's commit lock so gc (which takes it
 * exclusively) never sweeps between a commit and its ledger record.
 */
import { createHash, randomUUID } from 'node:crypto'
import { mkdir, open, readdir, readFile, rm, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { FsBlockstore } from 'blockstore-fs'
import { NextToLast, type ShardingStrategy } from 'blockstore-fs/sharding'
import type { CID } from 'multiformats/cid'
import type { BlockBackend } from './block-backend.js'
import { ChunkPool, type Chunker } from './chunk-pool.js'
import { fsyncPath } from './fs-backend.js'
import { CHUNK_SIZE, type ImportTarget } from './import.js'

/** the blockstore's layout */
const SHARDING = new NextToLast()
/**
 * A staging folder is flat: the blockstore's file names with no shard
 * directories (one import has no need for them, and each would be one more
 * mkdir and rmdir); a commit renames each file into its shard.
 */
const FLAT: ShardingStrategy = {
  extension: SHARDING.extension,
  encode: (cid) => ({ dir: '', file: SHARDING.encode(cid).file }),
  decode: (path) => SHARDING.decode(path)
}
/** a staging folder's name (begin's randomUUID): nothing read back from a note escapes the folder */
const STAGING_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** the sha2-256 multihash code: the only hash this service writes */
const SHA2_256 = 0x12
/**
 * idle chunk buffers kept between uploads: about what one import has in
 * flight (the importer writes up to 10 leaves at once), 12 MiB at most
 */
const IDLE_CHUNKS = 12
/** staged blocks of one import whose fdatasync is still running (each holds a file handle): a put waits below this */
const MAX_SYNCING = 32

export interface StagedImport {
  id: string
  /** write blocks here */
  blockstore: FsBlockstore
  /** CIDs written so far, in order */
  cids: CID[]
  bytes: number
  /** a fixed-size chunker (1 MiB) whose buffers this import's blockstore reuses once written (see ChunkPool) */
  chunker: (opts?: { ownsInput?: boolean }) => Chunker
  /** resolves once every block written so far is on disk (fdatasync'd); rejects if one could not be synced */
  synced: () => Promise<void>
}

/** An FsBlockstore whose `put` writes the final file directly and fsyncs it behind the import (see above). */
class StagingBlockstore extends FsBlockstore {
  private readonly writing = new Map<string, Promise<void>>()
  /** fdatasyncs under way (they never reject: a failure is kept in syncError) */
  private readonly syncing = new Set<Promise<void>>()
  private syncError: unknown

  constructor (private readonly root: string, private readonly staged: Pick<StagedImport, 'cids' | 'bytes'>, private readonly chunks: ChunkPool) {
    super(root, { shardingStrategy: FLAT })
  }

  override async put (cid: CID, bytes: Uint8Array): Promise<CID> {
    try {
      return await this.putOnce(cid, bytes)
    } finally {
      // on disk (or failed): the chunker may fill these bytes again
      this.chunks.give(bytes)
    }
  }

  private async putOnce (cid: CID, bytes: Uint8Array): Promise<CID> {
    const path = join(this.root, FLAT.encode(cid).file)
    // the same block twice in one DAG (runs of zeros): the second waits for the first write
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
    this.staged.cids.push(cid)
    this.staged.bytes += bytes.byteLength
    return cid
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

/** A kept import that can never be committed (a block missing or not matching its CID). */
export class UnusableImportError extends Error {
  override name = 'UnusableImportError'
}

export class BlockStaging {
  private readonly chunks = new ChunkPool(CHUNK_SIZE, IDLE_CHUNKS)

  /**
   * `store`: where commits put the blocks (the node's block backend);
   * `onCommitted`: told how many blocks (and bytes) each commit added to the store (usage metrics)
   */
  constructor (private readonly store: BlockBackend, private readonly stagingDir: string, private readonly onCommitted?: (blocks: number, bytes: number) => void) {}

  /**
   * Removes staging folders left by a crash, except those in `keep`: the
   * sealed imports of paid uploads whose settlement notes await
   * reconciliation (which commits them, or discards them).
   */
  async sweepLeftovers (keep: ReadonlySet<string> = new Set()): Promise<number> {
    await mkdir(this.stagingDir, { recursive: true })
    const entries = (await readdir(this.stagingDir)).filter(e => !keep.has(e))
    await Promise.all(entries.map(async e => { await rm(join(this.stagingDir, e), { recursive: true, force: true }) }))
    return entries.length
  }

  /**
   * Makes a finished import's folder durable (waits for its blocks'
   * fdatasyncs, started as they were written, then fsyncs the folder that
   * names them), so that it can be committed after a crash (adopt).
   */
  async seal (staged: StagedImport): Promise<void> {
    await staged.synced()
    await fsyncPath(join(this.stagingDir, staged.id))
  }

  /**
   * Takes up a sealed import left by an earlier process: every block must
   * be in the staging folder or, committed already, in the blockstore, and
   * hash to its CID. Returns it ready for `commit` (which moves what is
   * still staged); throws UnusableImportError naming the first block that
   * is missing or bad (any other error is the file system's, and passing).
   */
  async adopt (id: string, cids: CID[]): Promise<StagedImport> {
    if (!STAGING_ID.test(id)) throw new UnusableImportError(`not a staging folder name: ${id.slice(0, 80)}`)
    const root = join(this.stagingDir, id)
    // a sealed import's blocks are on disk already
    const staged: StagedImport = { id, blockstore: new FsBlockstore(root, { shardingStrategy: FLAT }), cids: [], bytes: 0, chunker: (opts) => this.chunks.chunker(opts), synced: async () => {} }
    for (const cid of cids) {
      const inStaging = join(root, FLAT.encode(cid).file)
      let bytes: Uint8Array
      try {
        bytes = await readFile(inStaging)
        staged.cids.push(cid)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
        // committed already (the crash came after the commit): read it back from the store
        bytes = await readCommitted(this.store, cid)
      }
      const digest = createHash('sha256').update(bytes).digest()
      if (cid.multihash.code !== SHA2_256 || !digest.equals(cid.multihash.digest)) throw new UnusableImportError(`block ${cid.toString()} does not hash to its CID`)
      staged.bytes += bytes.byteLength
    }
    return staged
  }

  /**
   * An import that keeps nothing: each block is hashed (that is how the
   * importer learns its CID) and dropped, its chunk buffer reused. Tells what
   * a body imports as without writing a byte of it.
   */
  discarding (): { blockstore: ImportTarget, chunker: StagedImport['chunker'] } {
    const chunks = this.chunks
    return {
      blockstore: {
        put: async (cid: CID, bytes: Uint8Array) => { chunks.give(bytes); return cid },
        has: async () => false,
        get: () => { throw new Error('a discarding import holds no blocks') }
      },
      chunker: (opts) => chunks.chunker(opts)
    }
  }

  async begin (): Promise<StagedImport> {
    const id = randomUUID()
    const root = join(this.stagingDir, id)
    const staged: StagedImport = { id, blockstore: undefined as unknown as FsBlockstore, cids: [], bytes: 0, chunker: (opts) => this.chunks.chunker(opts), synced: async () => {} }
    const blockstore = new StagingBlockstore(root, staged, this.chunks)
    staged.blockstore = blockstore
    staged.synced = async () => { await blockstore.synced() }
    await staged.blockstore.open()
    return staged
  }

  /**
   * Stores every staged block durably in the block backend (once the
   * files' fdatasyncs are done), then removes the staging folder. Call under the
   * commit lock.
   */
  async commit (staged: StagedImport): Promise<void> {
    // a fetched DAG is committed unsealed: its blocks' fdatasyncs may still be running
    await staged.synced()
    const root = join(this.stagingDir, staged.id)
    const files = new Map<string, { cid: CID, path: string }>()
    for (const cid of staged.cids) {
      const file = FLAT.encode(cid).file
      files.set(file, { cid, path: join(root, file) })
    }
    // an S3 commit reads the staged files into the import's chunk buffers (idle by now) instead of buffers of its own
    const { added, addedBytes } = await this.store.commit([...files.values()], undefined, this.chunks)
    if (added > 0) this.onCommitted?.(added, addedBytes)
    await this.discard(staged)
  }

  /** Removes a staging folder (see discardStagingFolder). */
  async discard (staged: Pick<StagedImport, 'id'>): Promise<void> {
    await discardStagingFolder(this.stagingDir, staged.id)
  }
}

/** Removes a staging folder; retried if a late write races the removal (ENOTEMPTY). A name that is not one (a note's, read back) is ignored. */
export async function discardStagingFolder (stagingDir: string, id: string): Promise<void> {
  if (!STAGING_ID.test(id)) return
  await rm(join(stagingDir, id), { recursive: true, force: true, maxRetries: 5, retryDelay: 50 })
}

/** A committed block's bytes; UnusableImportError when the store does not have it (any other failure passes). */
async function readCommitted (store: BlockBackend, cid: CID): Promise<Uint8Array> {
  const bytes = await store.read(cid)
  if (bytes == null) throw new UnusableImportError(`block ${cid.toString()} is neither staged nor in the blockstore`)
  return bytes
}
