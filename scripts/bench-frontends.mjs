#!/usr/bin/env node
/**
 * Several front ends on PostgreSQL (issue 36), against one front end on LMDB, in one run on
 * the same machine, every configuration on blocks in a bucket of the same throwaway Ceph RADOS
 * Gateway (scripts/s3/, one bucket each), the dev chain (scripts/devchain/) and one throwaway
 * PostgreSQL cluster (scripts/postgres.mjs, one database per configuration):
 *
 *   - LMDB 1 FE: one `pind serve` on its own ledger.mdb, --blockstore s3 (the baseline);
 *   - PG 1 FE:   one serve with --ledger postgres;
 *   - PG 2 FEs:  two serves sharing another database and another bucket, each with its own
 *                data dir and settler key, the load spread over them round robin.
 * Each front end is pinned to a core with `taskset` (every single one and the first of the two
 * to core 0, the second to core 1); PostgreSQL, Ceph, anvil and this load generator are not
 * pinned: they share both cores with the front ends (printed). Without taskset nothing is pinned.
 *
 * All four serves run at once; the configurations take turns in --rounds slices, so that
 * other work on the machine falls on all of them alike. Measured per configuration:
 *   - paid writes/s: paid POST /upload of a --kib file (a fresh one each), --concurrency in
 *     flight; every payment is signed before the timed slice (a 402 from each front end, then
 *     one EIP-3009 authorization per write, payers taking turns) and used once;
 *   - gateway MB/s: GET /ipfs/<cid> of a --gateway-mb file uploaded before, whole, --read-concurrency
 *     in flight (no read cache: every block comes from the bucket; no database on that path).
 * Then, on PG 1 FE alone, what reaches the database: statements run (each one round trip with
 * node-postgres), counted by PostgreSQL's pg_stat_statements over each operation only, and the
 * ledger contract's calls (pind_ledger_call_duration_seconds_count on --metrics-listen), per
 * paid write, per pin by CID (paid POST /pins of a CID an origin peer holds, until `pinned`)
 * and per listing (GET /pins?limit=10); the commonest statements of each are printed.
 * Last, GET /pins p99 over --pins pins (100 owners × 1,000) on PostgreSQL, by
 * scripts/bench-pins-list.mjs --ledger postgres, against the same on LMDB.
 *
 * Targets (printed beside each ratio, never asserted by a test): PG 1 FE ≥ 0.8× the paid-write
 * rate of LMDB 1 FE; gateway ≥ 0.95× LMDB; 2 FEs ≥ 1.6× the paid-write rate of 1; GET /pins
 * p99 < 20 ms on PostgreSQL.
 *
 * `--quick`: tiny sizes (a test runs it so; the figures are noise). `--json`: a last line with
 * the figures. `--no-pins-list`: skip the GET /pins rows. BENCH_SERVE_NODE_OPTIONS (bench-lib)
 * reaches every serve: `--cpu-prof --cpu-prof-dir=…` profiles the front ends under this load.
 *
 * Usage: node scripts/bench-frontends.mjs [--writes 300] [--rounds 3] [--concurrency 16] [--kib 16]
 *          [--gateway-mb 20] [--reads 10] [--read-concurrency 4] [--round-trip-ops 30]
 *          [--owners 100 --per-owner 1000] [--no-pins-list] [--quick] [--bundle | --binary <file>] [--json]
 *   (default runs the binary dist/pind; root, or Ceph installed: the first run installs Debian's ceph packages)
 */
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { request } from 'undici'
import { toHex } from 'viem'
import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts'
import { BINARY, jsonResult, multipartPost, paidUpload, ROOT, startServe, x402For } from './bench-lib.mjs'
import { startDevChain } from './devchain/index.mjs'
import { startPeer } from './peer/index.mjs'
import { startPostgres, stopPostgres } from './postgres.mjs'
import { startS3 } from './s3/index.mjs'

