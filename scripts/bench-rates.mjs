#!/usr/bin/env node
/**
 * Request rates of the cheap paths against a bare node:http hello-world, the
 * same load generator for every target, measured in one run (targets: npm run bench,
 * scripts/bench.mjs):
 *   - hello-world: node:http in a child process (not on the generator's loop)
 *   - GET /health
 *   - POST /pins unpaid → 402, a CID pind does not hold (--pin-probe-timeout 0,
 *     so the quote does not wait for the network)
 *   - POST /pins unpaid → 402, a CID pind holds (uploaded and paid first with
 *     @x402/fetch; priced from the local root block)
 *   - only when named (--only plain): the unknown CID's 402 from a second pind
 *     started with --bazaar false, the same terms without the bazaar extension:
 *     the baseline of what the extension costs (bench.mjs row bazaar402)
 *   - only when named (--only floor): node:http's floor for that 402, a bare
 *     server in a child process that reads the same POST body, parses its JSON
 *     and answers the bytes pind answered for the unknown CID (status, headers,
 *     body, a fresh x-request-id), nothing else: what any node:http server
 *     sending that answer reaches on this machine, for context beside the
 *     unknown CID's row (bench.mjs prints it; it is not a target)
 * pind runs on a local dev chain, so the 402 (PAYMENT-REQUIRED) is the real one.
 * The load generator is an undici Pool of N keep-alive connections, each
 * issuing requests back to back; it counts responses completed in the measured
 * window (after a warm-up), checks their status, and records latencies.
 *
 * The targets take turns in --rounds slices (default 5 of 1 s each), each
 * target warmed up once before its first slice. Beside the rates, the CPU
 * time (user + system, from /proc) the serving process spent per response in
 * its target's slices: steadier than the rates on a shared machine, where
 * the load generator and other work compete for the same cores.
 *
 * `--json`: a last line with each target's figures as JSON (keys hello, health, unknown, local, plain, floor).
 *
 * Usage: node scripts/bench-rates.mjs [--duration 5] [--warmup 1] [--connections 32] [--rounds 5] [--bundle | --cjs <bundle>] [--only health,unknown,local,plain,floor] [--json]
 *   (default runs the binary dist/pind; --bundle runs node dist/pind.cjs; --cjs runs that bundle instead,
 *   e.g. a baseline kept from another tree; --only: these targets
 *   and the hello-world, e.g. to profile one path with BENCH_SERVE_NODE_OPTIONS, scripts/bench-lib.mjs)
 */
import { spawn } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { toClientEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { Pool } from 'undici'
import { privateKeyToAccount } from 'viem/accounts'
import { jsonResult, ROOT, startServe } from './bench-lib.mjs'
import { startDevChain } from './devchain/index.mjs'

const argv = process.argv.slice(2)
const opt = (name, def) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? Number(argv[i + 1]) : def }
const durationS = opt('duration', 5)
const warmupS = opt('warmup', 1)
const connections = opt('connections', 32)
const rounds = opt('rounds', 5)
const cjsArg = argv.includes('--cjs') ? argv[argv.indexOf('--cjs') + 1] : undefined
const bundle = argv.includes('--bundle') || cjsArg != null
const cjs = cjsArg ?? `${ROOT}/dist/pind.cjs`
const only = argv.includes('--only') ? new Set(argv[argv.indexOf('--only') + 1].split(',')) : undefined
const UNKNOWN_CID = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

/** user + system CPU time of a process so far, in ms (/proc/<pid>/stat, clock ticks of 10 ms) */
const cpuMs = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) * 10 }
const pct = (sorted, p) => sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]

/**
 * Drives `connections` back-to-back request loops through pool for warmS + runS seconds;
 * counts the responses completed in the measured window and their latencies.
 */
async function load (pool, { method = 'GET', path, body, headers, expect }, warmS, runS) {
  let phase = warmS > 0 ? 'warmup' : 'run'; let count = 0; let wrong = 0; let errors = 0; let firstWrong
  const lat = []
  let start = performance.now(); let end = 0
  const loop = async () => {
    while (phase !== 'done') {
      const t0 = performance.now()
      try {
        const r = await pool.request({ method, path, body, headers })
        await r.body.dump()
        if (phase !== 'run') continue
        count++
        lat.push(performance.now() - t0)
        if (r.statusCode !== expect) { wrong++; firstWrong ??= r.statusCode }
      } catch (err) {
        if (phase === 'run') errors++
        if (errors > 100) throw err
      }
    }
  }
  const timers = new Promise(resolve => setTimeout(() => {
    phase = 'run'; start = performance.now()
    setTimeout(() => { phase = 'done'; end = performance.now(); resolve() }, runS * 1000)
  }, warmS * 1000))
  await Promise.all([timers, ...Array.from({ length: connections }, loop)])
  if (wrong > 0 || errors > 0) throw new Error(`${method} ${path}: ${wrong} responses not ${expect} (first: ${firstWrong}), ${errors} errors`)
  return { count, secs: (end - start) / 1000, lat }
}

