import { afterEach, describe, expect, it } from 'vitest'
import { applyRuntime, mapTrimAfter, reportedCollection, RuntimeSettingError, startEnvironment, trimAfter, type RuntimeTuning } from '../../../src/runtime/apply.js'
import { releaseBytes } from '../../../src/runtime/buffers.js'

const settings = { runtimeIdleCollection: false, runtimeHeapTrim: false, runtimeMallocTrim: false, runtimeMapTrim: false, runtimeHeapGrowingPercent: 0, runtimeReleaseBuffers: true }

describe('applyRuntime (the --runtime-* settings)', () => {
  let tuning: RuntimeTuning | undefined
  afterEach(() => { tuning?.stop(); tuning = undefined; applyRuntime(settings).stop() })

  it('refuses the forced collections in a Node without the inspector, naming the setting', () => {
    expect(() => applyRuntime({ ...settings, runtimeIdleCollection: true }, { collect: null })).toThrow(RuntimeSettingError)
    expect(() => applyRuntime({ ...settings, runtimeHeapTrim: true }, { collect: null })).toThrow(/--runtime-heap-trim need V8's inspector, which this Node was built without: turn it off/)
    expect(() => applyRuntime({ ...settings, runtimeIdleCollection: true, runtimeHeapTrim: true }, { collect: null })).toThrow(/--runtime-idle-collection and --runtime-heap-trim/)
  })

  it('takes them without any V8 flag (vitest\'s workers run without --expose-gc)', () => {
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined')
    tuning = applyRuntime({ ...settings, runtimeIdleCollection: true, runtimeHeapTrim: true })
    expect(tuning.active).toMatchObject({ idleCollection: true, heapTrim: true })
  })

  it('by default changes nothing but releasing buffers early, and says what is in effect', () => {
    tuning = applyRuntime(settings)
    expect(tuning.active).toMatchObject({ idleCollection: false, heapTrim: false, heapGrowingPercent: 0, releaseBuffers: true })
    expect(tuning.collections()).toBe(0)
    const piece = new Uint8Array(new ArrayBuffer(16))
    releaseBytes(piece)
    expect(piece.buffer.detached).toBe(true)
  })

  it('--runtime-release-buffers false leaves every buffer to the garbage collector', () => {
    tuning = applyRuntime({ ...settings, runtimeReleaseBuffers: false })
    const piece = new Uint8Array(new ArrayBuffer(16))
    releaseBytes(piece)
    expect(piece.buffer.detached).toBe(false)
  })

  it('runs the collections with the gc it is given', () => {
    tuning = applyRuntime({ ...settings, runtimeIdleCollection: true, runtimeHeapTrim: true }, { collect: async () => {} })
    expect(tuning.active).toMatchObject({ idleCollection: true, heapTrim: true })
  })

  it('--runtime-malloc-trim loads the addon, and refuses to start without a collection to follow or without the addon', () => {
    tuning = applyRuntime({ ...settings, runtimeIdleCollection: true, runtimeMallocTrim: true }, { collect: async () => {} })
    expect(tuning.active).toMatchObject({ idleCollection: true, mallocTrim: true })
    expect(tuning.mallocTrims()).toBe(0)
    tuning.stop()
    expect(() => applyRuntime({ ...settings, runtimeMallocTrim: true }, { collect: async () => {} })).toThrow(/--runtime-malloc-trim runs after the collections of --runtime-idle-collection or --runtime-heap-trim/)
    let err: unknown
    try {
      applyRuntime({ ...settings, runtimeHeapTrim: true, runtimeMallocTrim: true }, { collect: async () => {}, mallocTrim: () => new Error('its addon is missing') })
    } catch (e) { err = e }
    expect(err).toBeInstanceOf(RuntimeSettingError)
    expect((err as Error).message).toBe('--runtime-malloc-trim cannot work here: its addon is missing; turn it off')
  })

  it('--runtime-map-trim follows the idle collection only, and refuses to start without it or without the addon', () => {
    tuning = applyRuntime({ ...settings, runtimeIdleCollection: true, runtimeMapTrim: true }, { collect: async () => {} })
    expect(tuning.active).toMatchObject({ idleCollection: true, mapTrim: true })
    expect(tuning.mapTrims()).toBe(0)
    tuning.stop()
    expect(() => applyRuntime({ ...settings, runtimeHeapTrim: true, runtimeMapTrim: true }, { collect: async () => {} })).toThrow(/--runtime-map-trim runs after the collections of --runtime-idle-collection: turn it on, or this off/)
    expect(() => applyRuntime({ ...settings, runtimeIdleCollection: true, runtimeMapTrim: true }, { collect: async () => {}, mallocTrim: () => new Error('its addon is missing') }))
      .toThrow('--runtime-map-trim cannot work here: its addon is missing; turn it off')
    // both settings share one load of the addon
    let loads = 0
    tuning = applyRuntime({ ...settings, runtimeIdleCollection: true, runtimeMallocTrim: true, runtimeMapTrim: true }, { collect: async () => {}, mallocTrim: () => { loads++; return { trim: () => true, dropFilePages: () => 0 } } })
    expect(loads).toBe(1)
  })

  it('drops the mapped pages after each collection that succeeded, never after one that failed', async () => {
    const calls: string[] = []
    let fail = false
    const mapped = mapTrimAfter(async () => { calls.push('collect'); if (fail) throw new Error('refused') }, { dropFilePages: () => { calls.push('drop'); return 4096 } })
    await mapped.collect()
    expect(calls).toEqual(['collect', 'drop'])
    expect(mapped.trims).toBe(1)
    fail = true
    await expect(mapped.collect()).rejects.toThrow('refused')
    expect(calls).toEqual(['collect', 'drop', 'collect'])
    expect(mapped.trims).toBe(1)
  })

  it('trims after each collection that succeeded, never after one that failed', async () => {
    const calls: string[] = []
    let fail = false
    const trimmed = trimAfter(async () => { calls.push('collect'); if (fail) throw new Error('refused') }, { trim: () => { calls.push('trim'); return true } })
    await trimmed.collect()
    await trimmed.collect()
    expect(calls).toEqual(['collect', 'trim', 'collect', 'trim'])
    expect(trimmed.trims).toBe(2)
    fail = true
    await expect(trimmed.collect()).rejects.toThrow('refused')
    expect(calls.slice(4)).toEqual(['collect'])
    expect(trimmed.trims).toBe(2)
  })

  it('reports the start environment the runtime read (GLIBC_TUNABLES, NODE_OPTIONS) and nothing else', () => {
    expect(startEnvironment({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=16384', NODE_OPTIONS: '--expose-gc', PIND_SETTLER_KEY: 'secret', PATH: '/bin' }))
      .toEqual({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=16384', NODE_OPTIONS: '--expose-gc' })
  })

  it('tells the log the first time a collection fails, once, and lets each failure through to its caller', async () => {
    const warnings: Array<[string, unknown]> = []
    let fail = true
    let runs = 0
    const collect = reportedCollection(async () => { runs++; if (fail) throw new Error('inspector refused') }, { warn: (msg, fields) => { warnings.push([msg, fields]) } })
    await expect(collect()).rejects.toThrow('inspector refused')
    await expect(collect()).rejects.toThrow('inspector refused')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]?.[0]).toMatch(/a forced garbage collection failed/)
    expect(warnings[0]?.[1]).toEqual({ error: 'inspector refused' })
    fail = false
    await collect()
    expect(runs).toBe(3)
    expect(warnings).toHaveLength(1)
  })
})
