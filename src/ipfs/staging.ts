/**
 * Staged writes: an import writes its blocks into a private staging folder
 * (the blockstore's file names, in one flat folder), and only a commit moves
 * them into the blockstore. So:
 *   - a failed, refused (413) or unpaid import leaves nothing in the blockstore;
 *   - gc never sees half-imported DAGs (in-flight imports are invisible to it);
 *   - a crash leaves either a staging folder (removed at start) or committed,
 *     durable blocks — never a half-written block under a valid name.
 *
 * A staged block is written straight to its name and fsync'd inside `put`,
 * while the body is still arriving (blockstore-fs writes a temp file and
 * renames it, and never fsyncs). The temp-and-rename step is not needed
 * here: nothing else reads a staging folder, a failed write removes its file,
 * and a crash leaves the whole folder to the start-up sweep. The commit is
 * then only renames and directory fsyncs, run in parallel so the file
 * system can group them into few journal commits.
 *
 * Commits run under the blockstore's commit lock so gc (which takes it
 * exclusively) never sweeps between a commit and its ledger record.
 */
import { createHash, randomUUID } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { FsBlockstore } from 'blockstore-fs'
import { NextToLast, type ShardingStrategy } from 'blockstore-fs/sharding'
import type { CID } from 'multiformats/cid'
import { ChunkPool, type Chunker } from './chunk-pool.js'
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
/** renames and directory fsyncs in flight during a commit */
const COMMIT_CONCURRENCY = 32
/**
 * idle chunk buffers kept between uploads: about what one import has in
 * flight (the importer writes up to 10 leaves at once), 12 MiB at most
 */
const IDLE_CHUNKS = 12

export interface StagedImport {
  id: string
  /** write blocks here */
  blockstore: FsBlockstore
  /** CIDs written so far, in order */
  cids: CID[]
  bytes: number
  /** a fixed-size chunker (1 MiB) whose buffers this import's blockstore reuses once written (see ChunkPool) */
  chunker: (opts?: { ownsInput?: boolean }) => Chunker
}

/** An FsBlockstore whose `put` writes the final file directly and fsyncs it (see above). */
class StagingBlockstore extends FsBlockstore {
  private readonly writing = new Map<string, Promise<void>>()

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

  private async write (path: string, bytes: Uint8Array): Promise<void> {
    let fh
    try {
      fh = await open(path, 'wx')
    } catch (err) {
      // written by an earlier attempt (a pin fetch resumes into the same staging folder)
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return
      throw err
    }
    try {
      await fh.writeFile(bytes)
      await fh.datasync()
    } catch (err) {
      await fh.close().catch(() => {})
      await unlink(path).catch(() => {})
      throw err
    }
    await fh.close()
  }
}

/** A kept import that can never be committed (a block missing or not matching its CID). */
export class UnusableImportError extends Error {
  override name = 'UnusableImportError'
}

export class BlockStaging {
  private readonly chunks = new ChunkPool(CHUNK_SIZE, IDLE_CHUNKS)

  /** `onCommitted`: told how many blocks (and bytes) each commit added to the blockstore (usage metrics) */
  constructor (private readonly blocksDir: string, private readonly stagingDir: string, private readonly onCommitted?: (blocks: number, bytes: number) => void) {}

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
   * Makes a finished import's folder durable (its blocks were fsync'd as
   * they were written; this fsyncs the folder that names them), so that it
   * can be committed after a crash (adopt).
   */
  async seal (staged: StagedImport): Promise<void> {
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
    const staged: StagedImport = { id, blockstore: new FsBlockstore(root, { shardingStrategy: FLAT }), cids: [], bytes: 0, chunker: (opts) => this.chunks.chunker(opts) }
    for (const cid of cids) {
      const inStaging = join(root, FLAT.encode(cid).file)
      const { dir, file } = SHARDING.encode(cid)
      let bytes: Uint8Array
      try {
        bytes = await readFile(inStaging)
        staged.cids.push(cid)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
        try {
          bytes = await readFile(join(this.blocksDir, dir, file))
        } catch (err2) {
          if ((err2 as NodeJS.ErrnoException).code !== 'ENOENT') throw err2
          throw new UnusableImportError(`block ${cid.toString()} is neither staged nor in the blockstore`)
        }
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
    const staged: StagedImport = { id, blockstore: undefined as unknown as FsBlockstore, cids: [], bytes: 0, chunker: (opts) => this.chunks.chunker(opts) }
    staged.blockstore = new StagingBlockstore(root, staged, this.chunks)
    await staged.blockstore.open()
    return staged
  }

  /**
   * Moves every staged block into the blockstore durably: the files were
   * fsync'd when written; here they are renamed, then every directory that
   * gained an entry is fsync'd. Call under the commit lock.
   */
  async commit (staged: StagedImport): Promise<void> {
    const root = join(this.stagingDir, staged.id)
    const files = new Map<string, string>()
    for (const cid of staged.cids) {
      const { dir, file } = SHARDING.encode(cid)
      files.set(file, dir)
    }
    const dirs = new Set(files.values())
    await eachLimited([...dirs], async dir => { await mkdir(join(this.blocksDir, dir), { recursive: true }) })
    let added = 0
    let addedBytes = 0
    await eachLimited([...files], async ([file, dir]) => {
      const to = join(this.blocksDir, dir, file)
      if (this.onCommitted != null) {
        // a block the store holds already (the same content pinned again) adds nothing
        const [src, dst] = await Promise.allSettled([stat(join(root, file)), stat(to)])
        if (src.status === 'fulfilled' && dst.status === 'rejected') {
          added++
          addedBytes += src.value.size
        }
      }
      await rename(join(root, file), to)
    })
    if (added > 0) this.onCommitted?.(added, addedBytes)
    await eachLimited([...dirs], async dir => { await fsyncPath(join(this.blocksDir, dir)) })
    await fsyncPath(this.blocksDir)
    await this.discard(staged)
  }

  /** Removes a staging folder; retried if a late write races the removal (ENOTEMPTY). A name that is not one (a note's, read back) is ignored. */
  async discard (staged: Pick<StagedImport, 'id'>): Promise<void> {
    if (!STAGING_ID.test(staged.id)) return
    await rm(join(this.stagingDir, staged.id), { recursive: true, force: true, maxRetries: 5, retryDelay: 50 })
  }
}

async function eachLimited<T> (items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++] as T)
  }
  await Promise.all(Array.from({ length: Math.min(COMMIT_CONCURRENCY, items.length) }, worker))
}

async function fsyncPath (path: string): Promise<void> {
  const fh = await open(path, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}
