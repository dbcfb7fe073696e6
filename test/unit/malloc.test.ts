import { describe, expect, it } from 'vitest'
import { MALLOC_TUNABLES, STARTED_AGAIN, tunedEnvironment } from '../../src/malloc.js'

describe('malloc tuning for serve', () => {
  it('adds the mmap threshold to the environment on glibc, keeping other tunables', () => {
    expect(tunedEnvironment({ A: '1' }, true)).toEqual({ A: '1', GLIBC_TUNABLES: MALLOC_TUNABLES, [STARTED_AGAIN]: '1' })
    expect(tunedEnvironment({ GLIBC_TUNABLES: 'glibc.pthread.rseq=0' }, true)?.GLIBC_TUNABLES).toBe(`glibc.pthread.rseq=0:${MALLOC_TUNABLES}`)
    expect(MALLOC_TUNABLES).toBe('glibc.malloc.mmap_threshold=16384')
  })

  it('leaves alone a process that has them, an operator who set malloc tunables, and other C libraries', () => {
    expect(tunedEnvironment({ GLIBC_TUNABLES: MALLOC_TUNABLES }, true)).toBeUndefined()
    expect(tunedEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }, true)).toBeUndefined()
    expect(tunedEnvironment({ GLIBC_TUNABLES: 'glibc.pthread.rseq=0:glibc.malloc.trim_threshold=0' }, true)).toBeUndefined()
    expect(tunedEnvironment({}, false)).toBeUndefined()
  })

  it('starts again at most once, even when GLIBC_TUNABLES did not survive the exec (glibc drops it under AT_SECURE)', () => {
    const once = tunedEnvironment({ A: '1' }, true)
    expect(once).toBeDefined()
    const { GLIBC_TUNABLES: _dropped, ...after } = once as NodeJS.ProcessEnv
    expect(tunedEnvironment(after, true)).toBeUndefined()
  })
})
