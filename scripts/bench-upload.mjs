#!/usr/bin/env node
/**
 * Paid 100 MB uploads against the built binary on a local dev chain (target ≥ 0.75
 * of the baseline, peak service RSS < 200 MB).
 *
 * Measured in one run, the sizes taking turns:
 *   - pind, whole x402 exchange with a lean HTTP client (undici.request, the
 *     generator of the rate benchmarks): unpaid POST /upload with the body →
 *     402 (pind answers as soon as the head is read; undici stops sending) →
 *     sign the EIP-3009 authorization → paid POST with the body → 201 (import,
 *     settle on chain, durable commit, ledger transaction). This is the figure
 *     held against the target.
 *   - the same exchange with @x402/fetch (the agents' SDK), for information:
 *     it wraps the global fetch, which costs ~150–250 ms of client CPU per
 *     100 MB on its own (see the floor below), and re-sends the body.
 *   - baseline: the same UnixFS import (CIDv1, raw leaves, 1 MiB chunks) of
 *     as many random bytes into an FsBlockstore, in a fresh Node process of its
 *     own (as the service has one; in this process the figure swings with the
 *     heap the clients leave behind): hashing and writing the blocks, no HTTP,
 *     no payment, no ledger, no fsync. And the same with each block file
 *     fsync'd, which pind must do before it answers 201 (item 1).
 *     Each import keeps its blocks until the benchmark ends, as the service
 *     keeps what it was paid for: on this machine's VM, writing into page
 *     cache that is not memory freed a moment ago costs the kernel ~10 times
 *     more per byte (docs/performance.md, "The page cache's cold memory"), so
 *     an import that deleted its blocks at once handed warm memory to the next
 *     writer and measured itself on it while pind wrote into cold memory.
 *   - HTTP floor, for context: the same client posting the same body to a bare
 *     node:http server (in a child process) that only reads it.
 * RSS: the service's VmHWM (peak resident set) after the 100 MB uploads, and
 * its RSS when idle before them.
 *
 * `--json`: a last line with the medians as JSON (scripts/bench.mjs reads it).
 *
 * Usage: node scripts/bench-upload.mjs [--runs 5] [--mb 100] [--bundle] [--json]
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { unixfs } from '@helia/unixfs'
import { wrapFetchWithPayment } from '@x402/fetch'
import { FsBlockstore } from 'blockstore-fs'
import { NextToLast } from 'blockstore-fs/sharding'
import { cpuMs, jsonResult, median, multipartPost as post, paidUpload, ROOT, rss, startServe, x402For } from './bench-lib.mjs'
import { startDevChain } from './devchain/index.mjs'

const argv = process.argv.slice(2)
if (argv[0] === '--baseline-child') {
  const bytes = randomBytes(Number(argv[1]))
  const cpu0 = process.cpuUsage()
  const ms = await baselineImport(bytes, argv[3], argv[2] === 'fsync')
  const cpu = process.cpuUsage(cpu0)
  console.log(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, sysMs: cpu.system / 1000 }))
  process.exit(0)
}
const opt = (name, def) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? Number(argv[i + 1]) : def }
const runs = opt('runs', 5)
const size = opt('mb', 100) * 1_000_000
const bundle = argv.includes('--bundle')

const chain = await startDevChain({ payers: 1 })
const pind = await startServe({
  ...(bundle ? { binary: process.execPath, binaryArgs: [join(ROOT, 'dist/pind.cjs')] } : {}),
  args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--rate-limit-unpaid', '0', '--rate-limit-reads', '0'],
  env: { PIND_SETTLER_KEY: chain.settlerKey }
})
const floor = await startFloorServer()
const payer = x402For(chain, chain.payers[0].privateKey)
const payingFetch = wrapFetchWithPayment(fetch, payer.client)

async function leanExchange (bytes) {
  return (await paidUpload(pind.url, bytes, payer)).ms
}

async function sdkExchange (bytes) {
  const form = new FormData()
  form.append('file', new Blob([bytes]), 'bench.bin')
  const t0 = performance.now()
  const r = await payingFetch(`${pind.url}/upload`, { method: 'POST', body: form })
  const text = await r.text()
  if (r.status !== 201) throw new Error(`upload failed: ${r.status} ${text}`)
  return performance.now() - t0
}

/** the import into `dir` (a fresh folder, kept: the parent removes it when the benchmark ends) */
async function baselineImport (bytes, dir, durable = false) {
  const bs = new FsBlockstore(dir)
  if (durable) {
    // the same, plus what durability costs: each block file fsync'd once written
    const put = bs.put.bind(bs)
    bs.put = async (cid, block, o) => {
      await put(cid, block, o)
      const { dir: shard, file } = new NextToLast().encode(cid)
      const fh = await open(join(dir, shard, file), 'r')
      await fh.datasync()
      await fh.close()
      return cid
    }
  }
  await bs.open()
  const t0 = performance.now()
  await unixfs({ blockstore: bs }).addByteStream((async function * () { for (let o = 0; o < bytes.length; o += 65536) yield bytes.subarray(o, o + 65536) })(), { cidVersion: 1, rawLeaves: true })
  return performance.now() - t0
}

