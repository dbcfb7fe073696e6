#!/usr/bin/env node
/**
 * GET /pins latency over a large ledger (target p99 < 10 ms):
 * 100 owners × 1,000 pins (100,000), each pin named and with meta {app: a|b},
 * written directly with lmdb in the layout of src/ledger/lmdb/pins.ts (as
 * scripts/bench-export.mjs does), then served by pind (--token-issuer bench,
 * one token minted per queried owner with `pind keys mint`). Sequential
 * requests (latency, not throughput) over one keep-alive connection, after a
 * warm-up, each request for the next of the queried owners:
 *   - GET /health                 the floor on the same server
 *   - GET /pins/<requestid>       token check + one record
 *   - GET /pins?limit=10          (default status=pinned)
 *   - GET /pins?name=report&match=ipartial&meta={"app":"a"}&limit=10
 *   - paging through one owner's 1,000 pins: limit=10&before=<created of the
 *     oldest seen> until count == results.length (100 pages), 10 times
 * printing p50/p99 per request, the serving process's CPU time per request
 * (user + system from /proc: steadier than latencies on a shared machine),
 * the time per full paging, and whether p99 < 10 ms.
 *
 * The ledger is written in the layout before the current one, so serve
 * upgrades it in the background once it serves (PinLedger.upgradeLater,
 * batches of 100 records between requests). The requests start once that is
 * done: serve logs "ledger upgraded" on stderr then. Printed: "serve up in"
 * (spawn to /health 200) and "upgrade done in" (spawn to that line).
 * --during-upgrade: start the requests at once, beside the upgrade, as
 * before.
 *
 * --ledger postgres: the same pins moved into a throwaway PostgreSQL (scripts/postgres.mjs)
 * with `pind ledger migrate --to postgres` before serve starts (no upgrade to wait for);
 * scripts/bench-frontends.mjs runs it so, for its GET /pins row (target there: p99 < 20 ms).
 *
 * With `--json`, for scripts/bench.mjs, it also measures the baselines of the start and of
 * `pind keys mint`: serve up on an empty data dir (before the large one), and `pind --version`
 * (the same binary's process start, once after each mint); then prints a last line with the
 * figures as JSON (each mint timed on its own, through the running serve). Both are timed from a
 * small child process, as a shell would run them: a spawn from this one, which holds the
 * ledger's writer (~460 MiB), cost ~17 ms more.
 *
 * Usage: node scripts/bench-pins-list.mjs [--requests 1000] [--pagings 10] [--owners 100] [--per-owner 1000] [--binary] [--bin <path>] [--during-upgrade] [--ledger lmdb|postgres] [--keep] [--json]
 *   (default runs the bundle: node dist/pind.cjs; --binary runs dist/pind; --bin <path> runs that binary,
 *   e.g. a baseline's copy: give each binary its own PKG_NATIVE_CACHE_PATH when comparing two)
 */
import { execFileSync } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { Pool } from 'undici'
import { BINARY, jsonResult, median, pindEnv, ROOT, startServe, timeCommands } from './bench-lib.mjs'
import { isoMicros, openBenchLedger } from './bench-ledger.mjs'
import { startPostgres, stopPostgres } from './postgres.mjs'

const argv = process.argv.slice(2)
const opt = (name, def) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? Number(argv[i + 1]) : def }
const REQUESTS = opt('requests', 1000)
const PAGINGS = opt('pagings', 10)
const OWNERS = opt('owners', 100)
const PER_OWNER = opt('per-owner', 1000)
const QUERIED = Math.min(10, OWNERS) // owners the requests rotate over (one token each)
const json = argv.includes('--json')
const binPath = argv.includes('--bin') ? argv[argv.indexOf('--bin') + 1] : undefined
const useBinary = argv.includes('--binary') || binPath != null
const duringUpgrade = argv.includes('--during-upgrade')
const onPostgres = argv.includes('--ledger') && argv[argv.indexOf('--ledger') + 1] === 'postgres'
const [bin, binArgs] = useBinary ? [binPath ?? BINARY, []] : [process.execPath, [join(ROOT, 'dist/pind.cjs')]]
/** how long the background upgrade may take before the benchmark gives up */
const UPGRADE_TIMEOUT_MS = 20 * 60_000