/** node:http `code` in a child process, printing its port; resolves with its origin, pid and a stop(). */
async function startChild (name, code, env = {}) {
  const proc = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } })
  const port = await new Promise((resolve, reject) => {
    proc.stdout.once('data', b => resolve(Number(String(b).trim())))
    proc.once('exit', c => reject(new Error(`${name} exited ${c}`)))
  })
  return {
    origin: `http://127.0.0.1:${port}`,
    pid: proc.pid,
    stop: async () => { if (proc.exitCode == null) { const e = new Promise(resolve => proc.once('exit', resolve)); proc.kill('SIGTERM'); await e } }
  }
}

/** A bare node:http hello-world in a child process */
const startHello = () => startChild('hello-world', "const s=require('node:http').createServer((q,r)=>{r.writeHead(200,{'content-type':'text/plain'});r.end('hello world')});s.listen(0,'127.0.0.1',()=>console.log(s.address().port))")

/**
 * node:http's floor for a 402: reads the POST body, parses its JSON, and answers `answer`
 * (pind's own head fields and body) with a fresh x-request-id, as pind does. No logic beyond.
 */
const startFloor = (answer) => startChild('the 402 floor', `
const http = require('node:http'); const { randomUUID } = require('node:crypto')
const { headers, body } = JSON.parse(process.env.FLOOR_ANSWER)
const s = http.createServer((q, r) => {
  const chunks = []
  q.on('data', c => { chunks.push(c) })
  q.on('end', () => {
    const req = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    if (typeof req.cid !== 'string') { r.writeHead(400); r.end(); return }
    r.writeHead(402, { ...headers, 'content-length': Buffer.byteLength(body), 'x-request-id': randomUUID() })
    r.end(body)
  })
})
s.listen(0, '127.0.0.1', () => console.log(s.address().port))`, { FLOOR_ANSWER: JSON.stringify(answer) })

