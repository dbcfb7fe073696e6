/**
 * Gives back, under load, the pages V8 keeps after its heap shrinks.
 *
 * V8 does not return the pages a collection empties: a burst of allocation
 * that grows the heap by 15 MiB leaves those pages resident after the heap
 * is back to its size, and only a memory-reducing collection (V8's memory
 * reducer, which runs once the process goes quiet, or heap.ts's idle
 * collection) unmaps them. Measured with node alone (Node 24, serve's young
 * generation cap): 400,000 small objects made and dropped, anonymous memory
 * 79 MiB with 72 MiB of heap; after two plain major collections the heap
 * was 13 MiB and anonymous memory still 72 MiB, also 2 s later; after the
 * last-resort collection, 12 MiB. `--no-decommit-pooled-pages`,
 * `--compact-on-every-full-gc` and `--lazy-new-space-shrinking` kept it too.
 *
 * A server under constant load never goes quiet, so each burst ratchets its
 * memory up to the highest the heap has been (issue 18). In a 30-minute
 * soak (16 + 8 clients, sampled every 0.5 s): at minute 24 a burst took the
 * heap from 77 to 92 MiB for a few seconds; V8's pages stayed 13 MiB higher
 * for the rest of the load, which was the growth the soak's verdict saw
 * (+10% over the last 15 minutes), and went only at the idle collection.
 *
 * This watches the memory V8 and the ArrayBuffers do not account for
 * (anonymous RSS minus the heap's committed size and the ArrayBuffers):
 * when it has stayed `excessBytes` above the lowest it was since the last
 * trim for `confirmChecks` checks in a row (a passing spike is not enough),
 * it runs the last-resort collection (heap.ts fullCollection: it unmaps the
 * kept pages), at most once per `minIntervalMs`. What is above that lowest
 * point without being V8's (malloc's arenas grown by the load, say) does not
 * make it trim again and again: the level after a trim is the next one it
 * compares with. The cost of a trim is that collection's pause (a few
 * mark-compacts of the heap) and a young generation that grows back to its
 * cap over the next seconds.
 */
import { readFileSync } from 'node:fs'
import { fullCollection } from './heap.js'

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
export function trimRetainedPages (opts: { checkMs?: number, policy?: TrimPolicy, sample?: () => MemorySample | undefined, collect?: () => void } = {}): HeapTrim {
  const { checkMs = 10_000 } = opts
  const sample = opts.sample ?? sampleMemory
  const retained = new RetainedPages(opts.policy)
  let collect = opts.collect
  let runs = 0
  const timer = setInterval(() => {
    const m = sample()
    if (m == null) {
      clearInterval(timer)
      return
    }
    if (!retained.check(m, performance.now())) return
    collect ??= fullCollection()
    collect()
    runs++
    const after = sample()
    if (after != null) retained.trimmed(after)
  }, checkMs)
  timer.unref()
  return { get runs () { return runs }, stop: () => { clearInterval(timer) } }
}
