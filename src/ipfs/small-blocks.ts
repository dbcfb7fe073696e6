/**
 * The disk backend's small blocks (at most PACKED_MAX bytes: a small file's
 * one leaf, a directory node, a DAG's root) packed into one LMDB file,
 * `blocks/small.mdb`, keyed by block name (the multihash in base32, as the
 * block files are named), instead of a file each. A file per block costs an
 * inode, a create, a rename and a flush per block, which for a directory of
 * many small files is most of an upload's time (docs/performance.md); here a
 * commit of any number of small blocks is a few transactions and one flush.
 * Kubo's badger and pebble datastores pack small blocks for the same reason.
 *
 * Larger blocks (the 1 MiB leaves of a large file) stay files of their own
 * (fs-backend.ts), renamed into place from staging without a copy. Reads
 * look here first, then for a file: a block written as a file by an earlier
 * version, or by Helia itself, is found either way.
 *
 * Durable: a commit resolves once its transactions are flushed to disk
 * (lmdb-js commits first and flushes after, `flushed`). Deleted blocks' pages
 * are reused by later writes; the file does not shrink.
 */
import { existsSync } from 'node:fs'
import { open, type Database, type RootDatabase } from 'lmdb'

/** blocks of at most this many bytes are packed here (a larger one is a file of its own) */
export const PACKED_MAX = 64 * 1024
/** the file's name in blocks/ */
export const SMALL_BLOCKS_FILE = 'small.mdb'

/** How many blocks the small-blocks file at `path` holds (0: no such file), read without writing. */
export function packedBlocksIn (path: string): number {
  if (!existsSync(path)) return 0
  const env = open({ path, readOnly: true, maxDbs: 1 })
  try {
    return env.openDB<Buffer, string>({ name: 'blocks', encoding: 'binary' }).getKeysCount()
  } finally {
    void env.close()
  }
}

export class SmallBlocks {
  private env: RootDatabase | undefined
  private db: Database<Buffer, string> | undefined

  /** `path`: the LMDB file (made by the first write, or by `open`); nothing is created before */
  constructor (readonly path: string) {}

  /** Opens (and creates) the file. */
  open (): void {
    if (this.db != null) return
    this.env = open({ path: this.path, compression: false, maxDbs: 1, mapSize: 2 ** 40 })
    this.db = this.env.openDB<Buffer, string>({ name: 'blocks', encoding: 'binary' })
  }

  /** the database if it exists (a process that never wrote, such as an admin command, opens it once it does) */
  private readable (): Database<Buffer, string> | undefined {
    if (this.db == null && existsSync(this.path)) this.open()
    return this.db
  }

  /** a block's bytes (a copy of its own), or undefined */
  get (name: string): Buffer | undefined {
    return this.readable()?.get(name)
  }

  has (name: string): boolean {
    return this.readable()?.doesExist(name) ?? false
  }

  /** a block's size, or undefined */
  sizeOf (name: string): number | undefined {
    return this.readable()?.get(name)?.byteLength
  }

  /**
   * Writes blocks in one transaction (the names are content addresses: a
   * block held already is written again, harmlessly); resolves once it is
   * committed, not yet on disk: see `flushed`.
   */
  async write (blocks: ReadonlyArray<{ name: string, bytes: Uint8Array }>): Promise<void> {
    this.open()
    const db = this.db as Database<Buffer, string>
    await db.transaction(() => { for (const b of blocks) void db.put(b.name, b.bytes as Buffer) })
  }

  /** Every transaction committed so far is on disk. */
  async flushed (): Promise<void> {
    await this.db?.flushed
  }

  /** Deletes the blocks held here; resolves, once the deletion is on disk, with those it deleted and their bytes. */
  async remove (names: readonly string[]): Promise<{ removed: Set<string>, freedBytes: number }> {
    const removed = new Set<string>()
    let freedBytes = 0
    const db = this.readable()
    if (db == null) return { removed, freedBytes }
    await db.transaction(() => {
      for (const name of names) {
        const held = db.get(name)
        if (held == null) continue
        freedBytes += held.byteLength
        removed.add(name)
        void db.remove(name)
      }
    })
    await db.flushed
    return { removed, freedBytes }
  }

  /** every block's name, in name order (no bytes are read) */
  * names (): Generator<string> {
    const db = this.readable()
    if (db == null) return
    for (const key of db.getKeys({})) yield key
  }

  /** blocks and bytes held (reads every block: call rarely) */
  usage (): { blocks: number, bytes: number } {
    let blocks = 0
    let bytes = 0
    const db = this.readable()
    if (db != null) {
      for (const { value } of db.getRange({})) {
        blocks++
        bytes += value.byteLength
      }
    }
    return { blocks, bytes }
  }

  async close (): Promise<void> {
    const env = this.env
    this.env = undefined
    this.db = undefined
    await env?.close()
  }
}