const argv = process.argv.slice(2)
const quick = argv.includes('--quick')
const opt = (name, full, short) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? Number(argv[i + 1]) : quick ? short : full }
const WRITES = opt('writes', 300, 12) // paid writes per configuration per round
const ROUNDS = opt('rounds', 3, 1)
const CONCURRENCY = opt('concurrency', 16, 4)
const KIB = opt('kib', 16, 4)
const GATEWAY_MB = opt('gateway-mb', 20, 1)
const READS = opt('reads', 10, 2) // whole reads per configuration per round
const READ_CONCURRENCY = opt('read-concurrency', 4, 2)
const RT_OPS = opt('round-trip-ops', 30, 3)
const OWNERS = opt('owners', 100, 10)
const PER_OWNER = opt('per-owner', 1000, 100)
const PAYERS = 8
const pinsList = !argv.includes('--no-pins-list')
const bundle = argv.includes('--bundle')
const binary = argv.includes('--binary') ? argv[argv.indexOf('--binary') + 1] : BINARY
const pindCmd = bundle ? [process.execPath, join(ROOT, 'dist/pind.cjs')] : [binary]
const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0
const loadAtStart = loadavg()
/** anvil's default accounts 3, 4 and 5 (10,000 ETH each): settlers beside the dev chain's own (account 1) */
const anvilKey = (i) => toHex(mnemonicToAccount('test test test test test test test test test test test junk', { addressIndex: i }).getHdKey().privateKey)
/** marks this script's own statements, which the counts leave out */
const MARK = '/* bench-frontends */'

const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))
/** user + system CPU of a process so far, in ms (/proc/<pid>/stat, clock ticks of 10 ms) */
const cpuMs = (pid) => { try { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) * 10 } catch { return 0 } }
/** the processes whose parent is `pid` (PostgreSQL's backends and helpers) */
const childrenOf = (pid) => readdirSync('/proc').filter(d => /^\d+$/.test(d)).filter(d => { try { return Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ')[1]) === pid } catch { return false } }).map(Number)
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))] }
const freePort = () => new Promise((resolve, reject) => { const s = createServer(); s.once('error', reject); s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)) }) })

/** runs `fn` over `items` with `conc` in flight */
async function pool (items, conc, fn) {
  let next = 0
  await Promise.all(Array.from({ length: Math.min(conc, items.length) }, async () => { while (next < items.length) { const i = next++; await fn(items[i], i) } }))
}

