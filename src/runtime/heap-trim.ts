/**
 * Gives back, under load, the pages V8 keeps after its heap shrinks (`--runtime-heap-trim`).
 * Why and what it is worth: docs/runtime.md, "Heap trim".
 *
 * It watches the memory neither V8's heap nor the ArrayBuffers account for (anonymous RSS minus
 * the heap's committed size and the ArrayBuffers): when that has stayed `excessBytes` above the
 * lowest it was since the last trim for `confirmChecks` checks in a row, it runs the last-resort
 * collection (collection.ts), at most once per `minIntervalMs`. The level a trim leaves is the
 * next one it compares with, so memory that is not V8's does not make it trim again and again.
 */
import { readFileSync } from 'node:fs'

const MiB = 1024 * 1024

/** what the trim looks at: anonymous RSS, the heap's committed size, the ArrayBuffers (bytes) */
export interface MemorySample {
  anon: number
  heapTotal: number
  arrayBuffers: number
}

export interface TrimPolicy {
  /** how far above its lowest point the unaccounted memory must be to trim */
  excessBytes: number
  /** checks in a row it must have been so */
  confirmChecks: number
  /** the least time between two trims */
  minIntervalMs: number
}

export const TRIM_POLICY: TrimPolicy = { excessBytes: 8 * MiB, confirmChecks: 2, minIntervalMs: 120_000 }

/** The trim's decisions, apart from its timer and the collection (tests drive this). */
export class RetainedPages {
  private base: number | undefined
  private over = 0
  private lastTrim = -Infinity

  constructor (private readonly policy: TrimPolicy = TRIM_POLICY) {}

  /** the memory neither the heap nor the ArrayBuffers account for */
  static unaccounted (m: MemorySample): number {
    return m.anon - m.heapTotal - m.arrayBuffers
  }

  /** a check at `now` (ms): whether to trim now */
  check (m: MemorySample, now: number): boolean {
    const gap = RetainedPages.unaccounted(m)
    if (this.base == null || gap < this.base) {
      this.base = gap
      this.over = 0
      return false
    }
    if (gap - this.base < this.policy.excessBytes) {
      this.over = 0
      return false
    }
    if (++this.over < this.policy.confirmChecks || now - this.lastTrim < this.policy.minIntervalMs) return false
    this.over = 0
    this.lastTrim = now
    return true
  }

  /** after a trim: the level it left is the one to compare with from now on */
  trimmed (m: MemorySample): void {
    this.base = RetainedPages.unaccounted(m)
  }
}

/** anonymous RSS (Linux: /proc/self/status), the heap's committed size and the ArrayBuffers */
export function sampleMemory (): MemorySample | undefined {
  let status: string
  try {
    status = readFileSync('/proc/self/status', 'utf8')
  } catch {
    return undefined
  }
  const kb = /RssAnon:\s+(\d+) kB/.exec(status)?.[1]
  if (kb == null) return undefined
  const { heapTotal, arrayBuffers } = process.memoryUsage()
  return { anon: Number(kb) * 1024, heapTotal, arrayBuffers }
}

export interface HeapTrim {
  /** trims run so far */
  readonly runs: number
  stop(): void
}

/** Checks every `checkMs` (the timer does not keep the process up); nothing to do where /proc/self/status is missing. */
export function trimRetainedPages (opts: { collect: () => Promise<void>, checkMs?: number, policy?: TrimPolicy, sample?: () => MemorySample | undefined }): HeapTrim {
  const { collect, checkMs = 10_000 } = opts
  const sample = opts.sample ?? sampleMemory
  const retained = new RetainedPages(opts.policy)
  let runs = 0
  /** a trim under way: the checks wait for it */
  let trimming = false
  const timer = setInterval(() => {
    if (trimming) return
    const m = sample()
    if (m == null) {
      clearInterval(timer)
      return
    }
    if (!retained.check(m, performance.now())) return
    trimming = true
    collect().then(() => {
      runs++
      const after = sample()
      if (after != null) retained.trimmed(after)
    }, () => { /* none this time: the next checks decide again */ }).finally(() => { trimming = false })
  }, checkMs)
  timer.unref()
  return { get runs () { return runs }, stop: () => { clearInterval(timer) } }
}
