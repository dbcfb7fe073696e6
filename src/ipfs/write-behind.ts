/**
 * Block writes that run behind an import of many blocks (a CAR, a directory
 * of small files): `put` returns once the write has started, with up to
 * MAX_BLOCKS (or MAX_BYTES of blocks) under way, so the import reads and
 * hashes the next block while the earlier ones go to the staging folder.
 * One after the other, every small block waited on its own file's open and
 * write through the thread pool (a 10,000-file directory: ~10,000 trips of
 * latency in a row). `flush` waits for every write and throws the first
 * failure; a block still being written is read back from memory (`get`,
 * `has`), so the importer never misses one it has put.
 *
 * The bytes handed to `put` are kept (not copied) until written: the callers
 * here own theirs (the CAR decoder's and the importer's blocks are their own;
 * pooled chunk buffers, which are reused once written, do not come this way).
 */
import type { CID } from 'multiformats/cid'
import type { ImportTarget } from './import.js'

/** writes under way at most */
export const MAX_BLOCKS = 32
/** bytes of blocks under way at most (one larger block alone is let through) */
export const MAX_BYTES = 8 * 1024 * 1024

export class WriteBehind implements ImportTarget {
  private readonly pending = new Map<string, { bytes: Uint8Array, done: Promise<void> }>()
  private bytes = 0
  private failure: { error: unknown } | undefined

  constructor (private readonly target: ImportTarget) {}

  async put (cid: CID, value: Parameters<ImportTarget['put']>[1], options?: Parameters<ImportTarget['put']>[2]): Promise<CID> {
    // a block given in pieces is written as it comes (no importer here does that)
    if (!(value instanceof Uint8Array)) return await this.target.put(cid, value, options)
    const bytes = value
    const key = cid.toString()
    if (this.pending.has(key)) return cid
    while (this.pending.size > 0 && (this.pending.size >= MAX_BLOCKS || this.bytes + bytes.byteLength > MAX_BYTES)) {
      await Promise.race([...this.pending.values()].map(p => p.done))
    }
    this.throwIfFailed()
    this.bytes += bytes.byteLength
    const done = (async () => {
      try {
        await this.target.put(cid, bytes)
      } catch (error) {
        this.failure ??= { error }
      } finally {
        this.pending.delete(key)
        this.bytes -= bytes.byteLength
      }
    })()
    this.pending.set(key, { bytes, done })
    return cid
  }

  async * get (cid: CID, options?: Parameters<ImportTarget['get']>[1]): AsyncGenerator<Uint8Array> {
    const held = this.pending.get(cid.toString())
    if (held != null) {
      yield held.bytes
      return
    }
    yield * this.target.get(cid, options)
  }

  async has (cid: CID, options?: Parameters<ImportTarget['has']>[1]): Promise<boolean> {
    return this.pending.has(cid.toString()) || await this.target.has(cid, options)
  }

  /** Every write put so far has ended; throws the first that failed. */
  async flush (): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending.values()].map(p => p.done))
    this.throwIfFailed()
  }

  /** Every write put so far has ended, failed or not (before a failed import's blocks are discarded). */
  async settle (): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending.values()].map(p => p.done))
  }

  /** is `err` the failure of a write (not of the import that put it)? */
  isWriteFailure (err: unknown): boolean {
    return this.failure != null && this.failure.error === err
  }

  private throwIfFailed (): void {
    if (this.failure != null) throw this.failure.error
  }
}
