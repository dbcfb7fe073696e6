/**
 * The runtime tuning serve runs with, from the operator's settings (`--runtime-*`, and the
 * process's environment for what the runtime reads only at start: GLIBC_TUNABLES, NODE_OPTIONS).
 * pind changes nothing about its runtime unless a setting asks: the figures behind each
 * setting, and the production environment of scripts/pind.service and scripts/Dockerfile, are
 * in docs/runtime.md.
 */
import type { Logger } from '../kernel/log.js'
import { releaseBuffersEarly } from './buffers.js'
import { lastResortCollection, type Collection } from './collection.js'
import { trimRetainedPages } from './heap-trim.js'
import { limitHeapGrowth } from './heap-growth.js'
import { collectWhenIdle } from './idle-collection.js'
import { loadMallocTrim, type MallocTrim } from './malloc-trim.js'

export interface RuntimeSettings {
  runtimeIdleCollection: boolean
  runtimeHeapTrim: boolean
  runtimeMallocTrim: boolean
  runtimeMapTrim: boolean
  runtimeHeapGrowingPercent: number
  runtimeReleaseBuffers: boolean
}

/** a setting that cannot take effect in this process: serve does not start */
export class RuntimeSettingError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'RuntimeSettingError'
  }
}

export interface RuntimeTuning {
  /** what is in effect, for the start-up log line */
  readonly active: Record<string, string | number | boolean>
  /** full collections run so far by the idle collection and the heap trim */
  collections(): number
  /** glibc malloc_trim(0) calls so far (`--runtime-malloc-trim`: one after each of those collections) */
  mallocTrims(): number
  /** the times LMDB's mapped pages left the resident set (`--runtime-map-trim`: one after each idle collection) */
  mapTrims(): number
  /**
   * The V8 flag set at run time (`--runtime-heap-growing-percent`), once serve serves: the
   * binary's code cache of serve's start is made before it (a cache made under changed flags is
   * rejected at the next start), and the start's few dozen MiB of heap grow as V8 decides.
   */
  serving(): void
  stop(): void
}

/** what the process was started with that the runtime reads only then */
export function startEnvironment (env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {}
  for (const key of ['GLIBC_TUNABLES', 'NODE_OPTIONS']) {
    const v = env[key]
    if (v != null && v !== '') out[key] = v
  }
  return out
}

/**
 * The collection, telling `log` the first time one fails (the inspector refused it, say): the
 * idle collection and the heap trim go on without it and try again at their next chance, and
 * pind_runtime_collections_total stops counting, so the operator hears of it once, not at every try.
 */
export function reportedCollection (collect: Collection, log: Pick<Logger, 'warn'>): Collection {
  let told = false
  return async () => {
    try {
      await collect()
    } catch (err) {
      if (!told) {
        told = true
        log.warn('a forced garbage collection failed (--runtime-idle-collection, --runtime-heap-trim): they go on and try again; told once', { error: (err as Error)?.message ?? String(err) })
      }
      throw err
    }
  }
}

export interface TrimmedCollection {
  collect: Collection
  /** the calls after it so far */
  readonly trims: number
}

/**
 * `collect`, then glibc's malloc_trim (`--runtime-malloc-trim`): the collection frees what V8 and the
 * ArrayBuffers held, and the trim gives the kernel the free pages that leaves inside malloc's arenas
 * (docs/runtime.md, "glibc malloc"). A collection that fails is not followed by a trim.
 */
export function trimAfter (collect: Collection, malloc: Pick<MallocTrim, 'trim'>): TrimmedCollection {
  let trims = 0
  return {
    collect: async () => {
      await collect()
      malloc.trim()
      trims++
    },
    get trims () { return trims }
  }
}

/**
 * `collect`, then the pages of the read-only shared file mappings (LMDB's) out of the resident set
 * (`--runtime-map-trim`): they stay in the page cache, and the next read of one maps it again (a
 * minor fault, no I/O). docs/runtime.md, "LMDB's mapped pages". A collection that fails is not
 * followed by it.
 */