const stops = [] // what was started, stopped in reverse order at the end
let exitCode = 0
try {
  const s3 = await startS3({ storeSize: 4 * 2 ** 30 })
  stops.push(() => s3.stop())
  const chain = await startDevChain({ payers: PAYERS, pruneHistory: true })
  stops.push(() => chain.stop())
  const db = await startPostgres({ settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track_utility': 'on' } })
  stops.push(() => stopPostgres({ dir: db.dir, remove: true }))
  const observer = new pg.Client({ connectionString: db.url })
  await observer.connect()
  stops.push(() => observer.end())
  await observer.query(`CREATE EXTENSION pg_stat_statements ${MARK}`)
  await observer.query(`CREATE DATABASE pind_fleet ${MARK}`)
  const fleetUrl = db.url.replace(/\/pind$/, '/pind_fleet')
  const payers = chain.payers.map(p => x402For(chain, p.privateKey))
  // the dev chain funds one settler; the others get 10,000 ETH of gas each
  for (const i of [3, 4, 5]) {
    const r = await fetch(chain.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_setBalance', params: [privateKeyToAccount(anvilKey(i)).address, toHex(10n ** 22n)] }) })
    if ((await r.json()).error != null) throw new Error('anvil_setBalance failed')
  }

  /** one serve on `core`, its blocks in `bucket` */
  const serve = async ({ core, bucket, settlerKey, ledger = [], metricsPort }) => {
    const fe = await startServe({
      binary: hasTaskset ? 'taskset' : pindCmd[0],
      binaryArgs: hasTaskset ? ['-c', String(core), ...pindCmd] : pindCmd.slice(1),
      args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--rate-limit-unpaid', '0', '--rate-limit-reads', '0',
        '--blockstore', 's3', '--s3-endpoint', s3.endpoint, '--s3-bucket', bucket, '--s3-force-path-style', '--origin-addresses', 'any',
        ...ledger, ...(metricsPort != null ? ['--metrics-listen', `127.0.0.1:${metricsPort}`] : [])],
      env: { PIND_SETTLER_KEY: settlerKey, ...s3.env() },
      startTimeoutMs: 60_000
    })
    stops.push(() => fe.stop())
    return { ...fe, core, metricsPort }
  }
  const pgArgs = (url) => ['--ledger', 'postgres', '--database-url', url, '--token-issuer', 'bench']
  const metricsPort = await freePort()
  const configs = [
    { key: 'lmdb', label: 'LMDB 1 FE', fes: [await serve({ core: 0, bucket: await s3.createBucket('bench-lmdb'), settlerKey: chain.settlerKey })] },
    { key: 'pg1', label: 'PG 1 FE', fes: [await serve({ core: 0, bucket: await s3.createBucket('bench-pg1'), settlerKey: anvilKey(3), ledger: pgArgs(db.url), metricsPort })] }
  ]
  const fleetBucket = await s3.createBucket('bench-pg2')
  configs.push({ key: 'pg2', label: 'PG 2 FEs', fes: [await serve({ core: 0, bucket: fleetBucket, settlerKey: anvilKey(4), ledger: pgArgs(fleetUrl) }), await serve({ core: 1, bucket: fleetBucket, settlerKey: anvilKey(5), ledger: pgArgs(fleetUrl) })] })
  const byKey = Object.fromEntries(configs.map(c => [c.key, c]))

  console.log(`bench-frontends: ${bundle ? 'bundle dist/pind.cjs' : `binary ${binary}`}, Node ${process.version}; load average at start ${loadAtStart.map(x => x.toFixed(2)).join(' ')}`)
  console.log(`  where things run: ${hasTaskset ? 'LMDB 1 FE and PG 1 FE on core 0 (taskset -c 0); PG 2 FEs on core 0 and core 1' : 'taskset missing: nothing pinned'}; PostgreSQL 15 (${db.url}), Ceph RGW (${s3.endpoint}), anvil and this load generator unpinned, sharing both cores with the front ends`)
  console.log(`  front end pids (for --cpu-prof's files): ${configs.map(c => `${c.label} ${c.fes.map(f => f.proc.pid).join(' ')}`).join('; ')}`)
  console.log(`  every configuration on its own Ceph bucket (--blockstore s3, no read cache); PG 1 FE and PG 2 FEs on their own database of one PostgreSQL cluster; all four serves up at once, the configurations taking turns in ${ROUNDS} rounds`)
  console.log(`  paid writes: POST /upload of ${KIB} KiB, payments signed before each slice (${PAYERS} payers), ${WRITES} per configuration per round, ${CONCURRENCY} in flight; gateway: GET /ipfs/<cid> of ${GATEWAY_MB} MB, ${READS} per round, ${READ_CONCURRENCY} in flight`)

  /** `n` paid uploads for a configuration, paid ahead: a 402 from each front end, one authorization per write */
  const presign = async (cfg, n) => {
    const size = KIB * 1024
    const required = []
    for (const fe of cfg.fes) {
      const unpaid = await multipartPost(`${fe.url}/upload`, randomBytes(size))
      const challenge = await unpaid.body.text()
      if (unpaid.statusCode !== 402) throw new Error(`expected 402, got ${unpaid.statusCode} ${challenge}`)
      required.push(payers[0].http.getPaymentRequiredResponse(h => unpaid.headers[h.toLowerCase()], JSON.parse(challenge)))
    }
    const jobs = []
    for (let i = 0; i < n; i++) {
      const f = i % cfg.fes.length; const p = payers[i % PAYERS]
      jobs.push({ fe: cfg.fes[f], bytes: randomBytes(size), headers: p.http.encodePaymentSignatureHeader(await p.client.createPaymentPayload(required[f])) })
    }
    return jobs
  }
  const cpuOf = (cfg) => cfg.fes.reduce((sum, fe) => sum + cpuMs(fe.proc.pid), 0)
  // the CPU the rest spends per write: anvil (verify reads, settle transactions, receipts), Ceph (the PUTs), PostgreSQL (every backend)
  const postmaster = Number(readFileSync(join(db.dir, 'postmaster.pid'), 'utf8').split('\n')[0])
  const others = () => ({ anvil: cpuMs(chain.pid), ceph: Object.values(s3.pids).reduce((a, pid) => a + cpuMs(pid), 0), postgres: new Map([postmaster, ...childrenOf(postmaster)].map(pid => [pid, cpuMs(pid)])) })

  const res = Object.fromEntries(configs.map(c => [c.key, { writeN: 0, writeMs: 0, lat: [], feCpu: 0, genCpu: 0, anvil: 0, ceph: 0, postgres: 0, readBytes: 0, readMs: 0 }]))
  // the gateway's file, one per configuration, uploaded (and paid) through its first front end
  for (const cfg of configs) {
    const bytes = randomBytes(GATEWAY_MB * 1_000_000)
    cfg.cid = (await paidUpload(cfg.fes[0].url, bytes, payers[0])).body.cid
    cfg.size = bytes.length
    for (const fe of cfg.fes) {
      const deadline = Date.now() + 10_000
      for (;;) { // the other front end serves it once the pin reaches it (a notification)
        const r = await request(`${fe.url}/ipfs/${cfg.cid}`, { method: 'HEAD' })
        await r.body.dump()
        if (r.statusCode === 200) break
        if (Date.now() > deadline) throw new Error(`${cfg.label}: ${fe.url} does not serve ${cfg.cid} (${r.statusCode})`)
        await sleep(20)
      }
    }
  }
  // warm-up: a few paid writes and a read on every front end
  for (const cfg of configs) {
    await pool(await presign(cfg, 2 * cfg.fes.length), 4, async (j) => { const r = await multipartPost(`${j.fe.url}/upload`, j.bytes, j.headers); const t = await r.body.text(); if (r.statusCode !== 201) throw new Error(`${cfg.label}: warm-up upload ${r.statusCode} ${t}`) })
  }

  for (let round = 0; round < ROUNDS; round++) {
    for (const cfg of configs) {
      const jobs = await presign(cfg, WRITES)
      const r = res[cfg.key]
      const c0 = cpuOf(cfg); const g0 = process.cpuUsage(); const o0 = others(); const t0 = performance.now()
      await pool(jobs, CONCURRENCY, async (j) => {
        const s = performance.now()
        const up = await multipartPost(`${j.fe.url}/upload`, j.bytes, j.headers)
        const text = await up.body.text()
        if (up.statusCode !== 201) throw new Error(`${cfg.label}: paid upload ${up.statusCode} ${text}`)
        r.lat.push(performance.now() - s)
      })
      r.writeMs += performance.now() - t0; r.writeN += jobs.length
      const g = process.cpuUsage(g0)
      r.feCpu += cpuOf(cfg) - c0; r.genCpu += (g.user + g.system) / 1000
      const o1 = others()
      r.anvil += o1.anvil - o0.anvil; r.ceph += o1.ceph - o0.ceph
      for (const [pid, ms] of o1.postgres) if (o0.postgres.has(pid)) r.postgres += ms - o0.postgres.get(pid) // backends alive at both ends
    }
    for (const cfg of configs) {
      const r = res[cfg.key]
      const t0 = performance.now()
      await pool(Array.from({ length: READS }, (_, i) => cfg.fes[i % cfg.fes.length]), READ_CONCURRENCY, async (fe) => {
        const g = await request(`${fe.url}/ipfs/${cfg.cid}`)
        let bytes = 0
        for await (const chunk of g.body) bytes += chunk.length
        if (g.statusCode !== 200 || bytes !== cfg.size) throw new Error(`${cfg.label}: gateway ${g.statusCode}, ${bytes} bytes`)
        r.readBytes += bytes
      })
      r.readMs += performance.now() - t0
    }
    console.log(`  round ${round + 1}/${ROUNDS}: ${configs.map(c => `${c.label} ${(res[c.key].writeN / res[c.key].writeMs * 1000).toFixed(1)} writes/s, ${(res[c.key].readBytes / 1000 / res[c.key].readMs).toFixed(0)} MB/s`).join('; ')} (so far)`)
  }
  const writesPerS = (k) => res[k].writeN / res[k].writeMs * 1000
  const mbPerS = (k) => res[k].readBytes / 1000 / res[k].readMs
  const cpuPerWrite = (k) => { const r = res[k]; const x = { fe: r.feCpu, generator: r.genCpu, anvil: r.anvil, ceph: r.ceph, postgres: r.postgres }; return Object.fromEntries(Object.entries(x).map(([n, v]) => [n, v / r.writeN])) }
  console.log(`${'configuration'.padEnd(12)} ${'writes/s'.padStart(9)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)}  CPU ms per write: ${'FE'.padStart(5)} ${'anvil'.padStart(6)} ${'Ceph'.padStart(5)} ${'PG'.padStart(5)} ${'gen.'.padStart(5)} ${'all'.padStart(5)}  ${'gateway MB/s'.padStart(12)}`)
  for (const c of configs) {
    const r = res[c.key]; const cpu = cpuPerWrite(c.key)
    const all = Object.values(cpu).reduce((a, b) => a + b, 0)
    console.log(`${c.label.padEnd(12)} ${writesPerS(c.key).toFixed(1).padStart(9)} ${pct(r.lat, 0.5).toFixed(1).padStart(7)} ${pct(r.lat, 0.99).toFixed(1).padStart(7)}  ${''.padStart(17)} ${[cpu.fe, cpu.anvil, cpu.ceph, cpu.postgres, cpu.generator, all].map((v, i) => v.toFixed(1).padStart(i === 1 ? 6 : 5)).join(' ')}  ${mbPerS(c.key).toFixed(0).padStart(12)}`)
  }
  console.log(`  (CPU per write from /proc: the front ends, anvil, Ceph's mon + osd + rgw, every PostgreSQL process alive over the whole slice, this generator; 2 cores = 2,000 ms of CPU a second, so "all" caps writes/s at 2,000 / all on this machine whatever is pinned)`)

  // what reaches the database, on PG 1 FE alone: statements (pg_stat_statements) and ledger calls (metrics)
  const pg1 = byKey.pg1.fes[0]
  const statements = async () => {
    const r = await observer.query(`SELECT queryid::text AS id, query, calls::int AS calls FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'pind') ${MARK}`)
    return new Map(r.rows.filter(x => !x.query.includes(MARK)).map(x => [x.id, x]))
  }
  const ledgerCalls = async () => {
    const text = await (await fetch(`http://127.0.0.1:${pg1.metricsPort}/metrics`)).text()
    const m = new Map()
    for (const [, op, n] of text.matchAll(/^pind_ledger_call_duration_seconds_count\{operation="([^"]+)"\} (\d+)/gm)) m.set(op, Number(n))
    return m
  }
  /**
   * runs `op` on what `prepare` made for each of `n` runs (all made first): the statements each run sends to the database (read before and after
   * each), and the ledger calls of the whole phase, less what a scrape of /metrics makes itself
   * (its gauges read the ledger) — scraped only at the phase's start and end
   */
  const scrapeCost = async () => { const a = await ledgerCalls(); const b = await ledgerCalls(); return new Map([...b].map(([k, v]) => [k, v - (a.get(k) ?? 0)])) }
  const counted = async (n, prepare, op) => {
    const stmt = new Map()
    const ready = []
    for (let i = 0; i < n; i++) ready.push(await prepare(i)) // before the counts (a pin's 402 asks the ledger too)
    const scrape = await scrapeCost()
    const l0 = await ledgerCalls()
    for (let i = 0; i < n; i++) {
      const s0 = await statements()
      await op(ready[i])
      for (const [id, x] of await statements()) { const d = x.calls - (s0.get(id)?.calls ?? 0); if (d > 0) stmt.set(id, { query: x.query, calls: (stmt.get(id)?.calls ?? 0) + d }) }
    }
    const calls = new Map()
    for (const [k, v] of await ledgerCalls()) { const d = v - (l0.get(k) ?? 0) - (scrape.get(k) ?? 0); if (d > 0) calls.set(k, d) }
    const total = (m) => [...m.values()].reduce((a, x) => a + (typeof x === 'number' ? x : x.calls), 0)
    return { statements: total(stmt) / n, calls: total(calls) / n, top: [...stmt.values()].sort((a, b) => b.calls - a.calls).map(x => ({ query: x.query.replace(/\s+/g, ' '), perOp: x.calls / n })), ops: [...calls].sort((a, b) => b[1] - a[1]).map(([k, v]) => ({ op: k, perOp: v / n })) }
  }
  const writeJobs = await presign(byKey.pg1, RT_OPS)
  let token
  const rtWrite = await counted(RT_OPS, async (i) => writeJobs[i], async (j) => {
    const up = await multipartPost(`${pg1.url}/upload`, j.bytes, j.headers)
    const text = await up.body.text()
    if (up.statusCode !== 201) throw new Error(`paid upload ${up.statusCode} ${text}`)
    token ??= up.headers['x-wallet-auth-token']
  })
  const origin = await startPeer()
  stops.push(() => origin.stop())
  const rtPin = await counted(RT_OPS, async () => {
    const { cid } = await origin.addRandom(256 * 1024)
    const body = JSON.stringify({ cid, origins: origin.multiaddrs() })
    const unpaid = await request(`${pg1.url}/pins`, { method: 'POST', body, headers: { 'content-type': 'application/json' } })
    const challenge = await unpaid.body.text()
    if (unpaid.statusCode !== 402) throw new Error(`POST /pins: expected 402, got ${unpaid.statusCode} ${challenge}`)
    const p = payers[1]
    const required = p.http.getPaymentRequiredResponse(h => unpaid.headers[h.toLowerCase()], JSON.parse(challenge))
    return { body, headers: { 'content-type': 'application/json', ...p.http.encodePaymentSignatureHeader(await p.client.createPaymentPayload(required)) } }
  }, async ({ body, headers }) => {
    const r = await request(`${pg1.url}/pins`, { method: 'POST', body, headers })
    const st = await r.body.json()
    if (r.statusCode !== 202) throw new Error(`paid POST /pins: ${r.statusCode} ${JSON.stringify(st)}`)
    const deadline = Date.now() + 30_000
    for (;;) { // watched in the database by this script (left out of the counts), not through pind
      const row = (await observer.query(`SELECT status FROM pins WHERE requestid = $1 ${MARK}`, [st.requestid])).rows[0]
      if (row?.status === 'pinned') break
      if (row?.status === 'failed' || Date.now() > deadline) throw new Error(`pin ${st.requestid}: ${row?.status}`)
      await sleep(5)
    }
    await sleep(100) // what follows `pinned` (the block list, the provide schedule) belongs to the pin too
  })
  const auth = { authorization: `Bearer ${token}` }
  const rtList = await counted(RT_OPS * 2, async () => undefined, async () => {
    const r = await request(`${pg1.url}/pins?limit=10`, { headers: auth })
    const b = await r.body.json()
    if (r.statusCode !== 200 || !(b.count > 0)) throw new Error(`GET /pins: ${r.statusCode} ${JSON.stringify(b)}`)
  })
  const rtRead = await counted(RT_OPS, async () => undefined, async () => {
    const g = await request(`${pg1.url}/ipfs/${byKey.pg1.cid}`)
    let bytes = 0
    for await (const chunk of g.body) bytes += chunk.length
    if (g.statusCode !== 200 || bytes !== byKey.pg1.size) throw new Error(`gateway ${g.statusCode}, ${bytes} bytes`)
  })
  const rt = { write: rtWrite, pin: rtPin, list: rtList, read: rtRead }
  const rtLabels = { write: `paid write (POST /upload, ${KIB} KiB)`, pin: 'pin by CID (paid POST /pins → pinned, fetched from an origin)', list: 'listing (GET /pins?limit=10)', read: `gateway read (GET /ipfs/<cid>, ${GATEWAY_MB} MB)` }
  console.log(`database round trips on PG 1 FE (statements counted by pg_stat_statements over each operation; ledger contract calls from pind's metrics):`)
  for (const [k, x] of Object.entries(rt)) {
    console.log(`  ${rtLabels[k].padEnd(62)} ${x.statements.toFixed(1).padStart(5)} round trips, ${x.calls.toFixed(1).padStart(4)} ledger calls`)
    console.log(`      calls: ${x.ops.map(o => `${o.op} ${+o.perOp.toFixed(2)}`).join(', ')}`)
    console.log(`      statements: ${x.top.slice(0, 8).map(s => `${+s.perOp.toFixed(2)}× ${s.query.length > 60 ? `${s.query.slice(0, 57)}…` : s.query}`).join(' | ')}`)
  }

  // every serve stopped before GET /pins is timed (its own serve, on its own PostgreSQL)
  while (stops.length > 0) await stops.pop()()
  const listRun = async (ledger) => {
    const args = [join(ROOT, 'scripts/bench-pins-list.mjs'), ...(bundle ? [] : ['--bin', binary]), '--owners', String(OWNERS), '--per-owner', String(PER_OWNER), '--ledger', ledger, '--json',
      ...(quick ? ['--requests', '100', '--pagings', '2'] : [])]
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    p.stdout.on('data', b => { out += b })
    const code = await new Promise(resolve => p.on('exit', resolve))
    if (code !== 0) throw new Error(`bench-pins-list.mjs --ledger ${ledger} exited ${code}:\n${out}`)
    const lines = out.trim().split('\n')
    for (const l of lines.slice(0, -1)) console.log(`  [${ledger}] ${l}`)
    return JSON.parse(lines.at(-1))
  }
  const lists = pinsList ? { lmdb: await listRun('lmdb'), postgres: await listRun('postgres') } : undefined

  // the table: each figure against its baseline of this run, the target beside it
  const rows = [
    { name: 'pg1-writes', label: 'paid writes, PG 1 FE', unit: 'writes/s', figure: writesPerS('pg1'), baselineLabel: 'LMDB 1 FE', baseline: writesPerS('lmdb'), atLeast: 0.8 },
    { name: 'pg2-writes', label: 'paid writes, PG 2 FEs', unit: 'writes/s', figure: writesPerS('pg2'), baselineLabel: 'PG 1 FE', baseline: writesPerS('pg1'), atLeast: 1.6 },
    { name: 'pg1-gateway', label: 'gateway, PG 1 FE', unit: 'MB/s', figure: mbPerS('pg1'), baselineLabel: 'LMDB 1 FE', baseline: mbPerS('lmdb'), atLeast: 0.95 },
    { name: 'pg2-gateway', label: 'gateway, PG 2 FEs', unit: 'MB/s', figure: mbPerS('pg2'), baselineLabel: 'PG 1 FE', baseline: mbPerS('pg1') },
    ...(lists != null ? [{ name: 'pins-p99', label: `GET /pins p99, ${(OWNERS * PER_OWNER).toLocaleString('en-US')} pins, PG`, unit: 'ms', figure: lists.postgres.pinsP99, baselineLabel: 'LMDB', baseline: lists.lmdb.pinsP99, below: 20 }] : [])
  ].map(r => ({ ...r, ratio: r.figure / r.baseline, met: r.atLeast != null ? r.figure / r.baseline >= r.atLeast : r.below != null ? r.figure < r.below : undefined }))
  const fmt = (x) => x.toLocaleString('en-US', { maximumFractionDigits: x < 20 ? 2 : 1, minimumFractionDigits: x < 20 ? 2 : 1 })
  console.log('')
  for (const r of rows) {
    const target = r.atLeast != null ? (r.atLeast < 1.01 ? `≥ ${(100 * r.atLeast).toFixed(0)}% of baseline` : `≥ ${r.atLeast}× baseline`) : r.below != null ? `< ${r.below} ms` : '(none)'
    const ratio = r.atLeast != null && r.atLeast < 1.01 ? `${(100 * r.ratio).toFixed(0)}%` : `${r.ratio.toFixed(2)}×`
    console.log(`${r.label.padEnd(34)} ${`${fmt(r.figure)} ${r.unit}`.padStart(16)}  ${`vs ${r.baselineLabel} ${fmt(r.baseline)} ${r.unit}`.padEnd(34)} ${ratio.padStart(6)}  target ${target.padEnd(20)} ${r.met == null ? 'info' : r.met ? 'met' : 'MISSED'}`)
  }
  const rtRow = { write: 'paid write', pin: 'pin by CID', list: 'listing', read: 'gateway read' }
  for (const [k, x] of Object.entries(rt)) console.log(`${`round trips per ${rtRow[k]}, PG`.padEnd(34)} ${x.statements.toFixed(1).padStart(16)}  ${`(${x.calls.toFixed(1)} ledger calls)`.padEnd(34)}`)
  const loadAtEnd = loadavg()
  console.log(`${rows.filter(r => r.met === true).length} met, ${rows.filter(r => r.met === false).length} missed; load average at start ${loadAtStart.map(x => x.toFixed(2)).join(' ')}, at end ${loadAtEnd.map(x => x.toFixed(2)).join(' ')}`)
  jsonResult({
    quick, taskset: hasTaskset, kib: KIB, gatewayMb: GATEWAY_MB,
    configs: Object.fromEntries(configs.map(c => [c.key, { writesPerS: writesPerS(c.key), writeP50: pct(res[c.key].lat, 0.5), writeP99: pct(res[c.key].lat, 0.99), feCpuMsPerWrite: res[c.key].feCpu / res[c.key].writeN, cpuMsPerWrite: cpuPerWrite(c.key), gatewayMBps: mbPerS(c.key), writes: res[c.key].writeN }])),
    roundTrips: Object.fromEntries(Object.entries(rt).map(([k, x]) => [k, { statements: x.statements, ledgerCalls: x.calls, top: x.top.slice(0, 12), ops: x.ops }])),
    ...(lists != null ? { pinsList: { pins: OWNERS * PER_OWNER, postgresP99: lists.postgres.pinsP99, lmdbP99: lists.lmdb.pinsP99, postgresRequest: lists.postgres.pinsP99Request } } : {}),
    rows: rows.map(({ name, figure, baseline, ratio, met }) => ({ name, figure, baseline, ratio, met })),
    loadavg: { start: loadAtStart, end: loadAtEnd }
  })
} catch (err) {
  console.error(err)
  exitCode = 1
} finally {
  while (stops.length > 0) await stops.pop()().catch(err => console.error(`stop: ${err.message}`))
}
process.exit(exitCode)
