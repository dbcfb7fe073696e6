/**
 * Commits versus gc. A commit (staged blocks renamed into the blockstore,
 * then the ledger record that references them) holds the lock shared; gc
 * deletes a batch of unreferenced blocks holding it exclusively. So gc never
 * deletes a block between its commit and the ledger write that makes it
 * live. Writers are preferred so a steady stream of uploads cannot starve gc.
 *
 * When other processes write the same block store (front ends sharing a
 * ledger and a bucket), the lock in memory does not reach them: the ledger's
 * block fence does. A commit then also marks its blocks in the fence for as
 * long as it holds the lock, and a gc batch runs with the fence closed,
 * skipping the blocks other processes marked.
 */
import { blockName } from './block-backend.js'
import type { BlockFence } from '../ledger/coordination.js'
import type { CID } from 'multiformats/cid'

/** how long a mark outlives a front end that died while writing (a commit's write takes seconds) */
export const MARK_TTL_MS = 60 * 60_000

const NONE: ReadonlySet<string> = new Set()

export class CommitLock {
  private readers = 0
  private writer = false
  private readonly waitingWriters: Array<() => void> = []
  private readonly waitingReaders: Array<() => void> = []

  /** whose marks this process makes (the front end's id, once known): a restart takes its last run's away */
  private owner: string | undefined

  constructor (private readonly fence?: BlockFence) {}

  /**
   * From now on this process's marks are `owner`'s; every mark `owner` made
   * before (its last run, killed while writing) is taken away now. Call it
   * at start, before anything is written. Resolves to how many blocks were marked.
   */
  async ownMarks (owner: string): Promise<number> {
    this.owner = owner
    return await this.fence?.unmarkOwner(owner) ?? 0
  }

  /** `fn` with the lock shared; `blocks`, the blocks it writes, marked in the fence meanwhile */
  async shared<T> (fn: () => Promise<T>, blocks: readonly CID[] = []): Promise<T> {
    if (this.writer || this.waitingWriters.length > 0) await new Promise<void>(resolve => this.waitingReaders.push(resolve))
    else this.readers++
    try {
      if (this.fence == null || blocks.length === 0) return await fn()
      const unmark = await this.mark(blocks)
      try {
        return await fn()
      } finally {
        await unmark()
      }
    } finally {
      this.readers--
      this.next()
    }
  }

  /**
   * Marks blocks in the fence (call it with the lock held shared) until the
   * function it resolves to is called; nothing to do without a fence. An
   * unmark that fails leaves a mark that lapses by itself.
   */
  async mark (blocks: readonly CID[]): Promise<() => Promise<void>> {
    const fence = this.fence
    if (fence == null || blocks.length === 0) return async () => {}
    const ticket = await fence.mark(blocks.map(blockName), MARK_TTL_MS, this.owner)
    return async () => { await fence.unmark(ticket).catch(() => {}) }
  }

  /**
   * `fn` with the lock exclusive; with the fence closed too when `names`
   * (blocks by stored name) are given, `fn` told which of them another
   * process marked.
   */
  async exclusive<T> (fn: (marked: ReadonlySet<string>) => Promise<T>, names: readonly string[] = []): Promise<T> {
    if (this.writer || this.readers > 0) await new Promise<void>(resolve => this.waitingWriters.push(resolve))
    else this.writer = true
    try {
      if (this.fence == null || names.length === 0) return await fn(NONE)
      return await this.fence.closed(names, fn)
    } finally {
      this.writer = false
      this.next()
    }
  }

  private next (): void {
    if (this.writer || this.readers > 0) return
    const w = this.waitingWriters.shift()
    if (w != null) {
      this.writer = true
      w()
      return
    }
    const rs = this.waitingReaders.splice(0)
    this.readers += rs.length
    for (const r of rs) r()
  }
}
