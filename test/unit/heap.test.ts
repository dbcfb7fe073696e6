import { spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8'
import { afterEach, describe, expect, it } from 'vitest'
import { collectWhenIdle, fullCollection, type IdleCollection } from '../../src/heap.js'

const MiB = 1024 * 1024

/** blocks the event loop for `ms` (busy, as under load), without allocating */
function spin (ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) { /* busy */ }
}

/** polls `check` every 10 ms (the event loop stays idle in between) until it holds or `ms` pass */
async function until (check: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = performance.now() + ms
  while (!check()) {
    if (performance.now() > deadline) return false
    await new Promise(resolve => setTimeout(resolve, 10))
  }
  return true
}

describe('collectWhenIdle', () => {
  let idle: IdleCollection | undefined
  afterEach(() => { idle?.stop() })

  it('collects once when the process goes quiet after work, and not again while quiet', async () => {
    let collections = 0
    idle = collectWhenIdle({ checkMs: 100, quietChecks: 2, busyUtilization: 0.5, idleUtilization: 0.2, collect: () => { collections++ } })
    // work: the event loop busy for 300 ms
    spin(300)
    expect(await until(() => collections === 1)).toBe(true)
    expect(idle.runs).toBe(1)
    const t = performance.now()
    await until(() => performance.now() - t > 800)
    expect(collections).toBe(1)
    // more work, quiet again: one more
    spin(300)
    expect(await until(() => collections === 2)).toBe(true)
  })

  it('collects again while quiet once the heap has grown by 4 MiB since its last collection (work too light to count)', async () => {
    let heap = 50 * MiB
    let collections = 0
    idle = collectWhenIdle({ checkMs: 100, quietChecks: 2, busyUtilization: 0.5, idleUtilization: 0.2, heapSize: () => heap, collect: () => { collections++ } })
    spin(300)
    expect(await until(() => collections === 1)).toBe(true)
    // quiet, the heap grows a little: nothing
    heap += 3 * MiB
    const t = performance.now()
    await until(() => performance.now() - t > 600)
    expect(collections).toBe(1)
    // by 4 MiB over what the collection left: once more, and not again
    heap += 1 * MiB
    expect(await until(() => collections === 2)).toBe(true)
    const t2 = performance.now()
    await until(() => performance.now() - t2 > 600)
    expect(collections).toBe(2)
  })

  it('does not collect while idle without work, nor under load', async () => {
    idle = collectWhenIdle({ checkMs: 100, quietChecks: 2, busyUtilization: 0.5, idleUtilization: 0.2, collect: () => {} })
    const t = performance.now()
    await until(() => performance.now() - t > 800)
    expect(idle.runs).toBe(0)
    // busy 90 ms of every 100: never quiet
    const load = setInterval(() => { spin(90) }, 100)
    try {
      const t2 = performance.now()
      await until(() => performance.now() - t2 > 1000)
      expect(idle.runs).toBe(0)
    } finally {
      clearInterval(load)
    }
  })
})

describe('fullCollection (the idle collection)', () => {
  const newSpace = (): number => (getHeapSpaceStatistics().find(s => s.space_name === 'new_space')?.space_size ?? NaN)

  it('gives back what a load grew: the young generation back to its minimum, the old one compacted', () => {
    // a load: a steady stream of objects of which many survive a while (grows both generations)
    let keep: Array<{ i: number, s: string }> = []
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 20_000; i++) keep.push({ i, s: `x${i}` })
      if (keep.length > 300_000) keep = keep.slice(150_000)
    }
    const grown = newSpace()
    expect(grown).toBeGreaterThanOrEqual(16 * MiB)
    // the load ends: most of what it made dies
    keep = keep.filter((_, i) => i % 50 === 0)
    fullCollection()()
    expect(keep.length).toBeGreaterThan(0)
    // a plain gc() (one mark-compact) leaves the young generation as large as it grew and
    // the old one's emptied pages committed: here ~60 MiB committed beyond what is used
    expect(newSpace()).toBeLessThanOrEqual(2 * MiB)
    const h = getHeapStatistics()
    expect(h.total_heap_size - h.used_heap_size).toBeLessThan(16 * MiB)
  })
})

describe('limitHeapGrowth (the old generation grows by half of what survives)', () => {
  /**
   * A fresh process: ~25 MiB that stays, and a churn of objects that live
   * long enough to be promoted, then die (as a server's requests do). Counts
   * the full (mark-compact) collections the churn took: each comes when the
   * old generation reaches the limit set from what survived the last one.
   */
  const fullCollections = (limit: boolean): number => {
    const heap = pathToFileURL(fileURLToPath(new URL('../../src/heap.ts', import.meta.url))).href
    const script = `
      import { PerformanceObserver, constants } from 'node:perf_hooks'
      import { limitHeapGrowth } from ${JSON.stringify(heap)}
      if (${String(limit)}) limitHeapGrowth()
      let majors = 0
      const seen = new PerformanceObserver((list) => {
        for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++
      })
      seen.observe({ entryTypes: ['gc'] })
      const live = []
      for (let i = 0; i < 300_000; i++) live.push({ i, s: 'live' + i })
      const ring = new Array(200_000)
      for (let round = 0; round < 150; round++) {
        for (let i = 0; i < ring.length; i++) ring[i] = { round, i, s: 'churn' + i }
      }
      await new Promise(resolve => setTimeout(resolve, 100))
      seen.disconnect()
      process.stdout.write(JSON.stringify({ majors, live: live.length }))`
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
    expect(r.status, r.stderr).toBe(0)
    return (JSON.parse(r.stdout) as { majors: number }).majors
  }

  it('collects the old generation half as often again or more under a churn of promoted objects as V8 left to itself (10 vs 19 here)', () => {
    const own = fullCollections(false)
    const limited = fullCollections(true)
    console.log(`full collections: V8 alone ${own}, limited ${limited}`)
    expect(own).toBeGreaterThan(0)
    expect(limited).toBeGreaterThanOrEqual(Math.ceil(own * 1.5))
  })
})
