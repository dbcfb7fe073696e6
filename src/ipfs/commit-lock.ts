/**
 * Commits versus gc. A commit (staged blocks renamed into the blockstore,
 * then the ledger record that references them) holds the lock shared; gc
 * deletes a batch of unreferenced blocks holding it exclusively. So gc never
 * deletes a block between its commit and the ledger write that makes it
 * live. Writers are preferred so a steady stream of uploads cannot starve gc.
 */
export class CommitLock {
  private readers = 0
  private writer = false
  private readonly waitingWriters: Array<() => void> = []
  private readonly waitingReaders: Array<() => void> = []

  async shared<T> (fn: () => Promise<T>): Promise<T> {
    if (this.writer || this.waitingWriters.length > 0) await new Promise<void>(resolve => this.waitingReaders.push(resolve))
    else this.readers++
    try {
      return await fn()
    } finally {
      this.readers--
      this.next()
    }
  }

  async exclusive<T> (fn: () => Promise<T>): Promise<T> {
    if (this.writer || this.readers > 0) await new Promise<void>(resolve => this.waitingWriters.push(resolve))
    else this.writer = true
    try {
      return await fn()
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
