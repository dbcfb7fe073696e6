/**
 * Blocks written straight to the store by uploads still in flight (uploads
 * with a prepaid ticket, direct-import.ts). No pin references them until the
 * upload claims its ticket, so gc would see them as garbage: each is
 * registered here before it is written, and gc's delete batch (which holds
 * the commit lock exclusively) skips every registered block.
 *
 * Registration happens under the commit lock held shared, so it can never
 * fall inside a delete batch: either the batch ran first (and the write that
 * follows the registration puts the block back), or the registration did
 * (and the batch skips it). The lock stays held, shared, until the block's
 * write has ended, as a commit holds it until its blocks are stored: so
 * whoever takes it exclusively finds no write half done. `pind blocks
 * migrate` relies on that: its final pass (the lock held exclusively) lists
 * the disk once every write to it has landed, and the writes that come
 * after it go to the bucket it switched to. Counts, not a set: two uploads of the same block
 * both hold it until both are done. An upload releases its blocks once its
 * pin is recorded (the ledger holds them from then on) or once it failed
 * (they are garbage for the next gc).
 */
import { blockName } from './block-backend.js'
import type { CommitLock } from './commit-lock.js'
import type { CID } from 'multiformats/cid'

export class InFlightBlocks {
  private readonly counts = new Map<string, number>()

  constructor (private readonly lock: Pick<CommitLock, 'shared'>) {}

  /**
   * Registers a block (under the commit lock, shared): from the moment this
   * resolves, gc leaves it alone. The lock stays held until the function it
   * resolves to is called: call it once the block's write has ended (stored
   * or failed), or at once when there is no write; always, or gc and blocks
   * migrate wait forever.
   */
  async hold (cid: CID): Promise<() => void> {
    const name = blockName(cid)
    let ended!: () => void
    const writeEnded = new Promise<void>(resolve => { ended = resolve })
    await new Promise<void>(resolve => {
      void this.lock.shared(async () => {
        this.counts.set(name, (this.counts.get(name) ?? 0) + 1)
        resolve()
        await writeEnded
      })
    })
    return ended
  }

  /** Gives up one registration of each block (each must have been held once per release). */
  release (cids: Iterable<CID>): void {
    for (const cid of cids) {
      const name = blockName(cid)
      const n = (this.counts.get(name) ?? 0) - 1
      if (n > 0) this.counts.set(name, n)
      else this.counts.delete(name)
    }
  }

  /** whether a block (by its stored name) is held by an upload in flight */
  has (name: string): boolean {
    return this.counts.has(name)
  }

  /** blocks held (metrics, tests) */
  get size (): number {
    return this.counts.size
  }
}
