import { spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'

const MiB = 1024 * 1024
const collection = pathToFileURL(fileURLToPath(new URL('../../../src/runtime/collection.ts', import.meta.url))).href

/** runs `body` in a fresh node (type stripping imports collection.ts) with `flags`; its stdout as JSON */
function inNode (flags: string[], body: string): any {
  const script = `import { lastResortCollection } from ${JSON.stringify(collection)}\n${body}`
  const r = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
  expect(r.status, r.stderr).toBe(0)
  // nothing printed beside the figures: no warning (an experimental API would print one)
  expect(r.stderr).toBe('')
  return JSON.parse(r.stdout)
}

describe('lastResortCollection (the collection behind --runtime-idle-collection and --runtime-heap-trim)', () => {
  it('needs no V8 flag: gc is not exposed, and no inspector port is opened', () => {
    expect(inNode([], `
      const { url } = await import('node:inspector')
      const collect = lastResortCollection()
      await collect()
      process.stdout.write(JSON.stringify({ has: collect != null, gc: typeof globalThis.gc, port: url() ?? null }))`)).toEqual({ has: true, gc: 'undefined', port: null })
  })

  it('gives back what a load grew: the young generation back to its minimum, the old one compacted', () => {
    const r = inNode(['--max-semi-space-size=16'], `
      import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8'
      const newSpace = () => getHeapSpaceStatistics().find(s => s.space_name === 'new_space').space_size
      // a load: a steady stream of objects of which many survive a while (grows both generations)
      let keep = []
      for (let round = 0; round < 50; round++) {
        for (let i = 0; i < 20_000; i++) keep.push({ i, s: 'x' + i })
        if (keep.length > 300_000) keep = keep.slice(150_000)
      }
      const grown = newSpace()
      // the load ends: most of what it made dies
      keep = keep.filter((_, i) => i % 50 === 0)
      await lastResortCollection()()
      const h = getHeapStatistics()
      process.stdout.write(JSON.stringify({ grown, after: newSpace(), slack: h.total_heap_size - h.used_heap_size, kept: keep.length }))`)
    expect(r.kept).toBeGreaterThan(0)
    expect(r.grown).toBeGreaterThanOrEqual(16 * MiB)
    // a plain full collection (one mark-compact) leaves the young generation as large as it grew and
    // the old one's emptied pages committed: here ~60 MiB committed beyond what is used
    expect(r.after).toBeLessThanOrEqual(2 * MiB)
    expect(r.slack).toBeLessThan(16 * MiB)
  })
})
