/**
 * An import whose blocks go straight to the block store while the body is
 * still arriving: the import of an upload with a prepaid ticket (its payment
 * settled before the body was sent, so no staging copy is needed), and of a
 * paid upload with S3 as the store once its payment verified (its PUTs
 * overlap the import; service/uploads/upload.ts, UploadWrites).
 *
 * - Each block is registered in flight (in-flight-blocks.ts) before it is
 *   written, so gc never deletes it before the upload's pin references it;
 *   the upload releases the registrations after its claim or its failure
 *   (service/uploads/ticket-upload.ts; a paid upload's once its pin is recorded,
 *   its settlement note holds them, or it failed: upload.ts).
 * - Each block is noted in the upload's write journal before its write
 *   begins, so a crash leaves a list of what to judge at start
 *   (write-journal.ts).
 * - Each write holds the commit lock shared from its registration to its end,
 *   as a commit does: `pind blocks migrate` switches backends holding it
 *   exclusively, so no write lands on the old disk after the final copy.
 *
 * The writes overlap the body: `put` returns as soon as there is room, with at
 * most WRITES_PER_IMPORT writes of one import and SHARED_WRITES of all imports
 * in flight; a full window holds the body back (TCP backpressure), so memory
 * stays bounded. Each chunk buffer goes back to the pool once its block is
 * stored. `stored` waits for every write and fails with the first failure; a
 * failed write also fails the next `put`, which stops the import.
 */
import type { CID } from 'multiformats/cid'
import { notFound, type BlockBackend } from './block-backend.js'
import { ChunkPool, type Chunker } from './chunk-pool.js'
import { CHUNK_SIZE, type ImportTarget } from './import.js'
import type { InFlightBlocks } from './in-flight-blocks.js'
import type { WriteJournal } from './write-journal.js'
import { S3_TUNING } from './s3-settings.js'
import { Window } from './window.js'

/** writes of one import in flight: as many as a commit's PUTs (S3_TUNING.concurrency) */
export const WRITES_PER_IMPORT = S3_TUNING.concurrency
/** writes of all direct imports in flight (each holds a 1 MiB chunk buffer) */
export const SHARED_WRITES = 32
/** idle chunk buffers kept between uploads (staging.ts's IDLE_CHUNKS, for the same reason) */
const IDLE_CHUNKS = 4

export interface DirectImport {
  /** write blocks here (the importer's target) */
  blockstore: ImportTarget
  /** a fixed-size chunker (1 MiB) whose buffers go back to the pool once their block is stored */
  chunker: (opts?: { ownsInput?: boolean }) => Chunker
  /** a buffer for one block read whole (a CAR's), back to the pool once its block is stored (ChunkPool.forBlock) */
  blockBuffer: (size: number) => Uint8Array
  /** every distinct block written (or being written), in order */
  readonly cids: CID[]
  /** those blocks with their sizes */
  readonly written: Array<{ cid: CID, bytes: number }>
  /** bytes of those blocks */
  readonly bytes: number
  /** resolves once every block is stored durably; rejects with the first write that failed */
  stored: () => Promise<void>
  /**
   * Starts no more writes, waits for those under way, and releases the
   * blocks' registrations (call once, always). A write under way is not
   * aborted: an aborted PUT may still land in the bucket after the failed
   * upload's blocks were deleted.
   */
  release: () => Promise<void>
  /** whether a write failed (its block may still land in the store later: a PUT that timed out) */
  readonly failed: boolean
}

export class DirectImports {
  private readonly chunks = new ChunkPool(CHUNK_SIZE, IDLE_CHUNKS)
  private readonly shared = new Window(SHARED_WRITES)

  /** `onStored`: told of each block the store did not hold before (usage figures) */
  constructor (
    private readonly store: Pick<BlockBackend, 'put' | 'read'>,
    private readonly inFlight: Pick<InFlightBlocks, 'hold' | 'release'>,
    private readonly onStored?: (blocks: number, bytes: number) => void
  ) {}

  /** `journal`: told of each block before its write begins (crash recovery: write-journal.ts) */
  begin (journal?: Pick<WriteJournal, 'note'>): DirectImport {
    const cids: CID[] = []
    const written: Array<{ cid: CID, bytes: number }> = []
    const seen = new Set<string>()
    const own = new Window(WRITES_PER_IMPORT)
    const writes = new Set<Promise<void>>()
    let failure: Error | undefined
    let bytes = 0
    let released = false
    const backend = this.store
    const settle = async (): Promise<void> => { while (writes.size > 0) await Promise.allSettled([...writes]) }
    const put = async (cid: CID, block: Uint8Array): Promise<CID> => {
      let writeEnded: () => void = () => {}
      try {
        if (failure != null) throw failure
        if (released) throw new Error('this import is over')
        const key = cid.toString()
        // the same block twice in one file (a repeated chunk): written and held once
        if (seen.has(key)) { this.chunks.give(block); return cid }
        seen.add(key)
        await own.take()
        await this.shared.take()
        // held before it is written: gc cannot delete it from here on, and it is released with the import;
        // the commit lock stays held (shared) until the write has ended
        try {
          writeEnded = await this.inFlight.hold(cid)
        } catch (err) {
          // not held (the ledger's block fence did not answer): nothing is written
          this.shared.give()
          own.give()
          throw err
        }
        if (released) {
          // the import was given up while this block waited for room: nothing is written
          writeEnded()
          void this.inFlight.release([cid])
          this.shared.give()
          own.give()
          throw new Error('this import is over')
        }
        cids.push(cid)
        written.push({ cid, bytes: block.byteLength })
        bytes += block.byteLength
      } catch (err) {
        this.chunks.give(block)
        throw err
      }
      const size = block.byteLength
      const w = (async () => {
        try {
          await journal?.note(cid, size)
          const added = await this.store.put(cid, block)
          if (added) this.onStored?.(1, size)
        } catch (err) {
          failure ??= err as Error
        } finally {
          writeEnded()
          this.chunks.give(block)
          this.shared.give()
          own.give()
        }
      })()
      writes.add(w)
      void w.finally(() => writes.delete(w))
      return cid
    }
    return {
      blockstore: {
        put,
        has: async (cid: CID) => seen.has(cid.toString()),
        get: async function * (this: void, cid: CID) {
          if (!seen.has(cid.toString())) throw notFound(cid)
          await settle()
          const b = await backend.read(cid)
          if (b == null) throw notFound(cid)
          yield b
        }
      },
      chunker: (opts) => this.chunks.chunker(opts),
      blockBuffer: (size) => this.chunks.forBlock(size),
      cids,
      written,
      get bytes () { return bytes },
      get failed () { return failure != null },
      stored: async () => {
        await settle()
        if (failure != null) throw failure
      },
      release: async () => {
        if (released) return
        released = true
        await settle()
        await this.inFlight.release(cids)
      }
    }
  }
}
