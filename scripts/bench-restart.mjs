#!/usr/bin/env node
/**
 * Restart downtime under load (target < 1 s): 16 clients (keep-alive, one
 * connection each) send GET /health back to back while `pind serve` is stopped with SIGTERM
 * and started again on the same data dir and port. A refused or reset connection, or an
 * answer other than 200, is retried 10 ms later. The downtime is the longest gap between two
 * successive 200s in the run: from the last success before the restart to the first one
 * after it. Printed beside it: SIGTERM → exit, and start → /health 200 of the new process.
 * Baseline in the same run, the same way: a bare node:http hello-world in a child process,
 * stopped with SIGTERM and started again on the same port.
 * The runs take turns (pind, hello-world, ...); medians are printed.
 *
 * Usage: node scripts/bench-restart.mjs [--runs 3] [--clients 16] [--load 1] [--json]
 *   (--load: seconds of load before each restart and after the first success; BENCH_BINARY,
 *   BENCH_SERVE_ENV and BENCH_SERVE_NODE_OPTIONS as in scripts/bench-lib.mjs)
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Pool } from 'undici'
import { jsonResult, median, startServe } from './bench-lib.mjs'

const argv = process.argv.slice(2)
const opt = (name, def) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? Number(argv[i + 1]) : def }
const runs = opt('runs', 3)
const clients = opt('clients', 16)
const loadS = opt('load', 1)
const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))

/** a free loopback port (taken and released: the restarted server needs a fixed one) */
function freePort () {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.on('error', reject)
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)) })
  })
}

/** SIGTERM, resolves with the exit code once the process is gone */
function terminate (proc) {
  if (proc.exitCode != null || proc.signalCode != null) return Promise.resolve(proc.exitCode)
  const exited = new Promise(resolve => proc.once('exit', (code) => resolve(code)))
  proc.kill('SIGTERM')
  return exited
}

/**
 * Drives `clients` loops of GET `path` against origin until stop() is called; records the
 * completion time of every 200 (performance.now()).
 */
function hammer (origin, path) {
  const pool = new Pool(origin, { connections: clients, pipelining: 1, connectTimeout: 2000 })
  const ok = []
  let failures = 0
  let running = true
  const loop = async () => {
    while (running) {
      try {
        const r = await pool.request({ method: 'GET', path, headersTimeout: 5000, bodyTimeout: 5000 })
        await r.body.dump()
        if (r.statusCode === 200) { ok.push(performance.now()); continue }
        failures++
      } catch { failures++ }
      await sleep(10)
    }
  }
  const loops = Array.from({ length: clients }, loop)
  return {
    ok,
    failures: () => failures,
    /** resolves once a 200 completed after time t */
    async successAfter (t) { while (!(ok.length > 0 && ok[ok.length - 1] > t)) await sleep(2) },
    async stop () { running = false; await Promise.all(loops); await pool.close() }
  }
}

/** the longest gap between successive successes, and where it starts */
function longestGap (ok) {
  let gap = 0; let at = 0
  for (let i = 1; i < ok.length; i++) if (ok[i] - ok[i - 1] > gap) { gap = ok[i] - ok[i - 1]; at = ok[i - 1] }
  return { gap, at }
}

/**
 * One restart under load of a server made by start() (resolves with { proc, ms }: the process
 * and its spawn → 200 time) at origin + path.
 */
async function restartUnderLoad (start, origin, path) {
  let server = await start()
  const load = hammer(origin, path)
  try {
    await load.successAfter(performance.now())
    await sleep(loadS * 1000)
    const t0 = performance.now()
    const exit = await terminate(server.proc)
    const drainMs = performance.now() - t0
    server = await start()
    await load.successAfter(performance.now())
    await sleep(loadS * 1000)
    const { gap } = longestGap(load.ok)
    return { downMs: gap, drainMs, startMs: server.ms, exit, requests: load.ok.length, failures: load.failures() }
  } finally {
    await load.stop()
    await terminate(server.proc)
  }
}

/** pind serve on dataDir at port (the last --data-dir and --port win over startServe's) */
const startPind = (dataDir, port) => async () => {
  const s = await startServe({ dataDir, args: ['--port', String(port)], env: { PIND_RATE_LIMIT_READS: '0', PIND_RATE_LIMIT_UNPAID: '0' } })
  return { proc: s.proc, ms: s.ms }
}

/** node:http hello-world on port, spawned and polled like pind */
const startHello = (port) => async () => {
  const t0 = performance.now()
  const code = `require('node:http').createServer((q,r)=>r.end('ok')).listen(${port},'127.0.0.1')`
  const proc = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'ignore', 'inherit'] })
  for (;;) {
    if (proc.exitCode != null) throw new Error(`hello-world exited ${proc.exitCode}`)
    try { if ((await fetch(`http://127.0.0.1:${port}/`)).status === 200) break } catch {}
    await sleep(2)
  }
  return { proc, ms: performance.now() - t0 }
}

const pind = []; const hello = []
for (let i = 0; i < runs; i++) {
  const dataDir = mkdtempSync(join(tmpdir(), 'pind-bench-restart-'))
  try {
    const port = await freePort()
    pind.push(await restartUnderLoad(startPind(dataDir, port), `http://127.0.0.1:${port}`, '/health'))
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
  const port = await freePort()
  hello.push(await restartUnderLoad(startHello(port), `http://127.0.0.1:${port}`, '/'))
  const p = pind.at(-1); const h = hello.at(-1)
  console.log(`run ${i + 1}/${runs}: pind down ${p.downMs.toFixed(0)} ms (SIGTERM → exit ${p.exit} in ${p.drainMs.toFixed(0)} ms, start → 200 ${p.startMs.toFixed(0)} ms; ${p.requests} 200s, ${p.failures} failed tries); hello-world down ${h.downMs.toFixed(0)} ms`)
}
const m = (xs, k) => median(xs.map(x => x[k]))
console.log(`restart under ${clients} clients, median of ${runs}: pind down ${m(pind, 'downMs').toFixed(0)} ms (drain ${m(pind, 'drainMs').toFixed(0)} ms, start ${m(pind, 'startMs').toFixed(0)} ms); node:http hello-world down ${m(hello, 'downMs').toFixed(0)} ms; target < 1000 ms: ${m(pind, 'downMs') < 1000 ? 'met' : 'NOT met'}`)
if (pind.some(p => p.exit !== 0)) console.log(`warning: serve exited ${pind.map(p => p.exit).join(', ')} on SIGTERM`)
jsonResult({ runs, clients, downMs: m(pind, 'downMs'), drainMs: m(pind, 'drainMs'), startMs: m(pind, 'startMs'), helloDownMs: m(hello, 'downMs'), pind, hello })
