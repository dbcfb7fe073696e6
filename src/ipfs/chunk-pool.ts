/**
 * Reused chunk buffers for uploads. The importer's own chunker copies the
 * arriving bytes into a fresh 1 MiB buffer per block: garbage that V8 counts
 * against the old generation and that stays resident until a mark-compact
 * runs. Here the chunker fills buffers from a small pool and the staging
 * blockstore gives each back once its block is on disk.
 *
 * Only a buffer this pool handed out is taken back, once: anything else given
 * to `give` is ignored. The reuse is safe because the importer keeps no
 * reference to a leaf's bytes after the blockstore's `put` resolves (raw
 * leaves, no mtime/mode).
 *
 * A chunker told that it owns its input (`ownsInput`: the upload's body,
 * which nothing else holds once the multipart parser sliced it) frees each
 * incoming piece as soon as its bytes are copied (releaseBytes).
 *
 * Idle buffers are freed once no buffer has been taken or given back for
 * `releaseMs` (10 s by default): a quiet service holds none of them.
 */
import { releaseBytes } from '../runtime/buffers.js'
import type { ChunkBudget, ChunkHolder } from './chunk-budget.js'

/** the importer's chunker shape (`chunker` in @helia/unixfs's add options) */
export type Chunker = (source: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>

export class ChunkPool {
  private readonly idle: Uint8Array[] = []
  /** buffers handed out and not yet given back, each with the chunker's share of the budget it counts against */
  private readonly out = new WeakMap<ArrayBufferLike, ChunkHolder | undefined>()
  /**
   * A buffer a chunker handed out that never comes back (an import that
   * failed with leaves cut but not written) gives its share of the budget
   * back once it is collected: until then it is memory held, as counted.
   */
  private readonly dropped = new FinalizationRegistry<ChunkHolder>((holder) => { this.budget?.give(holder) })
  private lastUse = 0
  private releaser?: NodeJS.Timeout

  /** `budget`: the process-wide bound on the buffers chunkers hold (chunk-budget.ts); none by default */
  constructor (readonly chunkSize: number, private readonly maxIdle: number, private readonly releaseMs = 10_000, readonly budget?: ChunkBudget) {}

  take (): Uint8Array {
    return this.handOut(undefined)
  }

  private handOut (holder: ChunkHolder | undefined): Uint8Array {
    this.lastUse = Date.now()
    const buf = this.idle.pop() ?? new Uint8Array(this.chunkSize)
    this.out.set(buf.buffer, holder)
    if (holder != null) this.dropped.register(buf.buffer, holder, buf.buffer)
    return buf
  }

  /**
   * A buffer for one block of `size` bytes read whole (a CAR's: car-reader.ts): a pooled chunk
   * when it fits (outside the budget: the caller's writes behind bound how many it holds), else a
   * fresh one, which `give` leaves alone.
   */
  forBlock (size: number): Uint8Array {
    return size <= this.chunkSize ? this.take().subarray(0, size) : new Uint8Array(size)
  }

  /** A buffer for a chunker: once the budget (if any) has room for `holder` (chunk-budget.ts). */
  private async takeFor (holder: ChunkHolder): Promise<Uint8Array> {
    if (this.budget == null) return this.take()
    await this.budget.take(holder)
    return this.handOut(holder)
  }

  /** Takes back a buffer `take` handed out (or a view of one); anything else is left alone. */
  give (bytes: Uint8Array): void {
    const ab = bytes.buffer
    if (!this.out.has(ab)) return
    const holder = this.out.get(ab)
    this.out.delete(ab)
    if (holder != null) {
      this.dropped.unregister(ab)
      this.budget?.give(holder)
    }
    this.lastUse = Date.now()
    if (this.idle.length < this.maxIdle) {
      this.idle.push(new Uint8Array(ab, 0, this.chunkSize))
      this.releaseWhenQuiet(this.releaseMs)
    } else {
      // more out than the pool keeps: freed now (as reusing it would be safe, so is freeing it), not
      // left for a collection, which V8 starts for ArrayBuffer memory only ~64 MiB later
      releaseBytes(new Uint8Array(ab))
    }
  }

  /** Frees the idle buffers once the pool has been quiet for `releaseMs` (the timer keeps no process alive). */
  private releaseWhenQuiet (ms: number): void {
    if (this.releaser != null) return
    this.releaser = setTimeout(() => {
      this.releaser = undefined
      const quiet = Date.now() - this.lastUse
      if (quiet < this.releaseMs) { this.releaseWhenQuiet(this.releaseMs - quiet); return }
      // given back, so nobody else holds them: freed now rather than at some later garbage collection
      for (const buf of this.idle.splice(0)) releaseBytes(buf)
    }, ms)
    this.releaser.unref()
  }

  get idleCount (): number {
    return this.idle.length
  }

  /**
   * A fixed-size chunker (the importer's `fixedSize`, same output) that fills
   * pooled buffers: every chunk but the last is exactly `chunkSize` bytes;
   * an empty source gives one empty chunk.
   *
   * `ownsInput`: the source's pieces belong to this chunker alone; each one
   * that is the whole of its ArrayBuffer is detached (freed) once copied.
   *
   * Each buffer is taken within the pool's budget, if it has one, when the
   * first byte for it has arrived: the chunker then waits for room and reads
   * no more of its source meanwhile. A buffer still being filled when the
   * source fails (or the consumer stops) comes back here.
   */
  chunker (opts: { ownsInput?: boolean } = {}): Chunker {
    const size = this.chunkSize
    const free = opts.ownsInput === true
    const holder: ChunkHolder = { out: 0 }
    const take = async (): Promise<Uint8Array> => await this.takeFor(holder)
    const giveBack = (bytes: Uint8Array): void => { this.give(bytes) }
    return async function * (source: AsyncIterable<Uint8Array>) {
      let buf: Uint8Array | undefined
      let filled = 0
      let emitted = false
      try {
        for await (const piece of source) {
          let at = 0
          while (at < piece.byteLength) {
            buf ??= await take()
            const n = Math.min(size - filled, piece.byteLength - at)
            buf.set(n === piece.byteLength ? piece : piece.subarray(at, at + n), filled)
            filled += n
            at += n
            if (at === piece.byteLength && free) releaseBytes(piece)
            if (filled === size) {
              const full = buf
              buf = undefined
              filled = 0
              emitted = true
              yield full
            }
          }
        }
        if (!emitted || filled > 0) {
          const last = (buf ?? await take()).subarray(0, filled)
          buf = undefined
          yield last
        }
      } finally {
        // never handed on: nobody else has it
        if (buf != null) giveBack(buf)
      }
    }
  }
}