export function mapTrimAfter (collect: Collection, addon: Pick<MallocTrim, 'dropFilePages'>): TrimmedCollection {
  let trims = 0
  return {
    collect: async () => {
      await collect()
      if (addon.dropFilePages() >= 0) trims++
    },
    get trims () { return trims }
  }
}

/**
 * `collect`: the full collection to run (default: lastResortCollection's; null: none in this Node); `log`: where a failed
 * one is told; `mallocTrim`: the addon --runtime-malloc-trim and --runtime-map-trim call (default: loaded only when one is on)
 */
export function applyRuntime (settings: RuntimeSettings, opts: { collect?: Collection | null, log?: Pick<Logger, 'warn'>, mallocTrim?: () => MallocTrim | Error } = {}): RuntimeTuning {
  const wanted = [settings.runtimeIdleCollection && '--runtime-idle-collection', settings.runtimeHeapTrim && '--runtime-heap-trim'].filter(Boolean)
  const given = opts.collect === undefined ? lastResortCollection() : opts.collect ?? undefined
  const reported = given != null && opts.log != null ? reportedCollection(given, opts.log) : given
  if (wanted.length > 0 && reported == null) {
    throw new RuntimeSettingError(`${wanted.join(' and ')} need V8's inspector, which this Node was built without: turn ${wanted.length > 1 ? 'them' : 'it'} off`)
  }
  let addon: MallocTrim | undefined
  const loadAddon = (setting: string): MallocTrim => {
    const loaded = addon ?? (opts.mallocTrim ?? loadMallocTrim)()
    if (loaded instanceof Error) throw new RuntimeSettingError(`${setting} cannot work here: ${loaded.message}; turn it off`)
    return (addon = loaded)
  }
  let trimmed: TrimmedCollection | undefined
  if (settings.runtimeMallocTrim) {
    if (wanted.length === 0) throw new RuntimeSettingError('--runtime-malloc-trim runs after the collections of --runtime-idle-collection or --runtime-heap-trim: turn one of them on, or it off')
    trimmed = trimAfter(reported as Collection, loadAddon('--runtime-malloc-trim'))
  }
  const collect = trimmed?.collect ?? reported
  let mapped: TrimmedCollection | undefined
  if (settings.runtimeMapTrim) {
    if (!settings.runtimeIdleCollection) throw new RuntimeSettingError('--runtime-map-trim runs after the collections of --runtime-idle-collection: turn it on, or this off')
    mapped = mapTrimAfter(collect as Collection, loadAddon('--runtime-map-trim'))
  }
  const percent = settings.runtimeHeapGrowingPercent
  if (percent > 0 && !Number.isInteger(percent)) throw new RangeError(`heap growing percent must be a positive integer, not ${percent}`)
  releaseBuffersEarly(settings.runtimeReleaseBuffers)
  // LMDB's pages are dropped when serve goes quiet only: under load (the heap trim's collections) the next reads would fault them in again
  const idle = settings.runtimeIdleCollection && collect != null ? collectWhenIdle({ collect: mapped?.collect ?? collect }) : undefined
  const trim = settings.runtimeHeapTrim && collect != null ? trimRetainedPages({ collect }) : undefined
  return {
    active: {
      idleCollection: idle != null,
      heapTrim: trim != null,
      mallocTrim: settings.runtimeMallocTrim,
      mapTrim: settings.runtimeMapTrim,
      heapGrowingPercent: settings.runtimeHeapGrowingPercent,
      releaseBuffers: settings.runtimeReleaseBuffers,
      ...startEnvironment()
    },
    collections: () => (idle?.runs ?? 0) + (trim?.runs ?? 0),
    mallocTrims: () => trimmed?.trims ?? 0,
    mapTrims: () => mapped?.trims ?? 0,
    serving: () => { if (percent > 0) limitHeapGrowth(percent) },
    stop: () => { idle?.stop(); trim?.stop() }
  }
}
