/**
 * Blocks written straight to the store by uploads still in flight (prepaid
 * ticket uploads, direct-import.ts). No pin references them until the upload
 * claims its ticket, so gc would delete them: each is registered here before
 * it is written, and gc's delete batch (commit lock held exclusively) skips
 * every registered block.
 *
 * Registration happens under the commit lock held shared, so it never falls
 * inside a delete batch, and the lock stays held until the block's write has
 * ended: whoever takes it exclusively (gc, `pind blocks migrate`'s final pass)
 * finds no write half done. Counts, not a set: two uploads of the same block
 * both hold it. An upload releases its blocks once its pin is recorded or
 * once it failed (they are garbage for the next gc).
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
