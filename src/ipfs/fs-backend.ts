/**
 * Blocks on the local disk, under blocks/: a block of at most PACKED_MAX
 * bytes in `small.mdb` (small-blocks.ts: one LMDB file for all of them),
 * a larger one in blockstore-fs's layout (one file per block,
 * `<shard>/<name>.data`, the shard being the name's next-to-last two
 * characters). A commit writes the small blocks out of the staging log in a
 * few transactions and one flush, renames fsync'd staged files of larger
 * ones into their shards (or copies one out of a staging log into a file of
 * its own) and fsyncs every directory that gained an entry; the shard folders
 * are made (and blocks/ fsync'd) ahead, while the import still runs
 * (`prepare`), and never removed; gc walks them and the small blocks. Reads
 * look in small.mdb first, then for a file (a small block stored as a file by
 * an earlier version is read as before).
 */
import { randomBytes } from 'node:crypto'
import * as fs from 'node:fs'
import { mkdir, open, opendir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { FsBlockstore } from 'blockstore-fs'
import { NextToLast } from 'blockstore-fs/sharding'
import type { CID } from 'multiformats/cid'
import { handOver } from '../runtime/buffers.js'
import { blockName, type BlockBackend, type StagedBlock, type StoredBlock } from './block-backend.js'
import { PACKED_MAX, SMALL_BLOCKS_FILE, SmallBlocks } from './small-blocks.js'
import { readFully } from './staging-log.js'

const SHARDING = new NextToLast()
const EXT = SHARDING.extension
/** renames, stats, unlinks and directory fsyncs in flight (the file system, not JS, is the limit) */
const PARALLEL = 32
const PAGE = 1000

/**
 * A block file is read with one readv into pieces of READ_PIECE bytes (each
 * its own ArrayBuffer, so each can be freed once written), not through
 * blockstore-fs's createReadStream, whose per-piece promises cost much of the
 * CPU of a gateway read (docs/performance.md). Any error is a NotFoundError,
 * as blockstore-fs's own get throws.
 */
class FreshReads extends FsBlockstore {
  constructor (path: string, private readonly small: SmallBlocks) {
    super(path)
  }

  override async * get (key: CID, options?: Parameters<FsBlockstore['get']>[1]): AsyncGenerator<Uint8Array> {
    options?.signal?.throwIfAborted()
    const packed = this.small.get(blockName(key))
    if (packed != null) {
      yield handOver(packed)
      return
    }
    const { dir, file } = SHARDING.encode(key)
    let pieces: Buffer[]
    try {
      pieces = await readPieces(join(this.path, dir, file))
    } catch (err) {
      throw notFound(String(err))
    }
    for (const piece of pieces) yield handOver(piece)
  }

  override async has (key: CID, options?: Parameters<FsBlockstore['has']>[1]): Promise<boolean> {
    return this.small.has(blockName(key)) || await super.has(key, options)
  }

  override async delete (key: CID, options?: Parameters<FsBlockstore['delete']>[1]): Promise<void> {
    await this.small.remove([blockName(key)])
    await super.delete(key, options)
  }
}

/** the size of the pieces a block file is read in: a socket's write size (http/gateway/pump.ts PIECE_BYTES) */
const READ_PIECE = 65_536
/** a file larger than this is not read into memory at once (no block is near it): read in pieces up to it, then refused */
const MAX_READ = 16 * 1_048_576

/** interface-store's NotFoundError, as blockstore-fs throws it (matched by name) */
function notFound (message: string): Error {
  const err = new Error(message)
  err.name = 'NotFoundError'
  return err
}

/**
 * A whole file as fresh pieces of READ_PIECE bytes: open, fstat, readv (again
 * for what a short read left), close, with callbacks (one promise per file,
 * no FileHandle).
 */
async function readPieces (path: string): Promise<Buffer[]> {
  return await new Promise<Buffer[]>((resolve, reject) => {
    fs.open(path, 'r', (err, fd) => {
      if (err != null) { reject(err); return }
      const done = (failure: Error | null, pieces?: Buffer[]): void => {
        fs.close(fd, (closeErr) => {
          if (failure != null || closeErr != null) reject(failure ?? closeErr)
          else resolve(pieces as Buffer[])
        })
      }
      fs.fstat(fd, (err, st) => {
        if (err != null) { done(err); return }
        if (st.size > MAX_READ) { done(new Error(`${path} has ${st.size} bytes, more than any block`)); return }
        const pieces: Buffer[] = []
        for (let at = 0; at < st.size; at += READ_PIECE) pieces.push(Buffer.allocUnsafeSlow(Math.min(READ_PIECE, st.size - at)))
        let got = 0
        const more = (): void => {
          if (got >= st.size) { done(null, pieces); return }
          fs.readv(fd, viewsFrom(pieces, got), got, (err, n) => {
            if (err != null) { done(err); return }
            // a file that ends early (it cannot: blocks are renamed into place whole) ends its read
            if (n === 0) { done(null, cut(pieces, got)); return }
            got += n
            more()
          })
        }
        more()
      })
    })
  })
}

/** views of `pieces` from byte `from` on (what a short readv left to read) */
function viewsFrom (pieces: Buffer[], from: number): Buffer[] {
  if (from === 0) return pieces
  const out: Buffer[] = []
  let at = 0
  for (const p of pieces) {
    const end = at + p.byteLength
    if (end > from) out.push(at >= from ? p : p.subarray(from - at))
    at = end
  }
  return out
}

/** the first `length` bytes of `pieces` */
function cut (pieces: Buffer[], length: number): Buffer[] {
  const out: Buffer[] = []
  let at = 0
  for (const p of pieces) {
    if (at >= length) break
    out.push(at + p.byteLength <= length ? p : Buffer.from(p.subarray(0, length - at)))
    at += p.byteLength
  }
  return out
}

export class FsBackend implements BlockBackend {
  readonly kind = 'fs' as const
  readonly blockstore: FsBlockstore
  /** the blocks of at most PACKED_MAX bytes */
  private readonly small: SmallBlocks
  /** shard folders known to exist with blocks/ fsync'd since they were made */
  private readonly shards = new Set<string>()
  /** blocks of at most this many bytes are packed (the staging keeps them in its log, not in a file each) */
  readonly packedMax = PACKED_MAX

  /** (creates nothing: the folder is made by open() or the first commit, so an admin command on a data dir leaves no blocks/ behind) */
  constructor (readonly dir: string) {
    this.small = new SmallBlocks(join(dir, SMALL_BLOCKS_FILE))
    this.blockstore = new FreshReads(dir, this.small)
  }

  async open (): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    await this.blockstore.open()
    this.small.open()
  }

  describe (): string {
    return `blocks on disk in ${this.dir}`
  }

  writable (): boolean {
    return true
  }

  async ready (): Promise<void> {}

  async commit (blocks: StagedBlock[]): Promise<{ added: number, addedBytes: number }> {
    const files = await this.commitFiles(blocks.filter(b => b.size > PACKED_MAX))
    const packed = await this.commitPacked(blocks.filter(b => b.size <= PACKED_MAX))
    return { added: files.added + packed.added, addedBytes: files.addedBytes + packed.addedBytes }
  }

  /**
   * Small blocks into small.mdb: read out of their staged files in spans of
   * many records, a transaction per span, one flush at the end. A block held
   * already adds nothing (one held as a file by an earlier version is stored
   * again here: counted once more until the next usage walk).
   */
  private async commitPacked (blocks: StagedBlock[]): Promise<{ added: number, addedBytes: number }> {
    if (blocks.length === 0) return { added: 0, addedBytes: 0 }
    await mkdir(this.dir, { recursive: true })
    const fresh = new Map<string, StagedBlock>()
    for (const block of blocks) {
      const name = blockName(block.cid)
      if (!fresh.has(name) && !this.small.has(name)) fresh.set(name, block)
    }
    let addedBytes = 0
    for await (const span of readSpans([...fresh.values()])) {
      await this.small.write(span.map(b => ({ name: blockName(b.cid), bytes: b.bytes })))
      for (const b of span) addedBytes += b.bytes.byteLength
    }
    await this.small.flushed()
    return { added: fresh.size, addedBytes }
  }

  private async commitFiles (blocks: StagedBlock[]): Promise<{ added: number, addedBytes: number }> {
    const targets = new Map<string, { block: StagedBlock, dir: string }>()
    for (const block of blocks) {
      const { dir, file } = SHARDING.encode(block.cid)
      targets.set(file, { block, dir })
    }
    const dirs = new Set([...targets.values()].map(t => t.dir))
    await this.prepareShards(dirs)
    let added = 0
    let addedBytes = 0
    await eachLimited([...targets], async ([file, { block, dir }]) => {
      const to = join(this.dir, dir, file)
      // a block the store holds already (the same content pinned again) adds nothing
      if (await exists(to)) {
        if (!block.whole) return
      } else {
        added++
        addedBytes += block.size
      }
      if (block.whole) await rename(block.path, to)
      else await copyOut(block, to)
    })
    await eachLimited([...dirs], async dir => { await fsyncPath(join(this.dir, dir)) })
    return { added, addedBytes }
  }

  /**
   * Makes the shard folders these blocks go to, durably, and stores none of
   * them: a staged import calls it while its body still arrives, so that its
   * commit, after the payment, only renames and fsyncs.
   */
  async prepare (cids: CID[]): Promise<void> {
    await this.prepareShards(new Set(cids.map(cid => SHARDING.encode(cid).dir)))
  }

  /** made, and blocks/ fsync'd after: a folder known here costs no call (nothing ever removes one) */
  private async prepareShards (dirs: Set<string>): Promise<void> {
    const unknown = [...dirs].filter(dir => !this.shards.has(dir))
    if (unknown.length === 0) return
    await eachLimited(unknown, async dir => { await mkdir(join(this.dir, dir), { recursive: true }) })
    await fsyncPath(this.dir)
    for (const dir of unknown) this.shards.add(dir)
  }

  /**
   * One block from memory: written to a temporary file, fdatasync'd, renamed
   * to its name and its shard folder fsync'd (a crash leaves no torn block
   * under a valid name). A block on disk already is not written again (the
   * caller registered it in flight first: gc leaves it alone).
   */
  async put (cid: CID, bytes: Uint8Array): Promise<boolean> {
    if (bytes.byteLength <= PACKED_MAX) {
      const name = blockName(cid)
      if (this.small.has(name)) return false
      await mkdir(this.dir, { recursive: true })
      await this.small.write([{ name, bytes }])
      await this.small.flushed()
      return true
    }
    const { dir, file } = SHARDING.encode(cid)
    const to = join(this.dir, dir, file)
    if (await exists(to)) return false
    await this.prepareShards(new Set([dir]))
    await writeDurably(bytes, to)
    await fsyncPath(join(this.dir, dir))
    return true
  }

  async read (cid: CID): Promise<Uint8Array | undefined> {
    const packed = this.small.get(blockName(cid))
    if (packed != null) return packed
    try {
      return await readFile(this.pathOf(blockName(cid)))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw err
    }
  }

  async * list (signal?: AbortSignal): AsyncIterable<StoredBlock[]> {
    yield * this.listFiles(signal)
    let page: StoredBlock[] = []
    for (const name of this.small.names()) {
      signal?.throwIfAborted()
      page.push({ name })
      if (page.length >= PAGE) {
        yield page
        page = []
      }
    }
    if (page.length > 0) yield page
  }

  /** the blocks stored as files of their own */
  private async * listFiles (signal?: AbortSignal): AsyncIterable<StoredBlock[]> {
    let page: StoredBlock[] = []
    let shards
    try {
      shards = await opendir(this.dir)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return // no folder yet: no blocks
      throw err
    }
    for await (const shard of shards) {
      if (!shard.isDirectory()) continue
      for await (const f of await opendir(join(this.dir, shard.name))) {
        signal?.throwIfAborted()
        if (!f.isFile() || !f.name.endsWith(EXT)) continue
        page.push({ name: f.name.slice(0, -EXT.length) })
        if (page.length >= PAGE) {
          yield page
          page = []
        }
      }
    }
    if (page.length > 0) yield page
  }

  async sizeOf (block: StoredBlock): Promise<number | undefined> {
    const packed = this.small.sizeOf(block.name)
    if (packed != null) return packed
    try {
      return (await stat(this.pathOf(block.name))).size
    } catch {
      return undefined
    }
  }

  async remove (blocks: StoredBlock[]): Promise<{ removed: number, freedBytes: number }> {
    const packed = await this.small.remove(blocks.map(b => b.name))
    let removed = packed.removed.size
    let freedBytes = packed.freedBytes
    // (a block packed here is no file too, but for one an earlier version stored as a file: the next sweep lists that)
    await eachLimited(blocks.filter(b => !packed.removed.has(b.name)), async (b) => {
      const path = this.pathOf(b.name)
      try {
        // (read the size first: `x += await …` would add to a stale x)
        const size = (await stat(path)).size
        await unlink(path)
        removed++
        freedBytes += size
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
      }
    })
    return { removed, freedBytes }
  }

  async usage (): Promise<{ blocks: number, bytes: number }> {
    let { blocks, bytes } = this.small.usage()
    for await (const page of this.listFiles()) {
      for (const b of page) {
        const size = await this.sizeOf(b)
        if (size == null) continue
        blocks++
        bytes += size
      }
    }
    return { blocks, bytes }
  }

  async probe (): Promise<void> {
    const probe = join(this.dir, `.health-${randomBytes(6).toString('hex')}`)
    await writeFile(probe, 'ok')
    await unlink(probe)
  }

  async close (): Promise<void> {
    await this.blockstore.close()
    await this.small.close()
  }

  private pathOf (name: string): string {
    return join(this.dir, name.slice(-2), `${name}${EXT}`)
  }
}

