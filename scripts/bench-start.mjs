#!/usr/bin/env node
/**
 * Cold start of the built binary: spawn → first 200 from /health, on a fresh
 * data dir each run (identity and keys are created), and RSS after start.
 * Baseline in the same run: a bare node:http hello-world on the same Node,
 * spawned and polled the same way.  Usage: node scripts/bench-start.mjs [runs]
 */
import { spawn } from 'node:child_process'
import { median, rss, startServe } from './bench-lib.mjs'

const runs = Number(process.argv[2] ?? 7)
const starts = []
const rsses = []
for (let i = 0; i < runs; i++) {
  const s = await startServe()
  starts.push(s.ms)
  rsses.push(rss(s.proc.pid).rssMiB)
  await s.stop()
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
const m = median(starts)
console.log(`binary cold start to first /health 200: median ${m.toFixed(0)} ms over ${runs} runs (min ${Math.min(...starts).toFixed(0)}, max ${Math.max(...starts).toFixed(0)}); target < 1500 ms`)
console.log(`RSS after start: median ${median(rsses).toFixed(1)} MiB`)
console.log(`baseline node:http hello-world start to first 200: median ${median(base).toFixed(0)} ms → pind/baseline ${(m / median(base)).toFixed(2)}x`)
