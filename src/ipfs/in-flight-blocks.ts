/**
 * Blocks written straight to the store by uploads still in flight (prepaid
 * ticket uploads, direct-import.ts). No pin references them until the upload
 * claims its ticket, so gc would delete them: each is registered here before
 * it is written, and gc's delete batch (commit lock held exclusively) skips
 * every registered block; other front ends' gc skips it through the mark
 * the commit lock makes in the ledger's block fence (one statement per block
 * on PostgreSQL, none on LMDB).
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
  /** each registration's mark in the lock's fence (front ends sharing a block store), taken away at its release */
  private readonly marks = new Map<string, Array<() => Promise<void>>>()

  constructor (private readonly lock: Pick<CommitLock, 'shared' | 'mark'>) {}

  /**
   * Registers a block (under the commit lock, shared, and marked in its
   * fence): from the moment this resolves, gc leaves it alone, here and on
   * the front ends sharing the block store. The lock stays held until the
   * function it resolves to is called: call it once the block's write has
   * ended (stored or failed), or at once when there is no write; always, or
   * gc and blocks migrate wait forever. Rejects (nothing held) when the mark
   * could not be made.
   */
  async hold (cid: CID): Promise<() => void> {
    const name = blockName(cid)
    let ended!: () => void
    const writeEnded = new Promise<void>(resolve => { ended = resolve })
    await new Promise<void>((resolve, reject) => {
      void this.lock.shared(async () => {
        let unmark
        try {
          unmark = await this.lock.mark([cid])
        } catch (err) {
          reject(err)
          return
        }
        this.counts.set(name, (this.counts.get(name) ?? 0) + 1)
        const marks = this.marks.get(name)
        if (marks == null) this.marks.set(name, [unmark])
        else marks.push(unmark)
        resolve()
        await writeEnded
      })
    })
    return ended
  }

  /**
   * Gives up one registration of each block (each must have been held once per release); gc may
   * delete them at once. Resolves once their marks are taken out of the fence too (an unmark that
   * fails lapses by itself): a request that awaits it leaves no database work behind its answer.
   */
  async release (cids: Iterable<CID>): Promise<void> {
    const unmarks: Array<Promise<void>> = []
    for (const cid of cids) {
      const name = blockName(cid)
      const n = (this.counts.get(name) ?? 0) - 1
      if (n > 0) this.counts.set(name, n)
      else this.counts.delete(name)
      const marks = this.marks.get(name)
      const unmark = marks?.pop()
      if (marks?.length === 0) this.marks.delete(name)
      if (unmark != null) unmarks.push(unmark())
    }
    await Promise.all(unmarks)
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
