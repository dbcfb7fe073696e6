#!/usr/bin/env node
/**
 * `pind export-ledger` on a stopped data dir holding N pins and N payments
 * (default 1,000,000 of each). The ledger is written directly with lmdb in the
 * layout of src/ledger/lmdb/pins.ts (sub-databases pins, pins-by-owner,
 * pins-by-cid, pins-by-expiry, payments; msgpack values; meta schemaVersion 1),
 * 100,000 pins per transaction (random requestids, as in a real ledger): 1,000 owners, ~2% removed, ~1% failed.
 *
 * Then times, each as a child process (spawn → exit) with its peak RSS and
 * its anonymous / file-backed parts (see run()):
 *   - the ledger's one-time upgrade at its first open (`pind status`): the
 *     records are written as older versions wrote them, and rewritten compact
 *   - the same export of a 1,000-pin ledger (the baseline RSS of the process)
 *   - JSON Lines, pins and payments, to a file
 *   - CSV pins, CSV payments, to a file
 *   - JSON Lines through a running serve on the same data dir (the client's
 *     figures, and serve's RSS before and after)
 *   - import-ledger of the JSON Lines export into a new data dir (skip: --no-import)
 * and checks the line/row counts of what was written.
 *
 * Usage: node scripts/bench-export.mjs [pins=1000000] [--binary] [--no-import] [--keep]
 *   (default runs the bundle: node dist/pind.cjs; --binary runs dist/pind)
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createReadStream, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { BINARY, ROOT } from './bench-lib.mjs'
import { isoMicros, openBenchLedger } from './bench-ledger.mjs'

const N = Number(process.argv.slice(2).find(a => /^\d+$/.test(a)) ?? 1_000_000)
const useBinary = process.argv.includes('--binary')
const doImport = !process.argv.includes('--no-import')
const keep = process.argv.includes('--keep')
const [bin, binArgs] = useBinary ? [BINARY, []] : [process.execPath, [join(ROOT, 'dist/pind.cjs')]]
const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`
const fmt = (n) => n.toLocaleString('en-US')

const tmp = mkdtempSync(join(tmpdir(), 'pind-bench-export-'))

const hex = (n, width) => n.toString(16).padStart(width, '0')
const uuid = (i) => { const h = createHash('sha256').update(`req ${i}`).digest('hex'); return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}` }
const owner = (i) => `0x${createHash('sha256').update(`owner ${i % 1000}`).digest('hex').slice(0, 40)}`
const cidOf = (i) => CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`content ${i}`).digest())).toString()
const iso = isoMicros

/** Writes `count` pins and as many payments in the layout of PinLedger. */
async function buildLedger (dir, count) {
  const ledger = await openBenchLedger(dir)
  const start = Date.parse('2025-01-01T00:00:00Z') * 1000
  const BATCH = 100_000
  for (let from = 0; from < count; from += BATCH) {
    ledger.batch(() => {
      for (let i = from; i < Math.min(count, from + BATCH); i++) {
        const requestid = uuid(i)
        const createdUs = start + i * 1_000_017 // ~1 s apart, unique, sub-ms digits
        const created = iso(createdUs)
        const who = owner(i)
        const cid = cidOf(i)
        const months = 1 + (i % 12)
        const pinnedUntil = new Date(Date.parse('2027-01-01T00:00:00Z') + i * 1000).toISOString()
        const paymentId = `${who}:0x${createHash('sha256').update(`nonce ${i}`).digest('hex')}`
        const tx = `0x${createHash('sha256').update(`tx ${i}`).digest('hex')}`
        const amount = String(1000 + (i % 50_000))
        const failed = i % 100 === 7
        const pin = {
          requestid, owner: who, cid, name: `file-${hex(i, 8)}.bin`, origins: [], meta: { app: 'bench', shard: String(i % 100) },
          status: failed ? 'failed' : 'pinned', statusDetails: failed ? 'failed: the DAG is larger than the 1000000 bytes paid for; nothing was kept' : 'pinned: 5 blocks, 4194304 bytes',
          created, createdUs, months, pinnedUntil, dagSize: 4_194_304 + (i % 4096), fileSize: 4_194_304, maxBytes: 10_000_000_000, source: i % 3 === 0 ? 'upload' : 'pin',
          payment: { id: paymentId, payer: who, amount, network: 'eip155:167000', asset: '0x07d83526730c7438048D55A4fc0b850e2aaB6f0b', tx, settledAt: created, method: 'x402' },
          ...(i % 50 === 3 ? { removed: { at: pinnedUntil, why: 'unpinned' } } : {})
        }
        ledger.putPin(pin)
        ledger.putPayment({ id: paymentId, requestid, purpose: `pin:${cid}`, payer: who, amount, network: 'eip155:167000', tx, at: created, proof: createHash('sha256').update(`proof ${i}`).digest('hex') })
      }
    })
  }
  await ledger.close()
}

