/**
 * V8's young generation in the running `serve` of the packaged binary
 * (issue 18): bounded by `--max-semi-space-size`, which serve's start-again
 * carries in NODE_OPTIONS (src/heap.ts, src/malloc.ts), and no longer held at
 * its size: once the idle collection has shrunk it to 1-2 MiB, the next load
 * grows it again (held there, the load promoted what would have died young:
 * 3.9 times the scavenges, 37% fewer uploads).
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SEMI_SPACE_MAX_MIB, YOUNG_GENERATION_CAP } from '../../src/heap.js'
import { BINARY, startPind, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'

const MiB = 1024 * 1024
let pind: PindProcess
let metricsUrl: string

beforeAll(async () => {
  const port = await freePort()
  metricsUrl = `http://127.0.0.1:${port}/metrics`
  pind = await startPind({ binary: BINARY, args: ['--metrics-listen', `127.0.0.1:${port}`, '--rate-limit-reads', '0', '--rate-limit-unpaid', '0'] })
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

describe("serve's young generation", () => {
  it('runs with the cap in NODE_OPTIONS, in the binary and under node (dist/pind.cjs), after what the operator put there', async () => {
    expect(nodeOptions(pind.pid)).toContain(YOUNG_GENERATION_CAP)
    const bundled = await startPind({ env: { NODE_OPTIONS: '--stack-trace-limit=20' } })
    try {
      expect(nodeOptions(bundled.pid)).toEqual(['--stack-trace-limit=20', YOUNG_GENERATION_CAP])
    } finally {
      await bundled.stop()
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
})