let hello, chain, pind, plain, floor
try {
  console.log(`bench-rates: ${connections} keep-alive connections, ${warmupS} s warm-up + ${durationS} s per target in ${rounds} rounds, ${bundle ? `bundle ${cjs}` : 'binary dist/pind'}, Node ${process.version}`)
  hello = await startHello()
  chain = await startDevChain({ payers: 1 })
  const serve = (extra = []) => startServe({
    ...(bundle ? { binary: process.execPath, binaryArgs: [cjs] } : {}),
    args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--pin-probe-timeout', '0', ...extra],
    // one client address sends everything: per-client rate limits off (builds without them ignore these)
    env: { PIND_SETTLER_KEY: chain.settlerKey, PIND_RATE_LIMIT_UNPAID: '0', PIND_RATE_LIMIT_READS: '0' }
  })
  pind = await serve()
  // the same 402 without the bazaar extension, from a pind of its own (named only)
  if (only?.has('plain')) plain = await serve(['--bazaar', 'false'])
  const origin = new URL(pind.url).origin

  // a CID pind holds: one small paid upload
  const client = x402Client.fromConfig({
    schemes: [{ network: 'eip155:167000', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(chain.payers[0].privateKey))) }],
    spendControls: { allowedAssets: [{ network: 'eip155:167000', asset: chain.usdc }] }
  })
  const form = new FormData()
  form.append('file', new Blob([`bench-rates ${Date.now()}`]), 'hello.txt')
  const up = await wrapFetchWithPayment(fetch, client)(`${pind.url}/upload`, { method: 'POST', body: form })
  const upBody = await up.json()
  if (up.status !== 201) throw new Error(`upload failed: ${up.status} ${JSON.stringify(upBody)}`)
  const localCid = upBody.cid

  const unpaid = (cid) => ({ method: 'POST', path: '/pins', body: JSON.stringify({ cid }), headers: { 'content-type': 'application/json' }, expect: 402 })
  // one request of each kind, to show the 402 is the real one
  let unknown402
  for (const cid of [UNKNOWN_CID, localCid]) {
    const r = await fetch(`${pind.url}/pins`, { method: 'POST', body: JSON.stringify({ cid }), headers: { 'content-type': 'application/json' } })
    const pr = r.headers.get('payment-required')
    if (r.status !== 402 || pr == null) throw new Error(`POST /pins ${cid}: ${r.status}, PAYMENT-REQUIRED ${pr == null ? 'missing' : 'present'}`)
    const text = await r.text()
    const body = JSON.parse(text)
    if (cid === UNKNOWN_CID) unknown402 = { headers: Object.fromEntries(['content-type', 'cache-control', 'payment-required'].map(n => [n, r.headers.get(n)])), body: text }
    console.log(`  402 for the ${cid === localCid ? 'local' : 'unknown'} CID ${cid}: ${body.price?.amount} atomic units, size from ${body.sizeSource}`)
  }

  if (only?.has('floor')) {
    floor = await startFloor(unknown402)
    // it answers what pind answered, byte for byte (but the request id)
    const r = await fetch(`${floor.origin}/pins`, { method: 'POST', body: JSON.stringify({ cid: UNKNOWN_CID }), headers: { 'content-type': 'application/json' } })
    const same = r.status === 402 && await r.text() === unknown402.body && Object.entries(unknown402.headers).every(([n, v]) => r.headers.get(n) === v)
    if (!same) throw new Error('the 402 floor does not answer what pind answered')
  }

  // the targets take turns in short slices, so load from other work on the machine falls on all of them alike
  const targets = [
    ['hello', 'hello-world (node:http, child process)', hello.origin, hello.pid, { path: '/', expect: 200 }],
    ['health', 'GET /health', origin, pind.proc.pid, { path: '/health', expect: 200 }],
    ['unknown', 'POST /pins → 402 (unknown CID, probe off)', origin, pind.proc.pid, unpaid(UNKNOWN_CID)],
    ['local', 'POST /pins → 402 (local CID)', origin, pind.proc.pid, unpaid(localCid)],
    ...(plain != null ? [['plain', 'POST /pins → 402 (unknown, --bazaar false)', new URL(plain.url).origin, plain.proc.pid, unpaid(UNKNOWN_CID)]] : []),
    ...(floor != null ? [['floor', 'node:http floor: the same 402 bytes', floor.origin, floor.pid, unpaid(UNKNOWN_CID)]] : [])
  ].filter(([key]) => key === 'hello' || only == null || only.has(key)).map(([key, label, o, pid, spec]) => ({ key, label, spec, pid, pool: new Pool(o, { connections, pipelining: 1 }), count: 0, secs: 0, lat: [], cpu: 0, cpuCount: 0 }))
  for (let round = 0; round < rounds; round++) {
    for (const t of targets) {
      if (round === 0 && warmupS > 0) await load(t.pool, t.spec, warmupS, 0.1)
      const cpu0 = cpuMs(t.pid)
      const r = await load(t.pool, t.spec, 0, durationS / rounds)
      t.cpu += cpuMs(t.pid) - cpu0; t.cpuCount += r.count
      t.count += r.count; t.secs += r.secs
      for (const ms of r.lat) t.lat.push(ms)
    }
  }
  await Promise.all(targets.map(t => t.pool.close()))
  const rows = targets.map(t => { t.lat.sort((a, b) => a - b); return [t.label, { rps: t.count / t.secs, count: t.count, p50: pct(t.lat, 0.5), p99: pct(t.lat, 0.99), cpuUs: 1000 * t.cpu / t.cpuCount }, t.key] })
  const base = rows[0][1].rps
  console.log(`${'target'.padEnd(42)} ${'req/s'.padStart(8)} ${'ratio'.padStart(7)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'responses'.padStart(10)} ${'cpu µs/resp'.padStart(12)}`)
  for (const [label, r] of rows) {
    console.log(`${label.padEnd(42)} ${r.rps.toFixed(0).padStart(8)} ${`${(100 * r.rps / base).toFixed(0)}%`.padStart(7)} ${r.p50.toFixed(2).padStart(7)} ${r.p99.toFixed(2).padStart(7)} ${String(r.count).padStart(10)} ${r.cpuUs.toFixed(0).padStart(12)}`)
  }
  const worst = Math.min(...rows.slice(1).map(([, r]) => r.rps / base))
  console.log(`target ≥ 50% of hello-world: ${worst >= 0.5 ? 'met' : 'NOT met'} (lowest ${(100 * worst).toFixed(0)}%)`)
  jsonResult(Object.fromEntries(rows.map(([, r, key]) => [key, r])))
} finally {
  for (const p of [pind, plain]) {
    await p?.stop()
    if (p != null) rmSync(p.dataDir, { recursive: true, force: true })
  }
  await chain?.stop()
  await hello?.stop()
  await floor?.stop()
}
