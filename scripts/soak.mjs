#!/usr/bin/env node
/**
 * Soak: the built binary under the load its users put on it, for many
 * minutes, on the dev chain (anvil with --prune-history, its cache in a temp
 * dir this removes).
 *
 * Load, all at once:
 *   - `clients` paying clients (default 16), each with its own payer address
 *     and its own X-Forwarded-For (pind runs with --trusted-proxies 127.0.0.1,
 *     so the default rate limits apply per client): paid uploads of 1 KB to
 *     60 MB (log-uniform), paid pins by CID of content held by an origin peer
 *     (scripts/peer/, 1 KB to 16 MB), whole gateway reads and ranges of their
 *     own content (each checked against what was sent), listings (the count
 *     must equal what the client holds), status reads and deletes. A client
 *     keeps at most `maxLive` writes: past that it deletes one, after reading
 *     it back whole; `pind gc` runs every `gcEvery` so the disk stays bounded.
 *   - `quoteClients` clients (default half as many) asking for quotes
 *     (unpaid POST /upload and POST /pins → 402), at 100 a minute each, under
 *     the default limit of 120.
 *   - a SIGTERM and restart on the same data dir and port at `restartAt` of
 *     the run (default a third: the memory fit over the second half then sees
 *     a warmed-up process).
 * A client honours 429/503 with Retry-After, and while the service restarts it
 * retries a refused or reset connection; everything else unexpected is an
 * error.
 *
 * Every `sampleMs` (10 s) a CSV row: RSS (anonymous and file-backed, and of
 * the file-backed part the ledger's mapped pages, from /proc/<pid>/smaps), the JS
 * heap, V8's malloc'd memory outside it (now, and its peak since start), external and ArrayBuffer memory (from GET /metrics on the admin
 * socket), open fds, ledger.mdb and blocks/ sizes, requests and errors so far.
 *
 * At the end, after `idleSeconds` without load (idle RSS): every acknowledged
 * write still live is read back whole and hash-checked, every deleted one is
 * gone, every payer's balance change on chain equals what the ledger charged
 * it (and every acknowledged write's payment is in the ledger, at the amount
 * the response said), and the payee received the sum.
 *
 * Prints throughput, errors, p50/p99 per operation and a memory verdict: a
 * plateau, or the growth per hour of a linear fit of RSS over the second half.
 * Then, with serve stopped, where the ledger's bytes went: pages and entries
 * of each sub-database of ledger.mdb, and bytes per paid write of each
 * (scripts/ledger-stats.mjs) — lmdb maps the file, so its growth is RSS.
 *
 * With --front-ends 2 (or `frontEnds`, `database` and an S3 `blockstore` from a
 * test) two serves share a PostgreSQL ledger (a throwaway cluster,
 * scripts/postgres.mjs) and a bucket of a throwaway Ceph RADOS Gateway
 * (scripts/s3/), each with its own data dir, port and settler key: each client
 * keeps to one of them, the first is the one sampled and restarted (the
 * other serves on), and every live write is read back through each of them.
 * The ledger's bytes are then PostgreSQL's, not reported.
 *
 * Usage: node scripts/soak.mjs [minutes=30] [clients=16] [--quote-clients N]
 *   [--csv file] [--json file] [--restart-at 0.33] [--no-restart] [--idle 60]
 *   [--max-live 24] [--gc-every 300] [--sample-every 10] [--keep-history]
 *   [--binary path/to/pind | --bundle] [--bare-runtime] [--front-ends 2]
 * pind runs with the production runtime environment of scripts/pind.service (GLIBC_TUNABLES,
 * NODE_OPTIONS, PIND_RUNTIME_*: docs/runtime.md); --bare-runtime leaves it out.
 * Env SOAK_ENV: extra environment for pind on top, e.g. SOAK_ENV='MALLOC_ARENA_MAX=2'
 * (a value may hold spaces: SOAK_ENV='NODE_OPTIONS=--max-semi-space-size=4 --heapsnapshot-signal=SIGUSR2').
 */
