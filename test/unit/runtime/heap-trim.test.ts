/**
 * src/runtime/heap-trim.ts (--runtime-heap-trim): when serve gives back the pages V8 kept after its heap
 * shrank (the decisions, driven with samples), and that the collection it
 * runs does give them back (a real burst of the heap in a child process).
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { RetainedPages, sampleMemory, trimRetainedPages, type MemorySample } from '../../../src/runtime/heap-trim.js'

const MiB = 1024 * 1024
const POLICY = { excessBytes: 8 * MiB, confirmChecks: 2, minIntervalMs: 120_000 }
/** a sample whose memory unaccounted for by the heap and the ArrayBuffers is `gap` MiB */
const at = (gap: number): MemorySample => ({ anon: (100 + gap) * MiB, heapTotal: 70 * MiB, arrayBuffers: 30 * MiB })

describe('RetainedPages (when to trim)', () => {
  it('trims once the unaccounted memory has stayed 8 MiB above its lowest for two checks, not on a passing spike', () => {
    const r = new RetainedPages(POLICY)
    const decide = (gaps: number[], t0: number): boolean[] => gaps.map((g, i) => r.check(at(g), t0 + i * 10_000))
    // the lowest is 2; a spike of one check is not enough, two in a row are
    expect(decide([5, 2, 3, 15, 4, 12, 13], 0)).toEqual([false, false, false, false, false, false, true])
  })

  it('trims at most once per interval, and compares with the level a trim left from then on', () => {
    const r = new RetainedPages(POLICY)
    expect([0, 20, 20].map((g, i) => r.check(at(g), i * 10_000))).toEqual([false, false, true])
    // the trim gave back little (what stayed is not V8's to give): that level is the new lowest
    r.trimmed(at(18))
    expect([19, 25, 25, 30, 30, 20].map((g, i) => r.check(at(g), 30_000 + i * 10_000))).toEqual([false, false, false, false, false, false])
    // (two checks in a row above it, 30 and 30, within the interval: no trim); far enough above it, and the interval past: again
    expect([27, 27].map((g, i) => r.check(at(g), 160_000 + i * 10_000))).toEqual([false, true])
  })

  it('measures anonymous memory from /proc/self/status and V8\'s own figures', () => {
    const m = sampleMemory() as MemorySample
    expect(m.anon).toBeGreaterThan(10 * MiB)
    expect(m.heapTotal).toBeGreaterThan(MiB)
    expect(m.arrayBuffers).toBeGreaterThanOrEqual(0)
  })

  it('runs its collection from the timer when the policy says so', async () => {
    let collections = 0
    const samples = [0, 20, 20, 20, 20]
    const trim = trimRetainedPages({ checkMs: 20, policy: { ...POLICY, minIntervalMs: 0 }, sample: () => at(samples.shift() ?? 0), collect: async () => { collections++ } })
    try {
      const deadline = performance.now() + 5_000
      while (trim.runs === 0 && performance.now() < deadline) await new Promise(resolve => setTimeout(resolve, 10))
      expect(trim.runs).toBe(1)
      expect(collections).toBe(1)
    } finally {
      trim.stop()
    }
  })
})

describe('the trim\'s collection', () => {
  it('gives back the pages a burst of the heap left resident, which plain collections keep', () => {
    // a fresh process with the production young generation cap (scripts/pind.service), and gc exposed
    // here only to run the plain collections to compare with: a burst of small objects, dropped
    const heap = pathToFileURL(fileURLToPath(new URL('../../../src/runtime/collection.ts', import.meta.url))).href
    const script = `
      import { readFileSync } from 'node:fs'
      import { lastResortCollection } from ${JSON.stringify(heap)}
      const trim = lastResortCollection()
      const major = globalThis.gc
      // as heap-trim.ts's sampleMemory: anonymous RSS less the heap's committed size and the ArrayBuffers
      const unaccounted = () => {
        const anon = Number(/RssAnon:\\s+(\\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024
        const { heapTotal, arrayBuffers } = process.memoryUsage()
        return anon - heapTotal - arrayBuffers
      }
      let burst = []
      for (let i = 0; i < 400000; i++) burst.push({ a: i, b: 'y' + i, c: [i, i] })
      burst = null
      major({ type: 'major' }); major({ type: 'major' })
      const kept = unaccounted()
      await trim()
      const after = unaccounted()
      process.stdout.write(JSON.stringify({ kept, after }))`
    const r = spawnSync(process.execPath, ['--max-semi-space-size=4', '--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
    expect(r.status, r.stderr).toBe(0)
    const { kept, after } = JSON.parse(r.stdout) as { kept: number, after: number }
    // measured: ~55 MiB kept after two major collections, ~5 MiB after the trim
    expect(kept).toBeGreaterThan(30 * MiB)
    expect(after).toBeLessThan(kept - 25 * MiB)
  })
})