const sha = (s) => createHash('sha256').update(s).digest()
const owner = (j) => `0x${sha(`owner ${j}`).toString('hex').slice(0, 40)}`
const iso = isoMicros
const KINDS = ['Report', 'photo', 'notes', 'BACKUP'] // name=report&match=ipartial hits 'Report-…' and '…-report…' below
const nameOf = (k) => `${KINDS[k % 4]}-${k}.${k % 8 === 0 ? 'pdf' : 'bin'}`
const appOf = (k) => Math.floor(k / 4) % 2 === 0 ? 'a' : 'b' // of an owner's k-th pin: name Report* and app a for 1 in 8

/** Pin i belongs to owner i % OWNERS (owners interleaved in time); createdUs ~1 s apart, unique, increasing. */
async function buildLedger (dir) {
  const ledger = await openBenchLedger(dir)
  const n = OWNERS * PER_OWNER
  const startUs = (Date.now() - 86_400_000) * 1000 - n * 1_000_017
  const until = Date.now() + 365 * 86_400_000
  const firsts = []
  ledger.batch(() => {
    for (let i = 0; i < n; i++) {
      const who = owner(i % OWNERS); const k = Math.floor(i / OWNERS)
      const requestid = randomUUID()
      const createdUs = startUs + i * 1_000_017
      const created = iso(createdUs)
      const cid = CID.createV1(0x55, Digest.create(0x12, sha(`content ${i}`))).toString()
      const pinnedUntil = new Date(until + i * 1000).toISOString()
      const pin = {
        requestid, owner: who, cid, name: nameOf(k), origins: [], meta: { app: appOf(k) }, status: 'pinned', statusDetails: 'pinned: 1 block, 4096 bytes',
        created, createdUs, months: 12, pinnedUntil, dagSize: 4096, fileSize: 4096, maxBytes: 1_000_000, source: 'pin',
        payment: { id: `${who}:0x${sha(`nonce ${i}`).toString('hex')}`, payer: who, amount: '12000', network: 'eip155:167000', asset: '0x07d83526730c7438048D55A4fc0b850e2aaB6f0b', tx: `0x${sha(`tx ${i}`).toString('hex')}`, settledAt: created, method: 'x402' }
      }
      ledger.putPin(pin)
      if (i < QUERIED) firsts.push(requestid)
    }
  })
  await ledger.close()
  return firsts // the first pin of each queried owner (pin j belongs to owner j)
}

/** user + system CPU time of a process so far, in ms (/proc/<pid>/stat, clock ticks of 10 ms) */
const cpuMs = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) * 10 }
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
const stats = (xs) => { const s = [...xs].sort((a, b) => a - b); return { p50: pct(s, 0.5), p99: pct(s, 0.99), max: s[s.length - 1], n: s.length } }