import { spawn } from 'node:child_process'
import { unitRuntimeEnv } from './runtime-env.mjs'
import { createCipheriv, createHash, randomBytes } from 'node:crypto'
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { createServer } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { unixfs } from '@helia/unixfs'
import { CID } from 'multiformats/cid'
import { toClientEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { x402Client, x402HTTPClient } from '@x402/fetch'
import { Agent, request } from 'undici'
import { privateKeyToAccount } from 'viem/accounts'
import { startDevChain, usdcBalance } from './devchain/index.mjs'
import { formatLedgerStats, ledgerStats } from './ledger-stats.mjs'
import { startPeer } from './peer/index.mjs'

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)))
const MiB = 1024 * 1024
const PIECE = 64 * 1024
const BOUNDARY = 'pind-soak-boundary'
const HEAD = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="soak.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`)
const TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`)
const ZEROS = Buffer.alloc(PIECE)
const OPS = ['upload', 'pin', 'read', 'range', 'list', 'status', 'delete', 'quote']
/** a paying client's mix (weights) once it holds something */
const MIX = [['upload', 30], ['pin', 8], ['read', 17], ['range', 17], ['list', 10], ['status', 8], ['delete', 10]]
/** quotes per client per minute: under the default unpaid limit of 120 */
const QUOTES_PER_MINUTE = 100
/** how long a client keeps retrying one request (Retry-After, or a connection refused during the restart) */
const RETRY_BUDGET_MS = 60_000

const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))
const pick = (xs) => xs[Math.floor(Math.random() * xs.length)]
const logUniform = (lo, hi) => Math.round(Math.exp(Math.log(lo) + Math.random() * (Math.log(hi) - Math.log(lo))))

/** The bytes of item `key` at `offset`: AES-128-CTR keystream, so any range can be made again to compare. */
function contentAt (key, offset, length) {
  const iv = Buffer.alloc(16)
  iv.writeBigUInt64BE(BigInt(Math.floor(offset / 16)), 8)
  const skip = offset % 16
  return createCipheriv('aes-128-ctr', key, iv).update(Buffer.alloc(skip + length)).subarray(skip)
}

/** The whole content of item `key`, in 64 KiB pieces; `hash` is fed as it goes. */
async function * contentStream (key, size, hash) {
  const c = createCipheriv('aes-128-ctr', key, Buffer.alloc(16))
  for (let o = 0; o < size; o += PIECE) {
    const piece = c.update(ZEROS.subarray(0, Math.min(PIECE, size - o)))
    hash?.update(piece)
    yield piece
  }
}

function freePort () {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)) })
  })
}

/** GET over the admin socket (HTTP on a Unix socket). */
function adminGet (socketPath, path) {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath, path, method: 'GET', timeout: 10_000 }, res => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', d => { body += d })
      res.on('end', () => { resolve({ status: res.statusCode, body }) })
      res.on('error', reject)
    })
    req.on('timeout', () => { req.destroy(new Error('admin socket timeout')) })
    req.on('error', reject)
    req.end()
  })
}

function metricValue (text, name) {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)
  return m == null ? NaN : Number(m[1])
}

function procStatus (pid) {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? NaN)
    return { rss: kb('VmRSS') * 1024, anon: kb('RssAnon') * 1024, file: kb('RssFile') * 1024, hwm: kb('VmHWM') * 1024 }
  } catch { return { rss: NaN, anon: NaN, file: NaN, hwm: NaN } }
}

/** the ledger files (ledger.mdb, ledger-archive.mdb) */
const LEDGER_FILES = /\/ledger(-archive)?\.mdb$/
/** the disk backend's packed small blocks (src/ipfs/small-blocks.ts) */
const SMALL_BLOCKS_FILE = /\/blocks\/small\.mdb$/

/** RSS of serve's mappings of the files `file` matches: their data, resident as lmdb reads it */
function mappedRss (pid, file) {
  try {
    let bytes = 0
    let hit = false
    for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
      if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) { hit = file.test(line); continue }
      if (hit && line.startsWith('Rss:')) bytes += Number(/(\d+)/.exec(line)[1]) * 1024
    }
    return bytes
  } catch { return NaN }
}

function fdCount (pid) {
  try { return readdirSync(`/proc/${pid}/fd`).length } catch { return NaN }
}

function dirUsage (dir) {
  let bytes = 0
  let files = 0
  const walk = (d) => {
    let entries
    try { entries = readdirSync(d, { withFileTypes: true }) } catch { return }
    for (const e of entries) {
      const p = join(d, e.name)
      if (e.isDirectory()) walk(p)
      else { try { bytes += statSync(p).size; files++ } catch {} }
    }
  }
  walk(dir)
  return { bytes, files }
}

const percentile = (xs, p) => {
  if (xs.length === 0) return NaN
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]
}

/** Least-squares slope of y over x. */
function slope (points) {
  const n = points.length
  if (n < 2) return 0
  const mx = points.reduce((a, p) => a + p[0], 0) / n
  const my = points.reduce((a, p) => a + p[1], 0) / n
  let num = 0
  let den = 0
  for (const [x, y] of points) { num += (x - mx) * (y - my); den += (x - mx) ** 2 }
  return den === 0 ? 0 : num / den
}

/**
 * The memory verdict from the samples of the loaded phase: a linear fit of
 * RSS over the second half of the run. A plateau when what the fit grows
 * over that half is under 5% of the mean RSS there.
 */
export function memoryVerdict (samples, durationS) {
  const loaded = samples.filter(s => s.phase === 'load' && Number.isFinite(s.rss))
  const half = loaded.filter(s => s.t >= durationS / 2)
  const window = half.length >= 2 ? half : loaded.slice(-Math.max(2, Math.ceil(loaded.length / 2)))
  const perSecond = slope(window.map(s => [s.t, s.rss]))
  const span = window.length >= 2 ? window[window.length - 1].t - window[0].t : 0
  const mean = window.reduce((a, s) => a + s.rss, 0) / Math.max(1, window.length)
  const growthPct = mean > 0 ? perSecond * span / mean * 100 : NaN
  const growthPerHourMiB = perSecond * 3600 / MiB
  return {
    verdict: growthPct < 5 ? 'plateau' : 'growing',
    growthPerHourMiB,
    /** what the fit grows over the window, as a share of the mean RSS in it */
    growthPct,
    windowS: span,
    windowSamples: window.length,
    meanRssMiB: mean / MiB
  }
}

export async function runSoak (opts = {}) {
  const {
    minutes = 30, clients = 16, quoteClients = Math.ceil(clients / 2), restart = true, restartAt = 1 / 3,
    sampleMs = 10_000, idleSeconds = 60, maxLive = 24, gcEverySeconds = 300, maxUploadBytes = 60_000_000,
    maxPinBytes = 16_000_000, pruneHistory = true, bundle = false, binary, csv, log = console.log, env: extraEnv = {}, signal,
    runtimeEnv = unitRuntimeEnv(), frontEnds = 1, database, blockstore = { args: [], env: {} }
  } = opts
  if (frontEnds > 2) throw new Error('--front-ends: 1 or 2 (the dev chain funds two settler keys)')
  if (frontEnds > 1 && (database == null || !blockstore.args.includes('s3'))) throw new Error('several front ends need a PostgreSQL ledger (database) and an S3 bucket (blockstore)')
  const durationS = minutes * 60
  const cmd = bundle ? [process.execPath, join(ROOT, 'dist/pind.cjs')] : [binary ?? join(ROOT, 'dist/pind')]
  const work = mkdtempSync(join(tmpdir(), 'pind-soak-'))
  const dataDir = join(work, 'data')
  const dataDirs = Array.from({ length: frontEnds }, (_, i) => i === 0 ? dataDir : join(work, `data-${i + 1}`))
  const csvPath = csv ?? join(work, 'soak.csv')
  const procs = new Set()
  let chain
  let origin
  const agent = new Agent({ connections: 64, keepAliveTimeout: 10_000, bodyTimeout: 120_000, headersTimeout: 120_000 })
  const state = {
    /** the running serves; the first is the one sampled and restarted */
    serves: [],
    get serve () { return this.serves[0] },
    /** while set, every client's requests go to this front end (the reads back through each) */
    through: undefined,
    restarting: false,
    stopping: false,
    requests: 0,
    errors: [],
    errorCount: 0,
    retries: { connection: 0, throttled: 0, busy: 0 },
    statuses: {},
    lat: Object.fromEntries(OPS.map(o => [o, []])),
    counts: Object.fromEntries(OPS.map(o => [o, 0])),
    uploadedBytes: 0,
    serviceLog: { errors: 0, warnings: 0, last: [] }
  }
  signal?.addEventListener('abort', () => { state.stopping = true }, { once: true })
  const error = (op, what) => {
    state.errorCount++
    if (state.errors.length < 200) state.errors.push(`${op}: ${what}`)
    // as they happen (a long run should have none; the first ones tell most)
    if (state.errorCount <= 20) log(`! t=${state.t0 == null ? 0 : Math.round((performance.now() - state.t0) / 1000)}s ${op}: ${what}`)
  }

  const run = (args, i = 0) => {
    // several front ends: each its own settler key (anvil accounts 1 and 0 hold ETH)
    const p = spawn(cmd[0], [...cmd.slice(1), ...args, '--data-dir', dataDirs[i], ...blockstore.args], {
      env: { ...process.env, PIND_SETTLER_KEY: [chain.settlerKey, chain.deployerKey][i], ...blockstore.env, ...runtimeEnv, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe']
    })
    procs.add(p)
    let out = ''
    let err = ''
    p.stdout.on('data', b => { out += b })
    p.stderr.on('data', b => { err += b })
    const exit = new Promise(resolve => p.on('exit', (code, signal) => { procs.delete(p); resolve(code ?? signal) }))
    return { p, out: () => out, err: () => err, exit }
  }
  const command = async (...args) => {
    const c = run(args)
    const code = await c.exit
    if (code !== 0) throw new Error(`pind ${args[0]} exited ${code}: ${c.err().slice(-500)}`)
    return c.out()
  }

  const ports = []
  const serve = async (i = 0) => {
    const t0 = performance.now()
    const port = ports[i] ??= await freePort()
    const s = run(['serve', '--port', String(port), '--p2p-listen', '/ip4/127.0.0.1/tcp/0', '--token-issuer', 'soak',
      '--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo,
      '--trusted-proxies', '127.0.0.1', '--origin-addresses', 'any', ...(database != null ? ['--ledger', 'postgres', '--database-url', database] : [])], i)
    let buf = ''
    s.p.stderr.on('data', b => {
      buf += b
      let nl
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        if (/"level":"error"/.test(line)) state.serviceLog.errors++
        else if (/"level":"warn"/.test(line)) state.serviceLog.warnings++
        else continue
        state.serviceLog.last.push(line.slice(0, 400))
        if (state.serviceLog.last.length > 20) state.serviceLog.last.shift()
      }
    })
    const url = `http://127.0.0.1:${port}`
    const deadline = Date.now() + 60_000
    for (;;) {
      if (s.p.exitCode != null || s.p.signalCode != null) throw new Error(`pind exited at start: ${s.err().slice(-2000)}`)
      if (Date.now() > deadline) throw new Error('pind did not start within 60 s')
      try {
        const r = await request(`${url}/health`, { dispatcher: agent })
        await r.body.dump()
        if (r.statusCode === 200) break
      } catch {}
      await sleep(10)
    }
    return { ...s, url, pid: s.p.pid, startMs: performance.now() - t0 }
  }

  // ---- HTTP with the client's behaviour: Retry-After honoured, reconnect while restarting ----
  /**
   * One logical request as a client makes it: `o.body()` makes a fresh body
   * for each attempt; returns the undici response with its body unread, or throws.
   */
  const call = async (op, xff, path, o = {}) => {
    const giveUpAt = performance.now() + RETRY_BUDGET_MS
    for (let attempt = 0; ; attempt++) {
      let r
      try {
        state.requests++
        // a client keeps to one front end (the last number of its address picks it)
        r = await request(`${state.serves[state.through ?? Number(xff.split('.')[3]) % frontEnds].url}${path}`, {
          dispatcher: agent,
          method: o.method ?? 'GET',
          headers: { 'x-forwarded-for': xff, ...(o.headers ?? {}) },
          ...(o.body != null ? { body: o.body() } : {})
        })
      } catch (err) {
        // a refused or reset connection while the service restarts: the client tries again; so does a read
        // sent on a kept-alive connection the server closed meanwhile (its 5 s idle timeout; a loaded machine's timers run late)
        const staleIdle = err?.code === 'UND_ERR_SOCKET' && (o.method ?? 'GET') === 'GET' && attempt === 0
        if ((staleIdle || state.restarting || Date.now() < state.restartGraceUntil) && performance.now() < giveUpAt && !state.stopping) {
          state.retries.connection++
          await sleep(100)
          continue
        }
        throw err
      }
      const retryAfter = Number(r.headers['retry-after'])
      if ((r.statusCode === 429 || r.statusCode === 503) && Number.isFinite(retryAfter) && performance.now() < giveUpAt && !state.stopping) {
        await r.body.dump()
        if (r.statusCode === 429) state.retries.throttled++
        else state.retries.busy++
        await sleep(Math.min(5, Math.max(0.2, retryAfter)) * 1000)
        continue
      }
      const key = `${op} ${r.statusCode}`
      state.statuses[key] = (state.statuses[key] ?? 0) + 1
      return r
    }
  }
  const timed = async (op, fn) => {
    const t0 = performance.now()
    try {
      await fn()
    } catch (err) {
      error(op, err?.code ?? err?.message ?? String(err))
    }
    state.lat[op].push(performance.now() - t0)
    state.counts[op]++
  }
  const expect = async (op, r, status) => {
    if (r.statusCode === status) return true
    const text = await r.body.text().catch(() => '')
    let why = text.slice(0, 200)
    try { why = JSON.parse(text).error?.details ?? why } catch {}
    // a 402 says why in its PAYMENT-REQUIRED header
    try { if (r.statusCode === 402) why = JSON.parse(Buffer.from(r.headers['payment-required'], 'base64').toString()).error ?? why } catch {}
    error(op, `${r.statusCode} ${why}`)
    return false
  }

  const samples = []
  const sampleOnce = async (phase) => {
    const s = state.serve
    if (s == null) return
    const st = procStatus(s.pid)
    let metrics = ''
    try { metrics = (await adminGet(join(dataDir, 'admin.sock'), '/metrics')).body } catch {}
    let ledgerBytes = NaN
    try { ledgerBytes = statSync(join(dataDir, 'ledger.mdb')).size } catch {}
    const blocks = dirUsage(join(dataDir, 'blocks'))
    const row = {
      t: Math.round((performance.now() - state.t0) / 1000),
      phase,
      pid: s.pid,
      rss: st.rss,
      anon: st.anon,
      file: st.file,
      ledgerMapped: mappedRss(s.pid, LEDGER_FILES),
      smallBlocksMapped: mappedRss(s.pid, SMALL_BLOCKS_FILE),
      heapUsed: metricValue(metrics, 'pind_nodejs_heap_size_used_bytes'),
      heapTotal: metricValue(metrics, 'pind_nodejs_heap_size_total_bytes'),
      external: metricValue(metrics, 'pind_nodejs_external_memory_bytes'),
      arrayBuffers: metricValue(metrics, 'pind_nodejs_array_buffers_bytes'),
      fds: fdCount(s.pid),
      ledgerBytes,
      blocksBytes: blocks.bytes,
      blocksFiles: blocks.files,
      requests: state.requests,
      errors: state.errorCount,
      /** the machine's 1-minute load average (the soak shares its cores with whatever else runs) */
      load1: loadavg()[0],
      /** response bytes queued in user space (the send budget's use) and upload chunk buffers held: two holders of the transient buffers (the peaks) */
      sendBudget: metricValue(metrics, 'pind_http_send_budget_bytes'),
      chunkBuffers: metricValue(metrics, 'pind_upload_chunk_buffers'),
      /** V8's malloc'd memory outside its heap (compiler and parser zones), now and its peak since serve started */
      v8Malloced: metricValue(metrics, 'pind_nodejs_v8_malloced_bytes'),
      v8PeakMalloced: metricValue(metrics, 'pind_nodejs_v8_peak_malloced_bytes')
    }
    samples.push(row)
    const m = (x) => Number.isFinite(x) ? (x / MiB).toFixed(1) : ''
    appendFileSync(csvPath, [row.t, row.phase, row.pid, m(row.rss), m(row.anon), m(row.file), m(row.heapUsed), m(row.heapTotal), m(row.external), m(row.arrayBuffers), row.fds, m(row.ledgerBytes), m(row.blocksBytes), row.blocksFiles, row.requests, row.errors, row.load1.toFixed(2), m(row.sendBudget), Number.isFinite(row.chunkBuffers) ? row.chunkBuffers : '', m(row.ledgerMapped), m(row.v8Malloced), m(row.v8PeakMalloced), m(row.smallBlocksMapped)].join(',') + '\n')
    return row
  }

  try {
    const chainHome = join(work, 'anvil-cache')
    chain = await startDevChain({ payers: clients, pruneHistory, cachePath: chainHome })
    origin = await startPeer({ blocksDir: join(work, 'origin') })
    const originFs = unixfs(origin.helia)
    writeFileSync(csvPath, 't_s,phase,pid,rss_mib,rss_anon_mib,rss_file_mib,heap_used_mib,heap_total_mib,external_mib,array_buffers_mib,fds,ledger_mib,blocks_mib,blocks_files,requests,errors,load1,send_budget_mib,chunk_buffers,ledger_rss_mib,v8_malloced_mib,v8_peak_malloced_mib,small_blocks_rss_mib\n')
    state.restartGraceUntil = 0
    for (let i = 0; i < frontEnds; i++) state.serves[i] = await serve(i)
    const payTo0 = await usdcBalance(chain, chain.payTo)
    const balances0 = await Promise.all(chain.payers.map(p => usdcBalance(chain, p.address)))
    log(`soak: ${minutes} min, ${clients} paying clients, ${quoteClients} quote clients, restart ${restart ? `at ${Math.round(restartAt * 100)}%` : 'off'}; pid ${state.serve.pid} up in ${state.serve.startMs.toFixed(0)} ms; CSV ${csvPath}`)
    log(`runtime: ${Object.keys(runtimeEnv).length === 0 ? 'bare (no production environment)' : Object.entries(runtimeEnv).map(([k, v]) => `${k}=${v}`).join(' ')}`)

    state.t0 = performance.now()
    const idleStart = await sampleOnce('idle-start')
    const endAt = state.t0 + durationS * 1000
    const loadOver = () => performance.now() >= endAt || state.stopping || signal?.aborted === true

    /** CIDs on the origin that quote clients ask prices for */
    const originCids = []

    // ---- paying clients ----
    const payers = chain.payers.map((p, i) => {
      const x = x402Client.fromConfig({
        schemes: [{ network: 'eip155:167000', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(p.privateKey))) }],
        spendControls: { allowedAssets: [{ network: 'eip155:167000', asset: chain.usdc }] }
      })
      return { i, address: p.address.toLowerCase(), xff: `10.71.${i >> 8}.${i & 255}`, x, http: new x402HTTPClient(x), token: undefined, writes: [] }
    })
    const allWrites = []
    /** the PAYMENT-SIGNATURE header (as a headers object) for a 402 */
  const sign = async (c, r) => {
      const text = await r.body.text()
      const required = c.http.getPaymentRequiredResponse(n => r.headers[n.toLowerCase()], text === '' ? undefined : JSON.parse(text))
      return c.http.encodePaymentSignatureHeader(await c.x.createPaymentPayload(required))
    }
    /** what the client holds: not deleted, and not a pin the service reported failed (an error of its own) */
    const live = (c) => c.writes.filter(w => !w.deleted && !w.failed)

    const doUpload = (c) => timed('upload', async () => {
      const size = logUniform(1000, maxUploadBytes)
      const key = randomBytes(16)
      const headers = { 'x-upload-size': String(size), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }
      const unpaid = await call('upload', c.xff, '/upload', { method: 'POST', headers, body: () => '--x--\r\n' })
      if (unpaid.statusCode !== 402) { await expect('upload', unpaid, 402); return }
      const payment = await sign(c, unpaid)
      let hash
      const paid = await call('upload', c.xff, '/upload', {
        method: 'POST',
        headers: { ...headers, ...payment, 'content-length': String(HEAD.length + size + TAIL.length) },
        body: () => {
          hash = createHash('sha256')
          return (async function * () { yield HEAD; yield * contentStream(key, size, hash); yield TAIL })()
        }
      })
      if (paid.statusCode !== 201 && paid.statusCode !== 200) { await expect('upload', paid, 201); return }
      const body = await paid.body.json()
      c.token = paid.headers['x-wallet-auth-token'] ?? c.token
      const w = { kind: 'upload', client: c.i, payer: c.address, requestid: body.requestid, cid: body.cid, key, size, sha256: hash.digest('hex'), amount: BigInt(body.price.amount), pinned: true, deleted: false }
      if (body.size !== size) error('upload', `size ${body.size}, sent ${size}`)
      c.writes.push(w)
      allWrites.push(w)
      state.uploadedBytes += size
    })

    const doPin = (c) => timed('pin', async () => {
      const size = logUniform(1000, maxPinBytes)
      const key = randomBytes(16)
      const hash = createHash('sha256')
      const cid = (await originFs.addByteStream(contentStream(key, size, hash), { cidVersion: 1, rawLeaves: true })).toString()
      originCids.push(cid)
      if (originCids.length > 200) originCids.shift()
      const body = () => JSON.stringify({ cid, name: `soak-${c.i}`, origins: origin.multiaddrs() })
      // the size a client that made the DAG knows: under heavy load the service's probe of the root may not
      // answer in time, and a quote without a size is the minimum price, too little for a larger DAG
      const dagSize = (await originFs.stat(CID.parse(cid), { extended: true })).dagSize
      const headers = { 'content-type': 'application/json', 'x-pin-size': String(dagSize) }
      const unpaid = await call('pin', c.xff, '/pins', { method: 'POST', headers, body })
      if (unpaid.statusCode !== 402) { await expect('pin', unpaid, 402); return }
      const payment = await sign(c, unpaid)
      const paid = await call('pin', c.xff, '/pins', { method: 'POST', headers: { ...headers, ...payment }, body })
      if (paid.statusCode !== 202 && paid.statusCode !== 200) { await expect('pin', paid, 202); return }
      const st = await paid.body.json()
      c.token = paid.headers['x-wallet-auth-token'] ?? c.token
      const w = { kind: 'pin', client: c.i, payer: c.address, requestid: st.requestid, cid, key, size, sha256: hash.digest('hex'), amount: BigInt(st.info.amount_paid), pinned: st.status === 'pinned', deleted: false }
      c.writes.push(w)
      allWrites.push(w)
    })

    /** GET /ipfs/{cid} whole, hash-checked; true when it matches */
    const readWhole = async (op, c, w) => {
      const r = await call(op, c.xff, `/ipfs/${w.cid}`)
      if (!await expect(op, r, 200)) return false
      const h = createHash('sha256')
      let n = 0
      for await (const chunk of r.body) { h.update(chunk); n += chunk.length }
      const ok = n === w.size && h.digest('hex') === w.sha256
      if (!ok) error(op, `${w.kind} ${w.cid}: read ${n} bytes that do not match the ${w.size} sent`)
      return ok
    }

    const doRead = (c) => timed('read', async () => {
      const w = pick(live(c).filter(x => x.pinned))
      if (w != null) await readWhole('read', c, w)
    })

    const doRange = (c) => timed('range', async () => {
      const w = pick(live(c).filter(x => x.pinned && x.size > 1))
      if (w == null) return
      const len = Math.max(1, Math.min(w.size - 1, logUniform(1, MiB)))
      const start = Math.floor(Math.random() * (w.size - len + 1))
      const r = await call('range', c.xff, `/ipfs/${w.cid}`, { headers: { range: `bytes=${start}-${start + len - 1}` } })
      if (!await expect('range', r, 206)) return
      const got = Buffer.from(await r.body.arrayBuffer())
      if (!got.equals(contentAt(w.key, start, len))) error('range', `${w.cid} bytes ${start}-${start + len - 1}: ${got.length} bytes that do not match`)
    })

    const doList = (c) => timed('list', async () => {
      if (c.token == null) return
      const r = await call('list', c.xff, '/pins?status=queued,pinning,pinned&limit=10', { headers: { authorization: `Bearer ${c.token}` } })
      if (!await expect('list', r, 200)) return
      const body = await r.body.json()
      const want = live(c).length
      if (body.count !== want) error('list', `count ${body.count}, the client holds ${want}`)
      if (body.results.length !== Math.min(10, want)) error('list', `${body.results.length} results for a count of ${body.count}`)
    })

    const doStatus = (c) => timed('status', async () => {
      const w = pick(live(c).filter(x => !x.pinned)) ?? pick(live(c))
      if (w == null) return
      const r = await call('status', c.xff, `/pins/${w.requestid}`, { headers: { authorization: `Bearer ${c.token}` } })
      if (!await expect('status', r, 200)) return
      const st = await r.body.json()
      if (st.status === 'pinned') w.pinned = true
      else if (st.status === 'failed') { w.failed = true; error('status', `pin ${w.requestid} failed: ${st.info?.status_details}`) }
    })

    /** reads a pinned write back whole, then deletes it */
    const doDelete = (c) => timed('delete', async () => {
      const w = pick(live(c).filter(x => x.pinned))
      if (w == null) return
      if (!await readWhole('delete', c, w)) return
      w.verifiedBeforeDelete = true
      const r = await call('delete', c.xff, `/pins/${w.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${c.token}` } })
      if (!await expect('delete', r, 202)) return
      await r.body.dump()
      w.deleted = true
    })

    const ops = { upload: doUpload, pin: doPin, read: doRead, range: doRange, list: doList, status: doStatus, delete: doDelete }
    const totalWeight = MIX.reduce((a, [, w]) => a + w, 0)
    /** every client starts with one of each (so even a short run covers them all), then draws from MIX */
    const FIRST = ['upload', 'pin', 'read', 'range', 'list', 'status']
    const payingLoop = async (c) => {
      for (let n = 0; !loadOver(); n++) {
        let op
        if (c.writes.length === 0) op = 'upload'
        else if (n < FIRST.length) op = FIRST[n]
        else if (live(c).length >= maxLive) op = 'delete'
        else {
          let x = Math.random() * totalWeight
          op = MIX.find(([, w]) => (x -= w) < 0)?.[0] ?? 'upload'
        }
        // an operation with nothing to work on: reads and deletes need a pinned write, status and list a live one
        const pinned = live(c).some(w => w.pinned)
        if ((op === 'read' || op === 'range' || op === 'delete') && !pinned) op = live(c).length > 0 ? 'status' : 'upload'
        if ((op === 'status' || op === 'list') && live(c).length === 0) op = 'upload'
        await ops[op](c)
        // a turn of the event loop between operations (one that resolves at once must not starve the timers)
        await new Promise(resolve => setImmediate(resolve))
      }
    }

    // ---- quote clients ----
    const quoteLoop = async (i) => {
      const xff = `10.72.${i >> 8}.${i & 255}`
      while (!loadOver()) {
        const t0 = performance.now()
        await timed('quote', async () => {
          const cid = Math.random() < 0.3 ? pick(originCids) : undefined
          const r = cid != null
            ? await call('quote', xff, '/pins', { method: 'POST', headers: { 'content-type': 'application/json' }, body: () => JSON.stringify({ cid, origins: origin.multiaddrs() }) })
            : await call('quote', xff, '/upload', { method: 'POST', headers: { 'x-upload-size': String(logUniform(1000, 100_000_000)), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: () => '--x--\r\n' })
          if (!await expect('quote', r, 402)) return
          await r.body.dump()
          if (r.headers['payment-required'] == null) error('quote', '402 without PAYMENT-REQUIRED')
        })
        await sleep(Math.max(0, 60_000 / QUOTES_PER_MINUTE - (performance.now() - t0)))
      }
    }

    // ---- sampler, gc, restart ----
    let sampling = true
    const sampler = (async () => {
      while (sampling) {
        await sleep(sampleMs)
        if (sampling && !state.restarting) await sampleOnce(loadOver() ? 'idle' : 'load')
      }
    })()
    let gcRuns = 0
    const gcLoop = (async () => {
      if (!(gcEverySeconds > 0)) return
      while (!loadOver()) {
        const next = performance.now() + gcEverySeconds * 1000
        while (!loadOver() && performance.now() < next) await sleep(200)
        if (loadOver() || state.restarting) continue
        try {
          await command('gc', '--json')
          gcRuns++
        } catch (err) { if (!state.restarting) error('gc', err.message.slice(0, 300)) }
      }
    })()
    const restartInfo = {}
    const restarter = (async () => {
      if (!restart) return
      while (performance.now() < state.t0 + restartAt * durationS * 1000) {
        if (loadOver()) return
        await sleep(100)
      }
      const old = state.serve
      state.restarting = true
      await sampleOnce('load')
      const t0 = performance.now()
      old.p.kill('SIGTERM')
      const code = await old.exit
      restartInfo.drainMs = performance.now() - t0
      restartInfo.exit = code
      if (code !== 0) error('restart', `serve exited ${code} on SIGTERM`)
      state.serves[0] = await serve()
      restartInfo.startMs = state.serve.startMs
      restartInfo.downMs = performance.now() - t0
      // connections cut during the switch may still surface for a moment
      state.restartGraceUntil = Date.now() + 2000
      state.restarting = false
      log(`restart: SIGTERM → exit ${restartInfo.drainMs.toFixed(0)} ms, start → /health 200 ${restartInfo.startMs.toFixed(0)} ms (pid ${state.serve.pid})`)
    })()

    const progress = setInterval(() => {
      const s = samples[samples.length - 1]
      if (s != null) log(`t=${s.t}s rss ${(s.rss / MiB).toFixed(0)} MiB (anon ${(s.anon / MiB).toFixed(0)}), heap ${(s.heapUsed / MiB).toFixed(0)} MiB, external ${(s.external / MiB).toFixed(0)} MiB, fds ${s.fds}; ${state.requests} requests, ${state.errorCount} errors`)
    }, Math.max(sampleMs, 60_000))
    await Promise.all([...payers.map(payingLoop), ...Array.from({ length: quoteClients }, (_, i) => quoteLoop(i)), restarter, gcLoop])
    const loadSeconds = (performance.now() - state.t0) / 1000
    clearInterval(progress)
    signal?.throwIfAborted()

    // ---- idle ----
    const idleUntil = performance.now() + idleSeconds * 1000
    while (performance.now() < idleUntil) { signal?.throwIfAborted(); await sleep(200) }
    sampling = false
    await sampler
    const idleEnd = await sampleOnce('idle-end')

    // ---- verification ----
    const requestsUnderLoad = state.requests
    const verify = { live: 0, verified: 0, deleted: 0, deletedGone: 0, deletedVerifiedBefore: 0, failures: [] }
    const vfail = (what) => { if (verify.failures.length < 100) verify.failures.push(what) }
    const liveWrites = allWrites.filter(w => !w.deleted)
    const deadline = Date.now() + 5 * 60_000
    for (const w of liveWrites.filter(x => !x.pinned)) {
      const c = payers[w.client]
      for (;;) {
        const r = await call('status', c.xff, `/pins/${w.requestid}`, { headers: { authorization: `Bearer ${c.token}` } })
        const st = r.statusCode === 200 ? await r.body.json() : (await r.body.dump(), undefined)
        if (st?.status === 'pinned') { w.pinned = true; break }
        if (st == null || st.status === 'failed' || Date.now() > deadline) { vfail(`pin ${w.requestid} is ${st?.status ?? r.statusCode}: ${st?.info?.status_details ?? ''}`); break }
        await sleep(200)
      }
    }
    // through each front end in turn
    for (let fe = 0; fe < frontEnds; fe++) {
      if (frontEnds > 1) state.through = fe
      const queue = [...liveWrites]
      await Promise.all(Array.from({ length: 4 }, async () => {
        for (let w = queue.shift(); w != null; w = queue.shift()) {
          if (fe === 0) verify.live++
          const before = state.errorCount
          if (w.pinned && await readWhole('verify', payers[w.client], w)) { if (fe === 0) verify.verified++ } else vfail(`${w.kind} ${w.cid} (${w.requestid}) did not read back${frontEnds > 1 ? ` through front end ${fe + 1}` : ''}: ${state.errors.slice(before).join('; ').slice(0, 300)}`)
        }
      }))
    }
    for (const w of allWrites.filter(x => x.deleted)) {
      verify.deleted++
      if (w.verifiedBeforeDelete) verify.deletedVerifiedBefore++
      const c = payers[w.client]
      const r = await call('verify', c.xff, `/pins/${w.requestid}`, { headers: { authorization: `Bearer ${c.token}` } })
      await r.body.dump()
      if (r.statusCode === 404) verify.deletedGone++
      else vfail(`deleted pin ${w.requestid} answers ${r.statusCode}`)
    }
    state.through = undefined

    // ---- money ----
    const exported = (await command('export-ledger', '--records', 'payments')).trim().split('\n').map(l => JSON.parse(l)).filter(l => l.type === 'payment')
    const byPayment = new Map(exported.map(p => [p.requestid, p]))
    const ledgerByPayer = new Map()
    for (const p of exported) ledgerByPayer.set(p.payer.toLowerCase(), (ledgerByPayer.get(p.payer.toLowerCase()) ?? 0n) + BigInt(p.amount))
    const money = { payers: clients, reconciled: 0, charged: 0n, chainDelta: 0n, payToDelta: 0n, settledUnacknowledged: 0, mismatches: [] }
    for (const w of allWrites) {
      const p = byPayment.get(w.requestid)
      if (p == null) money.mismatches.push(`${w.kind} ${w.requestid}: acknowledged, no payment in the ledger`)
      else if (BigInt(p.amount) !== w.amount) money.mismatches.push(`${w.kind} ${w.requestid}: acknowledged at ${w.amount}, ledger says ${p.amount}`)
    }
    const acked = new Set(allWrites.map(w => w.requestid))
    money.settledUnacknowledged = exported.filter(p => !acked.has(p.requestid)).length
    const balances1 = await Promise.all(chain.payers.map(p => usdcBalance(chain, p.address)))
    chain.payers.forEach((p, i) => {
      const delta = balances0[i] - balances1[i]
      const charged = ledgerByPayer.get(p.address.toLowerCase()) ?? 0n
      money.charged += charged
      money.chainDelta += delta
      if (delta === charged) money.reconciled++
      else money.mismatches.push(`payer ${p.address}: balance fell by ${delta}, the ledger charged ${charged}`)
    })
    money.payToDelta = (await usdcBalance(chain, chain.payTo)) - payTo0
    if (money.payToDelta !== money.charged) money.mismatches.push(`payee received ${money.payToDelta}, the ledger charged ${money.charged}`)

    // ---- the ledger's bytes, by sub-database (serve stopped: the ledger is read on its own) ----
    for (const last of state.serves) {
      last.p.kill('SIGTERM')
      if (await last.exit !== 0) error('stop', 'serve did not exit 0 on SIGTERM')
    }
    const ledgerSt = database == null ? ledgerStats(dataDir) : undefined
    const ledger = ledgerSt == null ? { lines: [] } : {
      pageSize: ledgerSt.pageSize,
      fileBytes: ledgerSt.fileBytes,
      freePages: ledgerSt.freePages,
      /** bytes (whole pages) per acknowledged paid write, by sub-database; '(free pages)' are freed and not yet reused, 'file' is ledger.mdb */
      bytesPerPaidWrite: Object.fromEntries([
        ...Object.entries(ledgerSt.dbs).map(([name, d]) => [name, d.bytes / Math.max(1, allWrites.length)]),
        ['(free pages)', ledgerSt.freePages * ledgerSt.pageSize / Math.max(1, allWrites.length)],
        ['file', ledgerSt.fileBytes / Math.max(1, allWrites.length)]
      ]),
      dbs: ledgerSt.dbs,
      lines: formatLedgerStats(ledgerSt, allWrites.length)
    }

    // ---- summary ----
    const stats = Object.fromEntries(OPS.filter(o => state.counts[o] > 0).map(o => [o, {
      n: state.counts[o], p50Ms: percentile(state.lat[o], 0.5), p99Ms: percentile(state.lat[o], 0.99)
    }]))
    const loadSamples = samples.filter(s => s.phase === 'load')
    const max = (k) => Math.max(...samples.map(s => s[k]).filter(Number.isFinite))
    const memory = {
      ...memoryVerdict(samples, loadSeconds),
      idleStartRssMiB: idleStart.rss / MiB,
      idleEndRssMiB: idleEnd.rss / MiB,
      idleEndAnonMiB: idleEnd.anon / MiB,
      idleStartAnonMiB: idleStart.anon / MiB,
      /** the ledger's pages mapped into serve: its data, grown by the run's writes (lmdb maps the file; see README "Soak") */
      idleStartLedgerMappedMiB: idleStart.ledgerMapped / MiB,
      idleEndLedgerMappedMiB: idleEnd.ledgerMapped / MiB,
      /** the packed small blocks' pages mapped into serve (blocks/small.mdb, as reads touched them) */
      maxSmallBlocksMappedMiB: max('smallBlocksMapped') / MiB,
      idleEndSmallBlocksMappedMiB: idleEnd.smallBlocksMapped / MiB,
      maxRssMiB: max('rss') / MiB,
      maxHeapUsedMiB: max('heapUsed') / MiB,
      maxExternalMiB: max('external') / MiB,
      maxArrayBuffersMiB: max('arrayBuffers') / MiB,
      /** the most V8 held in malloc'd memory outside its heap (compiler and parser zones) since either serve process started (start-up's parse of the bundle included), and the most a sample saw */
      maxV8PeakMallocedMiB: max('v8PeakMalloced') / MiB,
      maxV8MallocedMiB: max('v8Malloced') / MiB,
      fds: { start: idleStart.fds, max: max('fds'), end: idleEnd.fds },
      ledgerMiB: idleEnd.ledgerBytes / MiB,
      blocksMiB: idleEnd.blocksBytes / MiB,
      samples: samples.length,
      loadSamples: loadSamples.length,
      /** the machine's 1-minute load average over the loaded phase (2 cores: above 2 means the soak waited for CPU) */
      loadAvg: { mean: loadSamples.reduce((a, s) => a + s.load1, 0) / Math.max(1, loadSamples.length), max: Math.max(0, ...loadSamples.map(s => s.load1)) }
    }
    memory.idleEndVsStartPct = (memory.idleEndRssMiB / memory.idleStartRssMiB - 1) * 100
    memory.idleEndVsStartWithoutLedgerPct = ((memory.idleEndRssMiB - memory.idleEndLedgerMappedMiB) / (memory.idleStartRssMiB - memory.idleStartLedgerMappedMiB) - 1) * 100
    const statuses5xx = Object.entries(state.statuses).filter(([k]) => / 5\d\d$/.test(k)).reduce((a, [, n]) => a + n, 0)
    const summary = {
      minutes, clients, quoteClients, loadSeconds,
      requests: requestsUnderLoad,
      requestsPerSecond: requestsUnderLoad / loadSeconds,
      paidWrites: allWrites.length,
      uploadedBytes: state.uploadedBytes,
      ops: stats,
      statuses: state.statuses,
      errors: state.errorCount,
      errorSamples: state.errors.slice(0, 50),
      http5xx: statuses5xx,
      retries: state.retries,
      gcRuns,
      restart: restart ? restartInfo : null,
      writes: { acknowledged: allWrites.length, ...verify, ok: verify.failures.length === 0 && verify.verified === verify.live && verify.deletedGone === verify.deleted },
      money: { ...money, charged: String(money.charged), chainDelta: String(money.chainDelta), payToDelta: String(money.payToDelta), ok: money.mismatches.length === 0 && money.reconciled === clients },
      memory,
      ledger,
      serviceLog: state.serviceLog,
      samples,
      csv: csvPath
    }
    printSummary(summary, log)
    if (csv == null) summary.csv = null // the temp dir goes
    return summary
  } finally {
    state.stopping = true
    for (const p of procs) { try { p.kill('SIGKILL') } catch {} }
    await Promise.all([...procs].map(p => new Promise(resolve => { if (p.exitCode != null || p.signalCode != null) resolve(); else p.on('exit', resolve) })))
    await agent.close().catch(() => {})
    await origin?.stop().catch(() => {})
    await chain?.stop()
    rmSync(work, { recursive: true, force: true })
  }
}