/**
 * bytes of staged records read at once and written to small.mdb in one transaction: LMDB holds a
 * transaction's pages in malloc'd memory until it commits, and some of it stays with the allocator
 * (a process writing 50 MB of 5 KB blocks four times: +23.5 MiB anonymous with 8 MiB transactions,
 * +11.7 with 1 MiB, +10.7 with 256 KiB; docs/performance.md)
 */
const SPAN = 1_048_576

/**
 * Staged small blocks' bytes, in spans: the blocks of one staged file in
 * offset order, read a span of up to SPAN bytes (many records) at a time, each
 * block a view of its span's buffer.
 */
async function * readSpans (blocks: StagedBlock[]): AsyncGenerator<Array<{ cid: CID, bytes: Uint8Array }>> {
  const byPath = new Map<string, StagedBlock[]>()
  for (const b of blocks) {
    const list = byPath.get(b.path)
    if (list == null) byPath.set(b.path, [b])
    else list.push(b)
  }
  for (const [path, list] of byPath) {
    list.sort((a, b) => a.offset - b.offset)
    const fh = await open(path, 'r')
    try {
      for (let i = 0; i < list.length;) {
        const from = (list[i] as StagedBlock).offset
        let j = i
        while (j < list.length && (list[j] as StagedBlock).offset + (list[j] as StagedBlock).size - from <= SPAN) j++
        if (j === i) j = i + 1
        const last = list[j - 1] as StagedBlock
        const bytes = Buffer.allocUnsafe(last.offset + last.size - from)
        await readFully(fh, bytes, from)
        yield list.slice(i, j).map(b => ({ cid: b.cid, bytes: bytes.subarray(b.offset - from, b.offset - from + b.size) }))
        i = j
      }
    } finally {
      await fh.close()
    }
  }
}

