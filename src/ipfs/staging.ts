/**
 * Staged writes: an import writes its blocks into a private staging folder,
 * and only a commit hands them to the block backend. So:
 *   - a failed, refused (413) or unpaid import leaves nothing in the store;
 *   - gc never sees half-imported DAGs (in-flight imports are invisible to it);
 *   - a crash leaves either a staging folder (removed at start, unless a
 *     settlement note keeps it for reconciliation) or committed, durable
 *     blocks — never a half-written block under a valid name.
 *
 * Blocks are written while the body is still arriving and flushed to disk
 * behind the import; `seal` and `commit` wait for every flush (and fail if
 * one failed), so nothing is settled or committed before all of its blocks
 * are on disk. The folder's layout is chosen by the backend the import
 * begins with:
 *   - on disk: one file per block larger than the store packs
 *     (staging-files.ts), which the commit renames into its shard, with
 *     directory fsyncs run in parallel so the file system can group them into
 *     few journal commits: the bytes are written once; and the small blocks
 *     the store packs (fs-backend.ts, small-blocks.ts) in one log, as for S3
 *     below, which the commit reads back in spans into a few transactions;
 *   - in S3: one append-only log (staging-log.ts, `LOG`), flushed every few
 *     MiB, from which the commit PUTs each block by offset: one file and a
 *     few fdatasyncs per import instead of one of each per block.
 * Whatever the backend, nothing reaches the store before the commit, which
 * the caller makes only once the upload is paid or the fetched DAG complete.
 * A sealed import is taken over after a crash (`adopt`) block by block,
 * each checked against its CID's hash, from either layout.
 *
 * Commits run under the blockstore's commit lock so gc (which takes it
 * exclusively) never sweeps between a commit and its ledger record.
 */
