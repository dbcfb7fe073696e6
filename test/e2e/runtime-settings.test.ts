/**
 * The runtime settings of the packaged binary (src/runtime/, docs/runtime.md): with the
 * production environment of scripts/pind.service (the same as scripts/Dockerfile's), serve runs
 * with V8's young generation capped and its idle collection on; without it, pind changes nothing
 * about its runtime; and the forced collections need no V8 flag (no `--expose-gc`, which costs every
 * command Node's code cache of its builtins).
 * The young generation is bounded by the cap, not held: once the idle collection has shrunk it to
 * 1-2 MiB, the next load grows it again (held there, a load promoted what would have died young:
 * 3.9 times the scavenges, 37% fewer uploads).
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BINARY, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { dockerfileRuntimeEnv, unitRuntimeEnv } from '../../scripts/runtime-env.mjs'
import { freePort, waitFor } from '../helpers/ports.js'

const MiB = 1024 * 1024
const PRODUCTION = unitRuntimeEnv()
/** the young generation's cap per semi-space the production NODE_OPTIONS sets */
const SEMI_SPACE_MAX_MIB = Number(/--max-semi-space-size=(\d+)/.exec(PRODUCTION.NODE_OPTIONS ?? '')?.[1])
let pind: PindProcess
let metricsUrl: string

beforeAll(async () => {
  const port = await freePort()
  metricsUrl = `http://127.0.0.1:${port}/metrics`
  pind = await startPind({ binary: BINARY, args: ['--metrics-listen', `127.0.0.1:${port}`, '--rate-limit-reads', '0', '--rate-limit-unpaid', '0'], env: PRODUCTION })
})

afterAll(async () => { await pind?.stop() })

/** NODE_OPTIONS of a running process, as it was started (the last exec) */
function nodeOptions (pid: number): string[] {
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
  return env.find(e => e.startsWith('NODE_OPTIONS='))?.slice('NODE_OPTIONS='.length).split(' ') ?? []
}

/** the new space's committed size (both semi-spaces), from /metrics */
async function newSpace (): Promise<number> {
  const text = await (await fetch(metricsUrl)).text()
  return Number(/^pind_nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)/m.exec(text)?.[1] ?? NaN)
}

/** a load: `rounds` of 32 requests at once for the API description (~100 KB of JSON each) */
async function load (rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await Promise.all(Array.from({ length: 32 }, async () => { await (await fetch(`${pind.url}/openapi.json`)).arrayBuffer() }))
  }
}

describe('the runtime settings', () => {
  it('are the same in the systemd unit and the Dockerfile: a young generation cap, the collections on, gc not exposed', () => {
    expect(dockerfileRuntimeEnv()).toEqual(PRODUCTION)
    expect(PRODUCTION).toMatchObject({ PIND_RUNTIME_IDLE_COLLECTION: 'true', PIND_RUNTIME_HEAP_TRIM: 'true', PIND_RUNTIME_MALLOC_TRIM: 'true', PIND_RUNTIME_MAP_TRIM: 'true' })
    expect(PRODUCTION.NODE_OPTIONS?.split(' ')).not.toContain('--expose-gc')
    expect(SEMI_SPACE_MAX_MIB).toBeGreaterThan(0)
  })

  it('serve runs with the production NODE_OPTIONS as given: it does not start itself again', () => {
    expect(nodeOptions(pind.pid)).toEqual(PRODUCTION.NODE_OPTIONS?.split(' '))
  })

  it('takes the forced collections in a process started without any V8 flag', async () => {
    const dataDir = tempDir()
    const bare = await startPind({ binary: BINARY, dataDir, args: ['--runtime-idle-collection', '--runtime-heap-trim'], env: { NODE_OPTIONS: '', GLIBC_TUNABLES: '', PIND_LOG_LEVEL: 'info' } })
    try {
      const serving = bare.stderr().split('\n').map(l => { try { return JSON.parse(l) } catch { return undefined } }).find(l => l?.msg === 'serving')
      expect(serving?.runtime).toMatchObject({ idleCollection: true, heapTrim: true })
      expect(nodeOptions(bare.pid).filter(Boolean)).toEqual([])
    } finally {
      await bare.stop()
    }
  })

  it('grows again under load after the idle collection shrank it, up to the cap', async () => {
    // quiet after start-up: V8's memory reducer (seconds after start) or the idle collection (15 s
    // quiet after work) shrinks the young generation to its minimum. Polled every 2 s at most: quiet
    // is an event loop busy under 2% of the time, and a /metrics scrape every 200 ms on a loaded
    // machine kept serve above that (the idle collection never came in a full CI run)
    await waitFor(async () => (await newSpace()) <= 2 * MiB ? true : undefined, 'the idle collection', 60_000, 2000)
    let grown = 0
    for (let i = 0; i < 20 && grown <= 2 * MiB; i++) {
      await load(10)
      grown = await newSpace()
    }
    expect(grown).toBeGreaterThan(2 * MiB)
    // and never past the cap under more load
    await load(40)
    expect(await newSpace()).toBeLessThanOrEqual(2 * SEMI_SPACE_MAX_MIB * MiB)
  }, 120_000)

  it('runs the idle collection, through V8\'s inspector in the binary, once serve goes quiet after that load', async () => {
    // the load above was work; quiet is three checks 5 s apart under 2% busy: polled every 5 s, so the polls stay under that
    // (the heap trim's collections under that load count too, and are followed by malloc_trim: the map
    // trim follows the idle collection only, so it is what tells that one ran)
    const mapTrims = async (): Promise<number> => Number(/^pind_runtime_map_trims_total (\S+)/m.exec(await (await fetch(metricsUrl)).text())?.[1] ?? NaN)
    expect(await waitFor(async () => (await mapTrims()) >= 1 ? true : undefined, 'pind_runtime_map_trims_total >= 1 (LMDB\'s mapped pages dropped after the idle collection: --runtime-map-trim)', 90_000, 5000)).toBe(true)
    // and glibc's malloc_trim after it (--runtime-malloc-trim): its addon loads from inside the binary
    const metrics = await (await fetch(metricsUrl)).text()
    expect(Number(/^pind_runtime_collections_total (\S+)/m.exec(metrics)?.[1] ?? NaN)).toBeGreaterThanOrEqual(1)
    const trims = Number(/^pind_runtime_malloc_trims_total (\S+)/m.exec(metrics)?.[1] ?? NaN)
    expect(trims).toBeGreaterThanOrEqual(1)
  }, 120_000)
})