export async function eachLimited<T> (items: T[], fn: (item: T) => Promise<void>, parallel = PARALLEL): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++] as T)
  }
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, worker))
}

async function exists (path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw err
  }
}

/**
 * A block that shares its staged file with others (a staging log): copied
 * into a file of its own, fdatasync'd, then renamed to its name (so a crash
 * leaves no torn block under a valid name).
 */
async function copyOut (block: StagedBlock, to: string): Promise<void> {
  const bytes = Buffer.allocUnsafe(block.size)
  const from = await open(block.path, 'r')
  try {
    await readFully(from, bytes, block.offset)
  } finally {
    await from.close()
  }
  await writeDurably(bytes, to)
}

/** Bytes into a fresh file, fdatasync'd, then renamed to `to`. */
async function writeDurably (bytes: Uint8Array, to: string): Promise<void> {
  const tmp = `${to}.${randomBytes(6).toString('hex')}.tmp`
  const fh = await open(tmp, 'wx')
  try {
    for (let at = 0; at < bytes.byteLength;) at += (await fh.write(bytes, at, bytes.byteLength - at, at)).bytesWritten
    await fh.datasync()
  } catch (err) {
    await fh.close().catch(() => {})
    await unlink(tmp).catch(() => {})
    throw err
  }
  await fh.close()
  await rename(tmp, to)
}

export async function fsyncPath (path: string): Promise<void> {
  const fh = await open(path, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}
