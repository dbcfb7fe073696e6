/**
 * A bounded on-disk read cache for blocks kept in S3 (`--s3-cache-size`):
 * one file per block in <data-dir>/s3-cache/, named like the block, evicted
 * least recently used first once the total passes the bound. It is only a
 * cache: the bucket is the store. Blocks are cached when read from the bucket
 * and when committed (a new upload's blocks are the likeliest to be read
 * next: each is written from the commit's buffer once it is in the bucket,
 * or a block staged in a file of its own is moved in). Files are written to a
 * temporary name and renamed, so a crash leaves no torn block under a real
 * name; the index is rebuilt from the folder at start.
 */
import { mkdirSync, readdirSync, statSync, unlinkSync } from 'node:fs'
import { readFile, rename, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

const TMP = '.tmp'

export class ReadCache {
  /** name → size, least recently used first */
  private readonly index = new Map<string, number>()
  private total = 0
  /** bumped whenever a block is dropped: a read that began before a drop does not cache what it read */
  private epoch = 0
  private readonly writing = new Set<string>()
  hits = 0
  misses = 0

  constructor (readonly dir: string, readonly maxBytes: number) {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const found: Array<{ name: string, size: number, at: number }> = []
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (name.endsWith(TMP)) { try { unlinkSync(path) } catch {} continue }
      try {
        const st = statSync(path)
        if (st.isFile()) found.push({ name, size: st.size, at: st.atimeMs })
      } catch {}
    }
    found.sort((a, b) => a.at - b.at)
    for (const f of found) this.remember(f.name, f.size)
    for (const name of this.overBound()) { try { unlinkSync(join(dir, name)) } catch {} }
  }

  get bytes (): number {
    return this.total
  }

  get blocks (): number {
    return this.index.size
  }

  has (name: string): boolean {
    return this.index.has(name)
  }

  /** The cached bytes of a block, or undefined (and it counts as most recently used). */
  async get (name: string): Promise<Uint8Array | undefined> {
    const size = this.index.get(name)
    if (size == null) {
      this.misses++
      return undefined
    }
    try {
      const bytes = await readFile(join(this.dir, name))
      this.index.delete(name)
      this.index.set(name, size)
      this.hits++
      return bytes
    } catch {
      this.forget(name)
      this.misses++
      return undefined
    }
  }

  /** A token to pass to `put`: a block dropped in between is not cached. */
  ticket (): number {
    return this.epoch
  }

  /** Caches a block read from the store, given as the pieces it arrived in (best effort: a failure only means no cache). */
  async put (name: string, pieces: readonly Uint8Array[], ticket: number): Promise<void> {
    let size = 0
    for (const p of pieces) size += p.byteLength
    if (size > this.maxBytes / 4 || this.index.has(name) || this.writing.has(name) || ticket !== this.epoch) return
    this.writing.add(name)
    const tmp = join(this.dir, `${name}.${process.pid}${TMP}`)
    try {
      await writeFile(tmp, pieces)
      if (ticket !== this.epoch) { await unlink(tmp).catch(() => {}); return }
      await rename(tmp, join(this.dir, name))
      this.remember(name, size)
      await this.evict()
    } catch {
      await unlink(tmp).catch(() => {})
    } finally {
      this.writing.delete(name)
    }
  }

  /** Moves a committed block's staged file in (same file system: a rename). */
  async adopt (name: string, path: string, size: number): Promise<boolean> {
    if (size > this.maxBytes / 4 || this.index.has(name) || this.writing.has(name)) return false
    try {
      await rename(path, join(this.dir, name))
    } catch {
      return false
    }
    this.remember(name, size)
    await this.evict()
    return true
  }

  /** Removes a block (gc deleted it from the store). */
  async drop (name: string): Promise<void> {
    this.epoch++
    if (!this.index.has(name)) return
    this.forget(name)
    await unlink(join(this.dir, name)).catch(() => {})
  }

  private remember (name: string, size: number): void {
    this.forget(name)
    this.index.set(name, size)
    this.total += size
  }

  private forget (name: string): void {
    const size = this.index.get(name)
    if (size == null) return
    this.index.delete(name)
    this.total -= size
  }

  /** Forgets the least recently used blocks until the total is within the bound; returns their names. */
  private overBound (): string[] {
    const out: string[] = []
    for (const [name] of this.index) {
      if (this.total <= this.maxBytes) break
      this.forget(name)
      out.push(name)
    }
    return out
  }

  private async evict (): Promise<void> {
    await Promise.all(this.overBound().map(async name => { await unlink(join(this.dir, name)).catch(() => {}) }))
  }
}
