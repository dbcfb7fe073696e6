import { afterEach, describe, expect, it } from 'vitest'
import { collectWhenIdle, type IdleCollection } from '../../../src/runtime/idle-collection.js'

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
    idle = collectWhenIdle({ checkMs: 100, quietChecks: 2, busyUtilization: 0.5, idleUtilization: 0.2, collect: async () => { collections++ } })
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
    idle = collectWhenIdle({ checkMs: 100, quietChecks: 2, busyUtilization: 0.5, idleUtilization: 0.2, heapSize: () => heap, collect: async () => { collections++ } })
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
    idle = collectWhenIdle({ checkMs: 100, quietChecks: 2, busyUtilization: 0.5, idleUtilization: 0.2, collect: async () => {} })
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

  it('a collection that fails is not counted, and the next stretch of work brings another', async () => {
    let calls = 0
    idle = collectWhenIdle({ checkMs: 100, quietChecks: 2, busyUtilization: 0.5, idleUtilization: 0.2, collect: async () => { if (++calls === 1) throw new Error('inspector busy') } })
    spin(150)
    expect(await until(() => calls === 1)).toBe(true)
    expect(idle.runs).toBe(0)
    spin(150)
    expect(await until(() => idle?.runs === 1)).toBe(true)
    expect(calls).toBe(2)
  })
})