const dir = mkdtempSync(join(tmpdir(), 'pind-bench-pins-list-'))
let pind, pool, db
try {
  console.log(`bench-pins-list: ${OWNERS} owners × ${PER_OWNER} pins${onPostgres ? ' on PostgreSQL' : ''}, ${useBinary ? `binary ${binPath ?? 'dist/pind'}` : 'bundle dist/pind.cjs'}, Node ${process.version}; sequential requests over one keep-alive connection`)
  let t = performance.now()
  const firstPins = await buildLedger(dir)
  console.log(`setup: ${OWNERS * PER_OWNER} pins written with lmdb in ${((performance.now() - t) / 1000).toFixed(1)} s`)
  if (onPostgres) {
    t = performance.now()
    db = await startPostgres()
    execFileSync(bin, [...binArgs, 'ledger', 'migrate', '--to', 'postgres', '--database-url', db.url, '--data-dir', dir, '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: pindEnv() })
    console.log(`setup: moved into PostgreSQL (${db.url}) with pind ledger migrate in ${((performance.now() - t) / 1000).toFixed(1)} s`)
  }
  let emptyUpMs
  if (json) {
    // the baseline of "serve up": the same start on an empty data dir
    const empty = await startServe({ binary: bin, binaryArgs: binArgs, env: { PIND_RATE_LIMIT_READS: '0', PIND_RATE_LIMIT_UNPAID: '0' } })
    emptyUpMs = empty.ms
    await empty.stop()
    console.log(`serve up on an empty data dir in ${emptyUpMs.toFixed(0)} ms`)
  }
  // startServe's own data dir is replaced by ours (the last --data-dir wins); per-client rate limits off (one client address)
  const spawnedAt = performance.now()
  pind = await startServe({ binary: bin, binaryArgs: binArgs, args: ['--data-dir', dir, '--token-issuer', 'bench'], env: { PIND_RATE_LIMIT_READS: '0', PIND_RATE_LIMIT_UNPAID: '0' }, startTimeoutMs: 180_000 })
  rmSync(pind.dataDir, { recursive: true, force: true })
  t = performance.now()
  // the mints and their baseline are timed once the upgrade is over (it keeps a core busy while it runs)
  if (onPostgres) {
    console.log(`serve up in ${pind.ms.toFixed(0)} ms; requests start now`)
  } else if (!duringUpgrade) {
    // the background upgrade's end: serve's log line (JSON lines on stderr)
    const logged = (msg) => pind.stderr().split('\n').some(line => { try { return JSON.parse(line).msg === msg } catch { return false } })
    for (;;) {
      if (logged('ledger upgraded')) break
      if (logged('the ledger upgrade failed: the next start goes on with it')) throw new Error(`the ledger upgrade failed: ${pind.stderr()}`)
      if (pind.proc.exitCode != null) throw new Error(`pind exited: ${pind.stderr()}`)
      if (performance.now() - spawnedAt > UPGRADE_TIMEOUT_MS) throw new Error('the ledger upgrade did not finish')
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    console.log(`upgrade done in ${(performance.now() - spawnedAt).toFixed(0)} ms (from spawn; serve up in ${pind.ms.toFixed(0)} ms); requests start now`)
  } else {
    console.log('requests start now, beside the ledger upgrade (--during-upgrade)')
  }

  t = performance.now()
  // timed from a small child process (bench-lib's timeCommands: this one holds the ledger's
  // writer, and a spawn from it costs more); with --json each mint is followed by its baseline,
  // `pind --version`, so both see the same moments of a shared machine
  const mint = (j) => ({ file: bin, args: [...binArgs, 'keys', 'mint', '--data-dir', dir, '--owner', owner(j), '--json'], env: pindEnv() })
  const version = { file: bin, args: [...binArgs, '--version'], env: pindEnv() }
  const timed = timeCommands(Array.from({ length: QUERIED }, (_, j) => json ? [mint(j), version] : [mint(j)]).flat())
  const mints = json ? timed.filter((_, i) => i % 2 === 0) : timed
  const mintMs = mints.map(r => r.ms)
  const tokens = mints.map(r => JSON.parse(r.stdout).token)
  console.log(`${QUERIED} tokens minted in ${(performance.now() - t).toFixed(0)} ms${json ? ', each followed by pind --version' : ''} (median ${median(mintMs).toFixed(0)} ms each)`)
  const versionMs = json ? timed.filter((_, i) => i % 2 === 1).map(r => r.ms) : []
  if (json) console.log(`pind --version: median ${median(versionMs).toFixed(0)} ms over ${QUERIED} runs`)

  pool = new Pool(new URL(pind.url).origin, { connections: 1 })
  const get = async (path, j) => {
    const t0 = performance.now()
    const r = await pool.request({ method: 'GET', path, headers: j == null ? {} : { authorization: `Bearer ${tokens[j]}` } })
    const body = await r.body.json()
    const ms = performance.now() - t0
    if (r.statusCode !== 200) throw new Error(`GET ${path}: ${r.statusCode} ${JSON.stringify(body)}`)
    return { ms, body }
  }
  const series = async (label, path, check) => {
    for (let i = 0; i < Math.min(200, REQUESTS); i++) await get(path(i), i % QUERIED) // warm-up
    const ms = []
    const cpu0 = cpuMs(pind.proc.pid)
    for (let i = 0; i < REQUESTS; i++) { const r = await get(path(i), i % QUERIED); check?.(r.body); ms.push(r.ms) }
    return [label, { ...stats(ms), cpuUs: 1000 * (cpuMs(pind.proc.pid) - cpu0) / REQUESTS }]
  }
  const filterQ = `name=report&match=ipartial&meta=${encodeURIComponent(JSON.stringify({ app: 'a' }))}&limit=10`
  const filterCount = Array.from({ length: PER_OWNER }, (_, k) => k).filter(k => nameOf(k).toLowerCase().includes('report') && appOf(k) === 'a').length
  const expect = (count, len) => (b) => { if (b.count !== count || b.results.length !== len) throw new Error(`expected count ${count} and ${len} results, got ${b.count} and ${b.results.length}`) }
  const rows = [
    await series('GET /health (floor)', () => '/health'),
    await series('GET /pins/<requestid> (token + 1 record)', (i) => `/pins/${firstPins[i % QUERIED]}`),
    await series('GET /pins?limit=10', () => '/pins?limit=10', expect(PER_OWNER, Math.min(10, PER_OWNER))),
    await series(`GET /pins?${decodeURIComponent(filterQ)}`, () => `/pins?${filterQ}`, expect(filterCount, Math.min(10, filterCount)))
  ]

  // paging through one owner's pins, newest first, with before=<created of the oldest seen>
  const pageMs = []; const pagingMs = []; let pagingCpu = 0
  for (let rep = 0; rep < PAGINGS + 1; rep++) { // the first paging is a warm-up
    const cpu0 = cpuMs(pind.proc.pid)
    const j = rep % QUERIED; const seen = new Set(); let before; let pages = 0
    const t0 = performance.now()
    for (;;) {
      const { ms, body } = await get(`/pins?limit=10${before != null ? `&before=${encodeURIComponent(before)}` : ''}`, j)
      pages++
      if (rep > 0) pageMs.push(ms)
      for (const p of body.results) seen.add(p.requestid)
      if (body.count === body.results.length) break
      before = body.results[body.results.length - 1].created
    }
    if (rep > 0) { pagingMs.push(performance.now() - t0); pagingCpu += cpuMs(pind.proc.pid) - cpu0 }
    if (seen.size !== PER_OWNER || pages !== Math.ceil(PER_OWNER / 10)) throw new Error(`paging saw ${seen.size} pins in ${pages} pages`)
  }
  rows.push([`paging ${PER_OWNER} pins, limit=10&before=… (per page)`, { ...stats(pageMs), cpuUs: 1000 * pagingCpu / pageMs.length }])

  const floor = rows[0][1].p50
  console.log(`${'request'.padEnd(72)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'max ms'.padStart(7)} ${'×floor'.padStart(7)} ${'n'.padStart(6)} ${'cpu µs'.padStart(7)}`)
  for (const [label, s] of rows) console.log(`${label.padEnd(72)} ${s.p50.toFixed(2).padStart(7)} ${s.p99.toFixed(2).padStart(7)} ${s.max.toFixed(2).padStart(7)} ${(s.p50 / floor).toFixed(1).padStart(7)} ${String(s.n).padStart(6)} ${s.cpuUs.toFixed(0).padStart(7)}`)
  const full = stats(pagingMs)
  console.log(`full paging of ${PER_OWNER} pins (${Math.ceil(PER_OWNER / 10)} requests): median ${full.p50.toFixed(0)} ms, max ${full.max.toFixed(0)} ms over ${pagingMs.length} pagings`)
  const worst = Math.max(...rows.slice(2).map(([, s]) => s.p99))
  console.log(`target p99 < 10 ms for GET /pins: ${worst < 10 ? 'met' : 'NOT met'} (worst p99 ${worst.toFixed(2)} ms)`)
  const worstRow = rows.slice(2).find(([, s]) => s.p99 === worst)[0]
  jsonResult({
    pins: OWNERS * PER_OWNER, ledger: onPostgres ? 'postgres' : 'lmdb', serveUpMs: pind.ms, emptyServeUpMs: emptyUpMs,
    mintMs: median(mintMs), mints: mintMs, versionMs: median(versionMs), versions: versionMs,
    healthP99: rows[0][1].p99, pinsP99: worst, pinsP99Request: worstRow,
    rows: Object.fromEntries(rows.map(([label, s]) => [label, s]))
  })
} finally {
  await pool?.close()
  await pind?.stop()
  if (db != null) await stopPostgres({ dir: db.dir, remove: true })
  if (argv.includes('--keep')) console.log(`kept ${dir}`)
  else rmSync(dir, { recursive: true, force: true })
}
