import { spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { limitHeapGrowth } from '../../../src/runtime/heap-growth.js'

describe('limitHeapGrowth(50) (--runtime-heap-growing-percent: the old generation grows by half of what survives)', () => {
  /**
   * A fresh process: ~25 MiB that stays, and a churn of objects that live
   * long enough to be promoted, then die (as a server's requests do). Counts
   * the full (mark-compact) collections the churn took: each comes when the
   * old generation reaches the limit set from what survived the last one.
   */
  const fullCollections = (limit: boolean): number => {
    const heap = pathToFileURL(fileURLToPath(new URL('../../../src/runtime/heap-growth.ts', import.meta.url))).href
    const script = `
      import { PerformanceObserver, constants } from 'node:perf_hooks'
      import { limitHeapGrowth } from ${JSON.stringify(heap)}
      if (${String(limit)}) limitHeapGrowth(50)
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

  it('refuses a percentage that is not a positive integer', () => {
    expect(() => { limitHeapGrowth(0) }).toThrow(RangeError)
    expect(() => { limitHeapGrowth(1.5) }).toThrow(RangeError)
  })

  it('collects the old generation half as often again or more under a churn of promoted objects as V8 left to itself (10 vs 19 here)', () => {
    const own = fullCollections(false)
    const limited = fullCollections(true)
    console.log(`full collections: V8 alone ${own}, limited ${limited}`)
    expect(own).toBeGreaterThan(0)
    expect(limited).toBeGreaterThanOrEqual(Math.ceil(own * 1.5))
  })
})
