/**
 * A process-wide budget of upload chunk buffers (chunk-pool.ts): the 1 MiB
 * buffers of request bytes read from sockets and not yet written to the
 * staging area, in whatever state (being filled, cut, being written).
 *
 * A buffer is handed out only while fewer than `limit` are out; otherwise the
 * import waits (it stops reading its body, so TCP holds the client back, like
 * http/send-budget.ts), first come, first served. An import that holds no
 * buffer gets one at once, over the limit if need be, so every import
 * progresses and a stalled client cannot starve the others: at most `limit`
 * buffers are out, plus one per import that holds only that. It bounds many
 * concurrent uploads; it does not lower the soak's memory peaks
 * (docs/internals.md, chunk-budget.ts).
 */

/** one import's share: the buffers it holds now */
export interface ChunkHolder {
  out: number
}

export class ChunkBudget {
  private used = 0
  private peakUsed = 0
  private waitCount = 0
  private readonly waiting: Array<{ holder: ChunkHolder, grant: () => void }> = []

  constructor (readonly limit: number) {}

  /** Counts one more buffer for `holder`, once the budget allows it (at once if the holder holds none). */
  async take (holder: ChunkHolder): Promise<void> {
    if (holder.out === 0 || (this.used < this.limit && this.waiting.length === 0)) {
      this.grant(holder)
      return
    }
    this.waitCount++
    await new Promise<void>(resolve => { this.waiting.push({ holder, grant: resolve }) })
  }

  /** A buffer of `holder`'s is back (written, dropped, or never used). */
  give (holder: ChunkHolder): void {
    if (holder.out <= 0) return
    holder.out--
    this.used--
    // first come, first served while there is room; a holder left with none goes at once
    for (let i = 0; i < this.waiting.length;) {
      const w = this.waiting[i] as { holder: ChunkHolder, grant: () => void }
      if (w.holder.out === 0 || this.used < this.limit) {
        this.waiting.splice(i, 1)
        this.grant(w.holder)
        w.grant()
      } else {
        i++
      }
    }
  }

  /** buffers out now */
  get inUse (): number { return this.used }
  /** the most out at once so far */
  get peak (): number { return this.peakUsed }
  /** takes that had to wait */
  get waits (): number { return this.waitCount }

  private grant (holder: ChunkHolder): void {
    holder.out++
    this.used++
    if (this.used > this.peakUsed) this.peakUsed = this.used
  }
}
