import { describe, expect, it } from 'vitest'
import { cappedNodeOptions, YOUNG_GENERATION_CAP } from '../../src/heap.js'
import { MALLOC_TUNABLES, STARTED_AGAIN, tunedEnvironment } from '../../src/malloc.js'

describe('malloc tuning for serve', () => {
  it('adds the mmap threshold to the environment on glibc, keeping other tunables', () => {
    expect(tunedEnvironment({ A: '1' }, true)).toEqual({ A: '1', GLIBC_TUNABLES: MALLOC_TUNABLES, NODE_OPTIONS: YOUNG_GENERATION_CAP, [STARTED_AGAIN]: '1' })
    expect(tunedEnvironment({ GLIBC_TUNABLES: 'glibc.pthread.rseq=0' }, true)?.GLIBC_TUNABLES).toBe(`glibc.pthread.rseq=0:${MALLOC_TUNABLES}`)
    expect(MALLOC_TUNABLES).toBe('glibc.malloc.mmap_threshold=16384')
  })

  it('leaves alone a process that has them, an operator who set malloc tunables, and other C libraries', () => {
    const capped = { NODE_OPTIONS: YOUNG_GENERATION_CAP }
    expect(tunedEnvironment({ ...capped, GLIBC_TUNABLES: MALLOC_TUNABLES }, true)).toBeUndefined()
    expect(tunedEnvironment({ ...capped, GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }, true)).toBeUndefined()
    expect(tunedEnvironment({ ...capped, GLIBC_TUNABLES: 'glibc.pthread.rseq=0:glibc.malloc.trim_threshold=0' }, true)).toBeUndefined()
    expect(tunedEnvironment(capped, false)).toBeUndefined()
    // the young generation's cap is added on its own where malloc is left alone
    expect(tunedEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }, true)).toEqual({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2', NODE_OPTIONS: YOUNG_GENERATION_CAP, [STARTED_AGAIN]: '1' })
    expect(tunedEnvironment({}, false)).toEqual({ NODE_OPTIONS: YOUNG_GENERATION_CAP, [STARTED_AGAIN]: '1' })
  })

  it('starts again at most once, even when GLIBC_TUNABLES did not survive the exec (glibc drops it under AT_SECURE)', () => {
    const once = tunedEnvironment({ A: '1' }, true)
    expect(once).toBeDefined()
    const { GLIBC_TUNABLES: _dropped, NODE_OPTIONS: _also, ...after } = once as NodeJS.ProcessEnv
    expect(tunedEnvironment(after, true)).toBeUndefined()
  })
})

describe("V8's young generation cap for serve (NODE_OPTIONS)", () => {
  it('is added to what NODE_OPTIONS holds', () => {
    expect(YOUNG_GENERATION_CAP).toMatch(/^--max-semi-space-size=\d+$/)
    expect(cappedNodeOptions(undefined)).toBe(YOUNG_GENERATION_CAP)
    expect(cappedNodeOptions('  ')).toBe(YOUNG_GENERATION_CAP)
    expect(cappedNodeOptions('--heapsnapshot-signal=SIGUSR2')).toBe(`--heapsnapshot-signal=SIGUSR2 ${YOUNG_GENERATION_CAP}`)
    // other heap sizes are not the young generation's
    expect(cappedNodeOptions('--max-old-space-size=512')).toBe(`--max-old-space-size=512 ${YOUNG_GENERATION_CAP}`)
  })

  it("keeps the operator's own size of the young generation, or of the whole heap", () => {
    for (const own of ['--max-semi-space-size=32', '--max_semi_space_size=2', '--trace-gc --max-semi-space-size 4', '--max-heap-size=300']) {
      expect(cappedNodeOptions(own), own).toBeUndefined()
      expect(tunedEnvironment({ NODE_OPTIONS: own }, true)?.NODE_OPTIONS, own).toBe(own)
    }
  })
})