/**
 * Runs a pind subcommand to its exit: wall ms and memory, polled from
 * /proc/<pid>/status every 5 ms: peak RSS (VmHWM) and the largest anonymous
 * (heap, stacks) and file-backed (LMDB's memory map, code) parts seen. The
 * ledger is memory-mapped, so pages of it that were read count in RSS as
 * file-backed memory the kernel can drop; the anonymous part is what the
 * process itself holds.
 */
function run (args) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const p = spawn(bin, [...binArgs, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PIND_LOG_LEVEL: 'warn' } })
    let out = ''; let err = ''
    const mem = { peakMiB: 0, anonMiB: 0, fileMiB: 0 }
    p.stdout.on('data', b => { out += b })
    p.stderr.on('data', b => { err += b })
    const poll = () => {
      try {
        const status = readFileSync(`/proc/${p.pid}/status`, 'utf8')
        const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024
        if (Number.isFinite(kb('VmHWM'))) mem.peakMiB = Math.max(mem.peakMiB, kb('VmHWM'))
        if (Number.isFinite(kb('RssAnon'))) mem.anonMiB = Math.max(mem.anonMiB, kb('RssAnon'))
        if (Number.isFinite(kb('RssFile'))) mem.fileMiB = Math.max(mem.fileMiB, kb('RssFile'))
      } catch {}
    }
    const timer = setInterval(poll, 5)
    p.on('error', reject)
    p.on('exit', (code) => {
      const ms = performance.now() - t0
      clearInterval(timer)
      if (code !== 0) return reject(new Error(`pind ${args.join(' ')} exited ${code}: ${err}`))
      resolve({ ms, ...mem, out, err })
    })
  })
}

/** Current memory figures of a process, MiB. */
function status (pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(text)?.[1] ?? NaN) / 1024
  return { VmRSS: kb('VmRSS'), RssAnon: kb('RssAnon'), RssFile: kb('RssFile') }
}

/** Counts newline-terminated records of a file (CSV: outside quotes). */
async function countRecords (file, csv) {
  let n = 0; let q = false
  for await (const chunk of createReadStream(file)) {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]
      if (csv && c === 0x22) q = !q
      else if (c === 0x0a && !q) n++
    }
  }
  return n
}

const report = (label, r, file) => {
  const size = file != null ? statSync(file).size : 0
  console.log(`${label.padEnd(34)} ${(r.ms / 1000).toFixed(2).padStart(7)} s   peak RSS ${r.peakMiB.toFixed(0).padStart(4)} MiB (anon ${r.anonMiB.toFixed(0).padStart(3)}, file-backed ${r.fileMiB.toFixed(0).padStart(4)})${file != null ? `   ${mib(size).padStart(10)}   ${(size / 2 ** 20 / (r.ms / 1000)).toFixed(0)} MiB/s` : ''}`)
}