import { randomUUID } from 'node:crypto'
import { mkdir, readdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { CID } from 'multiformats/cid'
import { notFound, type BlockBackend, type StagedBlock } from './block-backend.js'
import { ChunkBudget } from './chunk-budget.js'
import { hashesTo } from './codecs.js'
import { ChunkPool, type Chunker } from './chunk-pool.js'
import { fsyncPath } from './fs-backend.js'
import { CHUNK_SIZE, type ImportTarget } from './import.js'
import { FLAT, StagingFiles } from './staging-files.js'
import { StagingLog } from './staging-log.js'

/** a staging folder's name (begin's randomUUID): nothing read back from a note escapes the folder */
const STAGING_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** the staging log's name in its folder (no block file is named so: theirs end in .data) */
const LOG = 'blocks.log'
/**
 * idle chunk buffers kept between uploads, 4 MiB at most: what one import
 * holds (a chunk being filled, its own leaf being written) and a little more.
 * A buffer given back past the bound is freed at once (chunk-pool.ts), so a
 * small pool costs a fresh mapping per chunk, not garbage for the collector
 * (docs/internals.md, staging.ts).
 */
const IDLE_CHUNKS = 4
/**
 * Chunk buffers all imports hold at once, plus one per import that holds no
 * other (chunk-budget.ts). One upload alone keeps its whole pipeline (a
 * buffer being filled and LEAF_WRITES being written: 5).
 */
export const CHUNK_BUDGET = 16

export type StagingLayout = 'files' | 'log'

/** what staging.ts keeps of an import's layout (files or log) */
interface Layout {
  blockstore: ImportTarget
  synced: () => Promise<void>
  /** the blocks a commit stores (BlockStaging.keepOnly narrows them) */
  blocks: () => StagedBlock[]
  /** no more writes: releases the file handle a log holds */
  close: () => Promise<void>
}

export interface StagedImport {
  id: string
  /** write blocks here */
  blockstore: ImportTarget
  /** CIDs written so far, in order */
  cids: CID[]
  bytes: number
  /** a fixed-size chunker (1 MiB) whose buffers this import's blockstore reuses once written (see ChunkPool) */
  chunker: (opts?: { ownsInput?: boolean }) => Chunker
  /** a buffer for one block read whole (a CAR's), which this import's blockstore reuses once written (ChunkPool.forBlock) */
  blockBuffer: (size: number) => Uint8Array
  /** resolves once every block written so far is on disk (fdatasync'd); rejects if one could not be synced */
  synced: () => Promise<void>
  /** resolves once the store has readied what committing the blocks written so far needs (never rejects: the commit prepares again) */
  prepared: () => Promise<void>
  /** the layout's own (staging.ts) */
  readonly layout: Layout
}

/** A kept import that can never be committed (a block missing or not matching its CID). */
export class UnusableImportError extends Error {
  override name = 'UnusableImportError'
}

export class BlockStaging {
  private readonly chunks = new ChunkPool(CHUNK_SIZE, IDLE_CHUNKS, undefined, new ChunkBudget(CHUNK_BUDGET))
  /** the chunk buffers imports hold, and how often one waited for one (metrics) */
  get chunkBudget (): { inUse: number, waits: number } {
    const b = this.chunks.budget as ChunkBudget
    return { inUse: b.inUse, waits: b.waits }
  }

  /**
   * `store`: where commits put the blocks (the node's block backend);
   * `onCommitted`: told how many blocks (and bytes) each commit added to the store (usage metrics);
   * `layout`: how a new import stages its blocks (by default: a log when they go to S3, files on disk)
   */
  constructor (
    private readonly store: BlockBackend,
    private readonly stagingDir: string,
    private readonly onCommitted?: (blocks: number, bytes: number) => void,
    private readonly layout: () => StagingLayout = () => store.kind === 's3' ? 'log' : 'files'
  ) {}

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
   * Makes a finished import's folder durable (waits for its flushes,
   * started as its blocks were written, then fsyncs the folder that names
   * its files), so that it can be committed after a crash (adopt). No block
   * is written to it after this.
   */
  async seal (staged: StagedImport): Promise<void> {
    await staged.synced()
    await staged.layout.close()
    await fsyncPath(join(this.stagingDir, staged.id))
  }

  /**
   * Takes up a sealed import left by an earlier process: every block must
   * be in the staging folder or, committed already, in the blockstore, and
   * hash to its CID. Returns it ready for `commit` (which stores what is
   * still staged); throws UnusableImportError naming the first block that
   * is missing or bad (any other error is the file system's, and passing).
   */
  async adopt (id: string, cids: CID[]): Promise<StagedImport> {
    if (!STAGING_ID.test(id)) throw new UnusableImportError(`not a staging folder name: ${id.slice(0, 80)}`)
    const root = join(this.stagingDir, id)
    const log = await StagingLog.recover(join(root, LOG)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined
      throw err
    })
    const files = new StagingFiles(root)
    const staged = this.importOf(id, stagedLayout({ files, log, packedMax: this.store.packedMax }, this.chunks))
    for (const cid of cids) {
      // the log's blocks were checked against their CIDs as it was read back
      if (log?.isDamaged(cid) === true && !log.has(cid)) throw new UnusableImportError(`block ${cid.toString()} does not hash to its CID`)
      const size = log?.sizeOf(cid) ?? await stagedFile(files, root, cid)
      if (size != null) {
        staged.cids.push(cid)
        staged.bytes += size
        continue
      }
      // committed already (the crash came after the commit): read it back from the store
      const bytes = await readCommitted(this.store, cid)
      checkHash(cid, bytes)
      staged.bytes += bytes.byteLength
    }
    return staged
  }

  /**
   * An import that keeps nothing: each block is hashed (that is how the
   * importer learns its CID) and dropped, its chunk buffer reused. Tells what
   * a body imports as without writing a byte of it.
   */
  discarding (): Pick<StagedImport, 'blockstore' | 'chunker' | 'blockBuffer'> {
    const chunks = this.chunks
    return {
      blockstore: {
        put: async (cid: CID, bytes: Uint8Array) => { chunks.give(bytes); return cid },
        has: async () => false,
        get: () => { throw new Error('a discarding import holds no blocks') }
      },
      chunker: (opts) => chunks.chunker(opts),
      blockBuffer: (size) => chunks.forBlock(size)
    }
  }

  async begin (): Promise<StagedImport> {
    const id = randomUUID()
    const root = join(this.stagingDir, id)
    await mkdir(root, { recursive: true })
    let staged: StagedImport | undefined
    const ahead = preparing(this.store)
    const written = (cid: CID, size: number): void => {
      (staged as StagedImport).cids.push(cid);
      (staged as StagedImport).bytes += size
      ahead.add(cid)
    }
    // files, with small blocks in a log when the store packs them; or a log alone
    const kind = this.layout()
    const packedMax = kind === 'files' ? this.store.packedMax : undefined
    const layout = stagedLayout({
      files: kind === 'files' ? new StagingFiles(root, written) : undefined,
      log: kind === 'log' || packedMax != null ? await StagingLog.create(join(root, LOG), written) : undefined,
      packedMax
    }, this.chunks)
    staged = this.importOf(id, layout, ahead.done)
    return staged
  }

  /**
   * Leaves out of the commit every staged block not in `keep` (a CAR's
   * blocks its root does not reach): `cids` and `bytes` become those of
   * `keep`, in its order. Call once the import has written its last block.
   */
  keepOnly (staged: StagedImport, keep: readonly CID[]): void {
    const wanted = new Set(keep.map(c => c.toString()))
    const all = staged.layout.blocks
    const kept = (): StagedBlock[] => all().filter(b => wanted.has(b.cid.toString()))
    staged.layout.blocks = kept
    staged.cids.splice(0, staged.cids.length, ...keep)
    staged.bytes = kept().reduce((n, b) => n + b.size, 0)
  }

  /**
   * Stores every staged block durably in the block backend (once their
   * flushes are done), then removes the staging folder. Call under the
   * commit lock.
   */
  async commit (staged: StagedImport): Promise<void> {
    // a fetched DAG is committed unsealed: its flushes may still be running
    await staged.synced()
    await staged.prepared()
    await staged.layout.close()
    // an S3 commit reads the staged blocks into the import's chunk buffers (idle by now) instead of buffers of its own
    const { added, addedBytes } = await this.store.commit(staged.layout.blocks(), undefined, this.chunks)
    if (added > 0) this.onCommitted?.(added, addedBytes)
    await this.discard(staged)
  }

  /** Removes a staging folder (see discardStagingFolder). */
  async discard (staged: Pick<StagedImport, 'id'> & { layout?: Layout }): Promise<void> {
    await staged.layout?.close().catch(() => {})
    await discardStagingFolder(this.stagingDir, staged.id)
  }

  private importOf (id: string, layout: Layout, prepared: () => Promise<void> = async () => {}): StagedImport {
    return { id, blockstore: layout.blockstore, cids: [], bytes: 0, chunker: (opts) => this.chunks.chunker(opts), blockBuffer: (size) => this.chunks.forBlock(size), synced: layout.synced, prepared, layout }
  }
}