function printSummary (s, log) {
  const f0 = (x) => Number.isFinite(x) ? x.toFixed(0) : '-'
  log(`load: ${s.loadSeconds.toFixed(0)} s, ${s.requests} requests (${s.requestsPerSecond.toFixed(1)} req/s), ${s.paidWrites} paid writes acknowledged (${(s.uploadedBytes / 1e9).toFixed(2)} GB uploaded), ${s.gcRuns} gc runs`)
  log(`errors: ${s.errors}; 5xx: ${s.http5xx}; retried: ${s.retries.connection} connections during the restart, ${s.retries.throttled} 429, ${s.retries.busy} 503 (Retry-After honoured)`)
  for (const e of s.errorSamples.slice(0, 10)) log(`  ${e}`)
  log('operation        n     p50 ms    p99 ms')
  for (const [op, st] of Object.entries(s.ops)) log(`${op.padEnd(10)} ${String(st.n).padStart(7)} ${f0(st.p50Ms).padStart(10)} ${f0(st.p99Ms).padStart(9)}`)
  if (s.restart != null) log(`restart: SIGTERM → exit ${f0(s.restart.drainMs)} ms, start → /health 200 ${f0(s.restart.startMs)} ms, down ${f0(s.restart.downMs)} ms`)
  const w = s.writes
  log(`writes: ${w.acknowledged} acknowledged; ${w.verified}/${w.live} live ones read back byte for byte; ${w.deletedGone}/${w.deleted} deleted ones gone (${w.deletedVerifiedBefore} read back before the delete)${w.ok ? '' : ' — FAILED'}`)
  for (const x of w.failures.slice(0, 10)) log(`  ${x}`)
  const m = s.money
  log(`money: ${m.reconciled}/${m.payers} payers' balance changes equal what the ledger charged them (${m.charged} atomic units; payee received ${m.payToDelta}); ${m.settledUnacknowledged} settled write(s) the client never saw acknowledged${m.ok ? '' : ' — FAILED'}`)
  for (const x of m.mismatches.slice(0, 10)) log(`  ${x}`)
  const mem = s.memory
  log(`memory: RSS idle ${f0(mem.idleStartRssMiB)} MiB at start, max ${f0(mem.maxRssMiB)} MiB, idle ${f0(mem.idleEndRssMiB)} MiB after the load (${mem.idleEndVsStartPct >= 0 ? '+' : ''}${f0(mem.idleEndVsStartPct)}%, anonymous ${f0(mem.idleEndAnonMiB)} vs ${f0(mem.idleStartAnonMiB)} MiB, the ledger's mapped pages ${f0(mem.idleEndLedgerMappedMiB)} vs ${f0(mem.idleStartLedgerMappedMiB)} MiB: ${mem.idleEndVsStartWithoutLedgerPct >= 0 ? '+' : ''}${f0(mem.idleEndVsStartWithoutLedgerPct)}% without them); heap used max ${f0(mem.maxHeapUsedMiB)} MiB, external max ${f0(mem.maxExternalMiB)} MiB (ArrayBuffers ${f0(mem.maxArrayBuffersMiB)}), V8's malloc'd peak ${f0(mem.maxV8PeakMallocedMiB)} MiB (start-up's included), max ${f0(mem.maxV8MallocedMiB)} MiB in a sample; fds ${mem.fds.start} → max ${mem.fds.max} → ${mem.fds.end}; ledger ${f0(mem.ledgerMiB)} MiB, blocks ${f0(mem.blocksMiB)} MiB; small blocks' mapped pages max ${f0(mem.maxSmallBlocksMappedMiB)} MiB, ${f0(mem.idleEndSmallBlocksMappedMiB)} MiB idle after the load`)
  log(`machine load average under load: mean ${mem.loadAvg.mean.toFixed(2)}, max ${mem.loadAvg.max.toFixed(2)}`)
  log(`memory verdict: ${mem.verdict === 'plateau' ? 'plateau' : `growing ${mem.growthPerHourMiB.toFixed(0)} MiB/h`} (linear fit of RSS over the last ${f0(mem.windowS)} s of load: ${mem.growthPerHourMiB >= 0 ? '+' : ''}${mem.growthPerHourMiB.toFixed(1)} MiB/h, ${mem.growthPct.toFixed(1)}% of ${f0(mem.meanRssMiB)} MiB over the window)`)
  for (const l of s.ledger.lines) log(l)
  if (s.serviceLog.errors > 0) log(`service logged ${s.serviceLog.errors} error(s), ${s.serviceLog.warnings} warning(s); last: ${s.serviceLog.last.slice(-3).join(' | ')}`)
  if (s.csv != null) log(`samples: ${s.csv}`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const opt = (name) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : undefined }
  const positional = args.filter((a, i) => /^\d+(\.\d+)?$/.test(a) && !args[i - 1]?.startsWith('--'))
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')
  const env = Object.fromEntries((process.env.SOAK_ENV ?? '').split(/\s+(?=[A-Za-z_][A-Za-z0-9_]*=)/).filter(Boolean).map(kv => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]))
  // Ctrl-C: stop the load and clean up (pind, anvil, the origin, the temp dirs); a second one exits at once
  const interrupt = new AbortController()
  process.once('SIGINT', () => { interrupt.abort(new Error('interrupted')); process.once('SIGINT', () => process.exit(130)) })
  process.once('SIGTERM', () => { interrupt.abort(new Error('terminated')) })
  // several front ends share a throwaway PostgreSQL and a bucket of a throwaway Ceph RADOS Gateway
  const frontEnds = Number(opt('front-ends') ?? 1)
  const s3 = frontEnds > 1 ? await (await import('./s3/index.mjs')).startS3() : undefined
  const pg = frontEnds > 1 ? await (await import('./postgres.mjs')).startPostgres() : undefined
  const blockstore = s3 != null
    ? { args: ['--blockstore', 's3', '--s3-endpoint', s3.endpoint, '--s3-bucket', await s3.createBucket(`soak-${Date.now()}`), '--s3-force-path-style'], env: s3.env() }
    : undefined
  const summary = await runSoak({
    signal: interrupt.signal,
    frontEnds,
    ...(pg != null ? { database: pg.url } : {}),
    ...(blockstore != null ? { blockstore } : {}),
    ...(opt('binary') != null ? { binary: resolve(opt('binary')) } : {}),
    minutes: Number(positional[0] ?? 30),
    clients: Number(positional[1] ?? 16),
    ...(opt('quote-clients') != null ? { quoteClients: Number(opt('quote-clients')) } : {}),
    ...(opt('restart-at') != null ? { restartAt: Number(opt('restart-at')) } : {}),
    ...(opt('idle') != null ? { idleSeconds: Number(opt('idle')) } : {}),
    ...(opt('max-live') != null ? { maxLive: Number(opt('max-live')) } : {}),
    ...(opt('gc-every') != null ? { gcEverySeconds: Number(opt('gc-every')) } : {}),
    ...(opt('sample-every') != null ? { sampleMs: Number(opt('sample-every')) * 1000 } : {}),
    restart: !args.includes('--no-restart'),
    pruneHistory: !args.includes('--keep-history'),
    bundle: args.includes('--bundle'),
    ...(args.includes('--bare-runtime') ? { runtimeEnv: {} } : {}),
    csv: resolve(opt('csv') ?? `soak-${stamp}.csv`),
    env
  }).finally(async () => {
    if (pg != null) await (await import('./postgres.mjs')).stopPostgres({ dir: pg.dir, remove: true })
    await s3?.stop()
  })
  if (opt('json') != null) writeFileSync(opt('json'), JSON.stringify(summary, (_, v) => typeof v === 'bigint' ? String(v) : v, 2))
  process.exitCode = summary.writes.ok && summary.money.ok && summary.errors === 0 ? 0 : 1
}