/** the baselines' block folders, removed when the benchmark ends */
const baseDirs = mkdtempSync(join(tmpdir(), 'pind-bench-base-'))
let baseRuns = 0
async function baselineInChild (bytes, durable = false) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--baseline-child', String(bytes), durable ? 'fsync' : 'plain', join(baseDirs, String(baseRuns++))], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', b => { out += b })
  const code = await new Promise(resolve => child.once('exit', resolve))
  if (code !== 0) throw new Error(`baseline child exited ${code}`)
  return JSON.parse(out)
}

async function floorPost (bytes) {
  const t0 = performance.now()
  const r = await post(floor.url, bytes)
  await r.body.text()
  return performance.now() - t0
}

const t = { lean: [], sdk: [], base: [], durable: [], floor: [] }
/** CPU time (user + system, ms) of the service per lean exchange, and of the plain baseline's child */
const cpu = { lean: [], leanSys: [], base: [], baseSys: [] }
/** the system part alone (the kernel's copies into the page cache, fdatasync, the socket) */
function sysMs (pid) {
  return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[12]) * 10
}
try {
  // warm-up: one small paid upload, so the first measured run does not pay for cold paths
  await leanExchange(randomBytes(1_000_000))
  const idle = rss(pind.proc.pid)
  for (let i = 0; i < runs; i++) {
    const bytes = randomBytes(size)
    const c0 = cpuMs(pind.proc.pid)
    const s0 = sysMs(pind.proc.pid)
    t.lean.push(await leanExchange(bytes))
    cpu.lean.push(cpuMs(pind.proc.pid) - c0)
    cpu.leanSys.push(sysMs(pind.proc.pid) - s0)
    const base = await baselineInChild(size)
    t.base.push(base.ms)
    cpu.base.push(base.cpuMs)
    cpu.baseSys.push(base.sysMs)
    t.durable.push((await baselineInChild(size, true)).ms)
    t.floor.push(await floorPost(bytes))
    t.sdk.push(await sdkExchange(randomBytes(size)))
  }
  const peak = rss(pind.proc.pid)
  const mb = size / 1e6
  const line = (name, xs) => `${name.padEnd(58)} median ${median(xs).toFixed(0).padStart(5)} ms  ${(mb / (median(xs) / 1000)).toFixed(0).padStart(4)} MB/s  (${xs.map(x => x.toFixed(0)).join(', ')})`
  console.log(`${mb} MB, ${runs} runs each, ${bundle ? 'bundle' : 'binary'}`)
  console.log(line('pind: 402 + sign + paid upload (undici client)', t.lean))
  console.log(line('pind: the same with @x402/fetch', t.sdk))
  console.log(line('baseline: UnixFS import into FsBlockstore, no HTTP', t.base))
  console.log(line('  the same, each block fsync\'d (what durability costs)', t.durable))
  console.log(line('HTTP floor: same client, bare node:http reading the body', t.floor))
  // each run's pind and baseline figures are taken back to back; the median of the per-run ratios
  // is less swayed by the machine's drift over the whole run than the ratio of the medians
  const perRun = t.lean.map((x, i) => t.base[i] / x)
  console.log(`ratio baseline/pind: ${(median(t.base) / median(t.lean)).toFixed(2)} (target >= 0.75, npm run bench); per run ${perRun.map(r => r.toFixed(2)).join(', ')}, median ${median(perRun).toFixed(2)}`)
  console.log(`  with @x402/fetch: ${(median(t.base) / median(t.sdk)).toFixed(2)}; against the fsync'd baseline: ${(median(t.durable) / median(t.lean)).toFixed(2)}`)
  console.log(`CPU (user + system): service per paid upload median ${median(cpu.lean).toFixed(0)} ms (${cpu.lean.join(', ')}; of it system ${cpu.leanSys.join(', ')}); baseline process ${median(cpu.base).toFixed(0)} ms (${cpu.base.map(x => x.toFixed(0)).join(', ')}; of it system ${cpu.baseSys.map(x => x.toFixed(0)).join(', ')}), the import alone`)
  console.log(`service RSS idle ${idle.rssMiB.toFixed(0)} MiB, peak over all uploads ${peak.peakMiB.toFixed(0)} MiB (target < 200 MB = 191 MiB)`)
  const rate = (xs) => mb / (median(xs) / 1000)
  jsonResult({ mb, runs, pindMBps: rate(t.lean), baselineMBps: rate(t.base), durableBaselineMBps: rate(t.durable), sdkMBps: rate(t.sdk), floorMBps: rate(t.floor), pindMs: t.lean, baselineMs: t.base, peakMiB: peak.peakMiB })
} finally {
  floor.proc.kill()
  await pind.stop()
  await chain.stop()
  rmSync(baseDirs, { recursive: true, force: true })
}

/** node:http in a child process that reads each body and answers 200 */
async function startFloorServer () {
  const code = `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.end('ok')) }).listen(0, '127.0.0.1', function () { console.log(this.address().port) })`
  const proc = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise((resolve, reject) => {
    proc.stdout.once('data', b => { resolve(Number(String(b).trim())) })
    proc.once('exit', c => { reject(new Error(`floor server exited ${c}`)) })
  })
  return { proc, url: `http://127.0.0.1:${port}/` }
}
