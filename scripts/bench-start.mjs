#!/usr/bin/env node
/**
 * Cold start of the built binary: spawn → first 200 from /health, on a fresh
 * data dir each run (identity and keys are created), and its memory 2 s after
 * (RSS, anonymous and file-backed; V8's heap used and committed, from
 * /metrics on the admin socket).
 * Baseline in the same run: a bare node:http hello-world on the same Node,
 * spawned and polled the same way.
 * `--against <binary>`: another build (e.g. a copy of main's dist/pind) started
 * the same way, the runs taking turns, with the ratios of its figures.
 * `--json`: a last line with the medians as JSON (scripts/bench.mjs reads it).
 * Usage: node scripts/bench-start.mjs [runs] [--binary dist/pind] [--against path] [--json]
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { BINARY, jsonResult, median, startServe } from './bench-lib.mjs'

const argv = process.argv.slice(2)
const flag = (name) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? resolve(argv[i + 1]) : undefined }
const runs = Number(argv.find((a, i) => /^\d+$/.test(a) && !argv[i - 1]?.startsWith('--')) ?? 7)
const builds = [{ name: 'pind', binary: flag('binary') ?? BINARY }]
if (flag('against') != null) builds.push({ name: 'against', binary: flag('against') })

function adminMetrics (dataDir) {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath: join(dataDir, 'admin.sock'), path: '/metrics', timeout: 10_000 }, res => {
      let body = ''
      res.on('data', b => { body += b })
      res.on('end', () => { resolve(body) })
    })
    req.on('error', reject)
    req.end()
  })
}

async function memory (s) {
  const status = readFileSync(`/proc/${s.proc.pid}/status`, 'utf8')
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024
  const m = await adminMetrics(s.dataDir)
  const num = (name) => Number(new RegExp(`^pind_nodejs_${name} (\\S+)`, 'm').exec(m)?.[1] ?? NaN) / 2 ** 20
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile'), heapUsed: num('heap_size_used_bytes'), heapTotal: num('heap_size_total_bytes') }
}

for (const b of builds) { b.starts = []; b.mem = [] }
for (let i = 0; i < runs; i++) {
  for (const b of (i % 2 === 0 ? builds : [...builds].reverse())) {
    const s = await startServe({ binary: b.binary })
    b.starts.push(s.ms)
    await new Promise(resolve => setTimeout(resolve, 2000))
    b.mem.push(await memory(s))
    await s.stop()
  }
}

const base = []
for (let i = 0; i < runs; i++) {
  const t0 = performance.now()
  const p = spawn(process.execPath, ['-e', "require('http').createServer((q,r)=>r.end('ok')).listen(0,'127.0.0.1',function(){console.log(this.address().port)})"], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise(resolve => p.stdout.once('data', b => resolve(Number(String(b).trim()))))
  for (;;) {
    try { if ((await fetch(`http://127.0.0.1:${port}/`)).status === 200) break } catch {}
    await new Promise(resolve => setTimeout(resolve, 2))
  }
  base.push(performance.now() - t0)
  p.kill()
}
const [first] = builds
for (const b of builds) {
  const m = median(b.starts)
  const mem = (k) => median(b.mem.map(x => x[k]))
  const vs = (k) => b === first ? '' : ` (${(mem(k) / median(first.mem.map(x => x[k]))).toFixed(2)}x of pind)`
  console.log(`${b.name} (${b.binary}):`)
  console.log(`  cold start to first /health 200: median ${m.toFixed(0)} ms over ${runs} runs (min ${Math.min(...b.starts).toFixed(0)}, max ${Math.max(...b.starts).toFixed(0)}); target < 1500 ms${b === first ? '' : `; ${(m / median(first.starts)).toFixed(2)}x of pind`}`)
  console.log(`  2 s after start, medians: RSS ${mem('rss').toFixed(1)} MiB${vs('rss')} = anonymous ${mem('anon').toFixed(1)}${vs('anon')} + file-backed ${mem('file').toFixed(1)}${vs('file')}; V8 heap used ${mem('heapUsed').toFixed(1)} of ${mem('heapTotal').toFixed(1)} MiB committed${vs('heapUsed')}`)
}
console.log(`baseline node:http hello-world start to first 200: median ${median(base).toFixed(0)} ms → pind/baseline ${(median(first.starts) / median(base)).toFixed(2)}x`)
console.log(`load average: ${loadavg().map(x => x.toFixed(1)).join(' ')}`)
jsonResult({ runs, startMs: median(first.starts), starts: first.starts, helloStartMs: median(base), helloStarts: base, rssMiB: median(first.mem.map(x => x.rss)) })