try {
  console.log(`bench-export: ${fmt(N)} pins + ${fmt(N)} payments, ${useBinary ? 'binary dist/pind' : 'bundle dist/pind.cjs'} on Node ${process.version}, memory polled from /proc/<pid>/status`)
  const small = join(tmp, 'small')
  const big = join(tmp, 'big')
  let t = performance.now()
  await buildLedger(small, 1000)
  await buildLedger(big, N)
  console.log(`setup: ledger written directly with lmdb in ${((performance.now() - t) / 1000).toFixed(1)} s, ledger.mdb ${mib(statSync(join(big, 'ledger.mdb')).size)}`)
  // bench-ledger.mjs writes records as older versions did (maps); pind rewrites them once at its first
  // open (PinLedger.upgrade: compact:records and the indexes). Done here, timed on its own, so the
  // exports below read the current layout.
  await run(['status', '--data-dir', small])
  report(`upgrade at first open, ${fmt(N)} pins`, await run(['status', '--data-dir', big]))
  console.log(`  ledger.mdb after the upgrade ${mib(statSync(join(big, 'ledger.mdb')).size)}`)

  const sj = join(tmp, 'small.jsonl')
  report('jsonl, 1,000 pins (baseline)', await run(['export-ledger', '--data-dir', small, '-o', sj]), sj)

  const jsonl = join(tmp, 'ledger.jsonl')
  const rj = await run(['export-ledger', '--data-dir', big, '-o', jsonl, '--json'])
  report(`jsonl, ${fmt(N)} pins + payments`, rj, jsonl)
  const lines = await countRecords(jsonl, false)
  if (lines !== 2 * N + 2) throw new Error(`expected ${2 * N + 2} lines, got ${lines}`)

  const csvPins = join(tmp, 'pins.csv')
  report(`csv pins, ${fmt(N)}`, await run(['export-ledger', '--data-dir', big, '--format', 'csv', '-o', csvPins]), csvPins)
  const rowsP = await countRecords(csvPins, true)
  if (rowsP !== N + 1) throw new Error(`expected ${N + 1} CSV rows, got ${rowsP}`)

  const csvPay = join(tmp, 'payments.csv')
  report(`csv payments, ${fmt(N)}`, await run(['export-ledger', '--data-dir', big, '--format', 'csv', '--records', 'payments', '-o', csvPay]), csvPay)
  const rowsY = await countRecords(csvPay, true)
  if (rowsY !== N + 1) throw new Error(`expected ${N + 1} CSV rows, got ${rowsY}`)

  const filtered = join(tmp, 'filtered.jsonl')
  const rf = await run(['export-ledger', '--data-dir', big, '--status', 'removed', '-o', filtered])
  report('jsonl --status removed (full scan)', rf, filtered)

  // the same export through a running serve (streamed over its admin socket)
  const serve = spawn(bin, [...binArgs, 'serve', '--data-dir', big, '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PIND_LOG_LEVEL: 'warn' } })
  try {
    const deadline = Date.now() + 60_000
    while (!existsSync(join(big, 'admin.sock'))) {
      if (serve.exitCode != null || Date.now() > deadline) throw new Error('pind serve did not start')
      await new Promise(resolve => setTimeout(resolve, 50))
    }
    const before = status(serve.pid)
    const viaServe = join(tmp, 'via-serve.jsonl')
    const rs = await run(['export-ledger', '--data-dir', big, '-o', viaServe])
    const after = status(serve.pid)
    report('jsonl via a running serve (client)', rs, viaServe)
    console.log(`  serve during that export: RSS ${before.VmRSS.toFixed(0)} → ${after.VmRSS.toFixed(0)} MiB (anon ${before.RssAnon.toFixed(0)} → ${after.RssAnon.toFixed(0)}, file-backed ${before.RssFile.toFixed(0)} → ${after.RssFile.toFixed(0)})`)
    if (await countRecords(viaServe, false) !== 2 * N + 2) throw new Error('the export via serve is incomplete')
    rmSync(viaServe)
  } finally {
    const exited = new Promise(resolve => serve.on('exit', resolve))
    serve.kill('SIGTERM')
    await exited
  }

  if (doImport) {
    const dst = join(tmp, 'imported')
    const ri = await run(['import-ledger', jsonl, '--data-dir', dst, '--json'])
    report(`import-ledger, ${fmt(N)} + ${fmt(N)}`, ri)
    const res = JSON.parse(ri.out)
    if (res.pins !== N || res.payments !== N) throw new Error(`import wrote ${res.pins} pins, ${res.payments} payments`)
    console.log(`  (import: check pass + write pass; ${fmt(res.requeued)} pinned pins re-queued as the export had no block lists)`)
  }
  console.log(`summary: ${rj.err.trim()}`)
} finally {
  if (keep) console.log(`kept ${tmp}`)
  else rmSync(tmp, { recursive: true, force: true })
}
