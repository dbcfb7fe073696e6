/**
 * One full collection each time the process goes quiet after work (`--runtime-idle-collection`).
 * Why and what it is worth: docs/runtime.md, "Idle collection".
 *
 * Quiet means the event loop busy less than `idleUtilization` of the time for `quietChecks`
 * checks in a row, `checkMs` apart, after at least one check busier than `busyUtilization`: once
 * per stretch of work, never under load, not again while idle. The heap (its young generation
 * left out) growing by `regrowBytes` since the last collection counts as work too: light work
 * (an archiver pass at idle) grows it without ever looking busy. The timer does not keep the
 * process up.
 */
import { performance } from 'node:perf_hooks'
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8'

export interface IdleCollection {
  /** full collections run so far */
  readonly runs: number
  stop(): void
}

export interface IdleCollectionOptions {
  collect: () => Promise<void>
  checkMs?: number
  quietChecks?: number
  busyUtilization?: number
  idleUtilization?: number
  regrowBytes?: number
  heapSize?: () => number
}

/** the heap's size without the young generation, which grows back to its cap with any trickle of work */
function oldHeapSize (): number {
  return getHeapStatistics().total_heap_size - (getHeapSpaceStatistics().find(sp => sp.space_name === 'new_space')?.space_size ?? 0)
}

export function collectWhenIdle (opts: IdleCollectionOptions): IdleCollection {
  const { collect, checkMs = 5_000, quietChecks = 3, busyUtilization = 0.05, idleUtilization = 0.02, regrowBytes = 4 * 1024 * 1024 } = opts
  const heapSize = opts.heapSize ?? oldHeapSize
  /** the heap's size after the last collection */
  let collectedAt: number | undefined
  let last = performance.eventLoopUtilization()
  let worked = false
  let quiet = 0
  let runs = 0
  /** a collection under way: the checks wait for it */
  let collecting = false
  const timer = setInterval(() => {
    if (collecting) return
    const now = performance.eventLoopUtilization()
    const utilization = performance.eventLoopUtilization(now, last).utilization
    last = now
    if (utilization >= busyUtilization) { worked = true; quiet = 0; return }
    if (utilization >= idleUtilization) { quiet = 0; return }
    if (!worked && collectedAt != null && heapSize() - collectedAt >= regrowBytes) worked = true
    if (!worked || ++quiet < quietChecks) return
    worked = false
    quiet = 0
    collecting = true
    collect().then(() => {
      runs++
      collectedAt = heapSize()
    }, () => { /* none this time (the inspector busy, say): the next stretch of work brings another */ }).finally(() => {
      collecting = false
      // the collection's own time is not work
      last = performance.eventLoopUtilization()
    })
  }, checkMs)
  timer.unref()
  return { get runs () { return runs }, stop: () => { clearInterval(timer) } }
}
