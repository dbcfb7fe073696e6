/**
 * A process-wide budget of upload chunk buffers (chunk-pool.ts): the 1 MiB
 * buffers of request bytes read from sockets and not yet written to the
 * staging area, whatever state they are in (being filled, cut and waiting
 * for a leaf write, being written).
 *
 * Without it each import holds one buffer being filled, the leaves it is
 * writing (one of its own, more from import.ts's shared leaf writes) and a
 * cut leaf waiting for a write: N concurrent uploads could hold 2N + 8 MiB
 * (72 MiB at the default --upload-concurrency of 32), more as their writes
 * queue in libuv's thread pool behind every import's fdatasyncs
 * (staging-files.ts).
 *
 * With the budget a buffer is handed out only while fewer than `limit` are
 * out; otherwise the import waits (it stops reading its body: TCP holds the
 * client back, like the gateway's send budget, http/send-budget.ts), first
 * come, first served. An import that holds no buffer at all gets one at
 * once, over the limit if need be: every import makes progress, and one
 * whose client stalls mid-chunk holds at most its one partly filled buffer
 * (resident only as far as it is filled) and cannot starve the others. So
 * at most `limit` buffers are out, plus one per import that holds only that.
 *
 * What it is worth in the soak (measured): little. Sampled every
 * 0.5-1 s through 4-minute soaks (16 + 8 clients, /metrics'
 * pind_upload_chunk_buffers beside /proc/<pid>/smaps), the buffers out were
 * 0-1 at the median, 4-8 at the 90th percentile and 10-17 at most, and 0-5 at
 * the samples where anonymous memory peaked (correlation with anonymous
 * memory 0.04-0.22). The peaks are transient mappings of 1-32 MiB that come
 * and go within a second: ArrayBuffers in part (0-35 MiB above the base at
 * those samples), and in part memory that /metrics counts neither as
 * ArrayBuffers nor as the JS heap. They were as high with the soak's gateway
 * reads taken out, and with one pin fetched at a time. So the budget
 * (staging.ts: 16) is a bound for many concurrent uploads, not what lowers
 * the soak's peak; the soak's buffers reach it rarely
 * (pind_upload_chunk_buffer_waits_total: 5 waits in one 4-minute run, none
 * in two 5-minute ones: docs/runtime.md has those pairs' figures).
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