/**
 * The store's `prepare` for each block as it is staged (the disk's shard folders are made while
 * the body still arrives, not in the commit after the payment), one call at a time: the blocks
 * staged meanwhile make the next call's batch. A failure is left to the commit, which prepares again.
 */
function preparing (store: BlockBackend): { add: (cid: CID) => void, done: () => Promise<void> } {
  if (store.prepare == null) return { add: () => {}, done: async () => {} }
  let batch: CID[] = []
  let running: Promise<void> | undefined
  const run = async (): Promise<void> => {
    while (batch.length > 0) {
      const cids = batch
      batch = []
      await store.prepare?.(cids).catch(() => {})
    }
    running = undefined
  }
  return {
    add: (cid) => { batch.push(cid); running ??= run() },
    done: async () => { await running }
  }
}

/**
 * A staging folder's blocks: in files, one per block; in a log (all of them
 * when there are no files; otherwise those of at most `packedMax` bytes,
 * which the store packs many to a file); or both. Each chunk buffer goes
 * back to the pool once its block is written.
 */
function stagedLayout (o: { files?: StagingFiles, log?: StagingLog, packedMax?: number }, chunks: ChunkPool): Layout {
  const { files, log } = o
  const packedMax = o.packedMax ?? -1
  const inLog = (size: number): boolean => log != null && (files == null || size <= packedMax)
  return {
    blockstore: {
      put: async (cid: CID, bytes: Uint8Array) => {
        try {
          if (inLog(bytes.byteLength)) await log?.put(cid, bytes)
          else await files?.put(cid, bytes)
          return cid
        } finally {
          // on disk (or failed): the chunker may fill these bytes again
          chunks.give(bytes)
        }
      },
      has: async (cid: CID) => log?.has(cid) === true || (files != null && await files.has(cid)),
      get: async function * (cid: CID) {
        const logged = await log?.get(cid)
        if (logged != null) {
          yield logged
          return
        }
        if (files == null) throw notFound(cid)
        yield * files.get(cid)
      }
    },
    synced: async () => { await Promise.all([log?.synced(), files?.synced()]) },
    blocks: () => [...(log?.blocks() ?? []), ...(files?.blocks() ?? [])],
    close: async () => { await log?.close() }
  }
}

/** The size of a block staged in a file of its own, checked against its CID (undefined: no such file). */
async function stagedFile (files: StagingFiles, root: string, cid: CID): Promise<number | undefined> {
  let bytes
  try {
    bytes = await readFile(join(root, FLAT.encode(cid).file))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  checkHash(cid, bytes)
  files.found(cid, bytes.byteLength)
  return bytes.byteLength
}

/** A block that does not hash to its CID (with sha2-256, or sha2-512 as a CAR's may) can never be committed. */
function checkHash (cid: CID, bytes: Uint8Array): void {
  if (!hashesTo(cid, bytes)) throw new UnusableImportError(`block ${cid.toString()} does not hash to its CID`)
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
