/**
 * The block backend a running serve hands to everything (Helia, bitswap, the
 * gateway, staging, gc, /health), as one indirection, so that `pind blocks
 * migrate` can move a running node from disk to S3: once every block is in
 * the bucket, it switches this to the S3 backend while holding the commit
 * lock (no commit in flight), and every later read and write goes to the
 * bucket. Reads already under way on the old backend finish there (the old
 * files stay on disk).
 */
import type { Blockstore } from 'interface-blockstore'
import type { CID } from 'multiformats/cid'
import type { BlockBackend, BlockBuffers, StagedBlock, StoredBlock } from './block-backend.js'

export class SwitchableBackend implements BlockBackend {
  readonly blockstore: Blockstore & { readonly readAhead?: number }
  private readonly retired: BlockBackend[] = []
  private removed = 0

  constructor (private current: BlockBackend) {
    const store = (): Blockstore => this.current.blockstore
    this.blockstore = {
      has: (cid, o) => store().has(cid, o),
      put: (cid, bytes, o) => store().put(cid, bytes, o),
      putMany: (source, o) => store().putMany(source, o),
      get: (cid, o) => store().get(cid, o),
      getMany: (source, o) => store().getMany(source, o),
      delete: async (cid, o) => { try { await store().delete(cid, o) } finally { this.removed++ } },
      deleteMany: (source, o) => this.counted(store().deleteMany(source, o)),
      getAll: (o) => store().getAll(o),
      // the current store's read-ahead hint (content.ts)
      get readAhead () { return (store() as { readAhead?: number }).readAhead }
    }
  }

  get kind (): BlockBackend['kind'] {
    return this.current.kind
  }

  get packedMax (): number | undefined {
    return this.current.packedMax
  }

  forget (cids?: CID[]): void {
    this.current.forget?.(cids)
  }

  /** the backend in use now */
  get active (): BlockBackend {
    return this.current
  }

  /** how many removals (and switches of store) have ended: a block seen held before it moved may be gone */
  get removals (): number {
    return this.removed
  }

  /** From now on everything goes to `next`; the old backend is closed with this one. */
  switchTo (next: BlockBackend): void {
    this.retired.push(this.current)
    this.current = next
    this.removed++
  }

  private async * counted (deleted: Iterable<CID> | AsyncIterable<CID>): AsyncGenerator<CID> {
    try {
      yield * deleted
    } finally {
      this.removed++
    }
  }

  async commit (blocks: StagedBlock[], signal?: AbortSignal, buffers?: BlockBuffers): Promise<{ added: number, addedBytes: number }> { return await this.current.commit(blocks, signal, buffers) }
  async put (cid: CID, bytes: Uint8Array, signal?: AbortSignal): Promise<boolean> { return await this.current.put(cid, bytes, signal) }
  async prepare (cids: CID[]): Promise<void> { await this.current.prepare?.(cids) }
  async read (cid: CID, signal?: AbortSignal): Promise<Uint8Array | undefined> { return await this.current.read(cid, signal) }
  list (signal?: AbortSignal): AsyncIterable<StoredBlock[]> { return this.current.list(signal) }
  async sizeOf (block: StoredBlock): Promise<number | undefined> { return await this.current.sizeOf(block) }
  async remove (blocks: StoredBlock[]): Promise<{ removed: number, freedBytes: number }> {
    try {
      return await this.current.remove(blocks)
    } finally {
      this.removed++
    }
  }
  async usage (): Promise<{ blocks: number, bytes: number }> { return await this.current.usage() }
  async probe (): Promise<void> { await this.current.probe() }
  writable (): boolean { return this.current.writable() }
  async ready (): Promise<void> { await this.current.ready() }
  describe (): string { return this.current.describe() }

  async close (): Promise<void> {
    for (const b of [this.current, ...this.retired]) await b.close()
  }
}
