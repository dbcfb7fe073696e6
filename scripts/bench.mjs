#!/usr/bin/env node
/**
 * `npm run bench`: the benchmark summary. Runs the project's benchmark
 * scripts, each as a child process with `--json` (it prints its figures as a last JSON line),
 * at sizes that finish in about 13 minutes in all on a 2-core machine (bench-site alone ~3.5), and prints one line per
 * row: the figure, the baseline measured in the same run, their ratio (figure / baseline), the
 * target and whether it is met; then how many rows met their target and the load average at
 * the start and the end (the figures mean little on a loaded machine: a warning when the
 * 1-minute load average is above 1.5 at the start). Run it before and after a change to a hot
 * path.
 *
 * Every pind the scripts start runs with the production unit's runtime environment
 * (productionRuntimeEnv in scripts/bench-lib.mjs: GLIBC_TUNABLES, NODE_OPTIONS, MALLOC_*,
 * PIND_RUNTIME_* from its Environment= lines), passed as BENCH_SERVE_ENV; the scripts
 * themselves and their baselines run without it. BENCH_SERVE_NODE_OPTIONS is appended to
 * its NODE_OPTIONS.
 *
 * Usage: node scripts/bench.mjs [--only row,row] [--quick] [--binary dist/pind] [--json]
 *          [--env-from scripts/pind.service | --no-production-env] [--verbose]
 *   --only     these rows (names below, comma-separated); the scripts of the others do not run
 *   --quick    tiny sizes (seconds, not minutes): checks that everything runs; figures are noise
 *   --binary   the pind binary to measure (default dist/pind)
 *   --json     the whole table as one JSON document on stdout (progress goes to stderr)
 *   --env-from the systemd unit whose runtime environment pind runs with (default scripts/pind.service)
 *   --no-production-env  pind runs with this process's environment only
 *   --verbose  copy the scripts' own output to stderr
 */
import { spawn } from 'node:child_process'
import { accessSync, constants, existsSync } from 'node:fs'
import { delimiter, join, resolve } from 'node:path'
import { loadavg } from 'node:os'
import { BINARY, productionRuntimeEnv, ROOT } from './bench-lib.mjs'

/**
 * The scripts, with their arguments at full size and with --quick; `rows` read their JSON line.
 * The request rates, the S3 upload and the pin by CID vary most from run to run on a shared 2-core
 * machine (a row read 54-64% of its baseline in four runs of the same binary with 5 slices of 1 s):
 * they take more samples (rates 10 slices of 1 s, S3 3 uploads a side, pins 5), the whole ~6 minutes.
 */
const JOBS = {
  start: { script: 'bench-start.mjs', full: ['5'], quick: ['1'] },
  restart: { script: 'bench-restart.mjs', full: ['--runs', '3', '--load', '1'], quick: ['--runs', '1', '--load', '0.3'] },
  pinsList: { script: 'bench-pins-list.mjs', full: ['--binary'], quick: ['--binary', '--owners', '10', '--per-owner', '100', '--requests', '100', '--pagings', '2'] },
  rates: { script: 'bench-rates.mjs', full: ['--duration', '10', '--rounds', '10'], quick: ['--duration', '0.6', '--warmup', '0.2', '--rounds', '1'] },
  upload: { script: 'bench-upload.mjs', full: ['--runs', '3', '--mb', '100'], quick: ['--runs', '1', '--mb', '2'] },
  gateway: { script: 'bench-gateway.mjs', full: ['100000000', '5', '--no-ranges'], quick: ['2000000', '1', '--no-ranges'] },
  s3: { script: 'bench-s3.mjs', full: ['--runs', '3', '--mb', '100', '--gc-blocks', '0', '--no-tickets'], quick: ['--runs', '1', '--mb', '2', '--gc-blocks', '0', '--no-tickets'], needs: cephMissing },
  pin: { script: 'bench-pin.mjs', full: ['100', '--runs', '5'], quick: ['4', '--runs', '1'] },
  site: { script: 'bench-site.mjs', full: ['--binary', '--runs', '3'], quick: ['--binary', '--quick'] }
}

const ms = (x) => `${x.toLocaleString('en-US', { maximumFractionDigits: x < 20 ? 2 : 0, minimumFractionDigits: x < 20 ? 2 : 0 })} ms`
const perS = (unit) => (x) => `${x.toLocaleString('en-US', { maximumFractionDigits: x < 10 ? 1 : 0 })} ${unit}`
const rps = perS('req/s')
/**
 * The rows, in the order printed. figure/baseline: (job's JSON) → number. A target is on the
 * ratio (figure / baseline ≥ value) or on the figure itself (figure < value).
 */
const ROWS = [
  { name: 'start', label: 'cold start to /health 200', job: 'start', unit: ms, figure: j => j.startMs, baselineLabel: 'node:http hello-world start', baseline: j => j.helloStartMs, target: { on: 'figure', below: 500 } },
  { name: 'restart', label: 'restart downtime, 16 clients', job: 'restart', unit: ms, figure: j => j.downMs, baselineLabel: 'node:http hello-world restart', baseline: j => j.helloDownMs, target: { on: 'figure', below: 1000 } },
  { name: 'serve-up', label: 'serve up with {pins} pins', job: 'pinsList', unit: ms, figure: j => j.serveUpMs, baselineLabel: 'empty data dir', baseline: j => j.emptyServeUpMs, target: { on: 'figure', below: 1000 } },
  { name: 'health', label: 'GET /health rate', job: 'rates', unit: rps, figure: j => j.health.rps, baselineLabel: 'hello-world', baseline: j => j.hello.rps, target: { on: 'ratio', atLeast: 0.85 } },
  { name: 'unknown402', label: '402 unknown CID', job: 'rates', unit: rps, figure: j => j.unknown.rps, baselineLabel: 'hello-world', baseline: j => j.hello.rps, target: { on: 'ratio', atLeast: 0.60 }, context: j => j.floor && { label: 'node:http answering the same 402 bytes', figure: j.floor.rps, ratio: j.floor.rps / j.hello.rps } },
  { name: 'bazaar402', label: '402 with the bazaar block', job: 'rates', unit: rps, figure: j => j.unknown.rps, baselineLabel: '402 without (--bazaar false)', baseline: j => j.plain.rps, target: { on: 'ratio', atLeast: 0.90 } },
  { name: 'local402', label: '402 CID held locally', job: 'rates', unit: rps, figure: j => j.local.rps, baselineLabel: 'hello-world', baseline: j => j.hello.rps, target: { on: 'ratio', atLeast: 0.50 } },
  { name: 'upload', label: 'paid upload {mb} MB', job: 'upload', unit: perS('MB/s'), figure: j => j.pindMBps, baselineLabel: 'UnixFS import alone', baseline: j => j.baselineMBps, target: { on: 'ratio', atLeast: 0.75 } },
  { name: 'gateway', label: 'gateway GET {mb} MB', job: 'gateway', unit: perS('MB/s'), figure: j => j.pindMBps, baselineLabel: 'node:http file server', baseline: j => j.baselineMBps, target: { on: 'ratio', atLeast: 0.80 } },
  { name: 's3-gateway', label: 'S3: gateway GET {mb} MB', job: 's3', unit: perS('MB/s'), figure: j => j.readMBps, baselineLabel: 'raw SDK GET', baseline: j => j.getMBps, target: { on: 'ratio', atLeast: 0.80 } },
  { name: 's3-upload', label: 'S3: paid upload {mb} MB', job: 's3', unit: perS('MB/s'), figure: j => j.uploadMBps, baselineLabel: 'raw SDK PUT', baseline: j => j.putMBps, target: { on: 'ratio', atLeast: 0.70 } },
  { name: 'car-upload', label: 'paid CAR upload {mb} MB', job: 'site', unit: perS('MB/s'), figure: j => j.carMBps, baselineLabel: 'the same as a file', baseline: j => j.fileMBps, target: { on: 'ratio', atLeast: 0.90 } },
  { name: 'dir-upload', label: 'paid directory, {files} files', job: 'site', unit: perS('MB/s'), figure: j => j.dirMBps, baselineLabel: '@helia/unixfs addAll', baseline: j => j.dirBaselineMBps, target: { on: 'ratio', atLeast: 0.70 } },
  { name: 'pin', label: 'pin by CID {mib} MiB', job: 'pin', unit: perS('MiB/s'), figure: j => j.pindMiBps, baselineLabel: 'helia pins.add', baseline: j => j.heliaMiBps, target: { on: 'ratio', atLeast: 1.5 } },
  { name: 'pins-p99', label: 'GET /pins p99, {pins} pins', job: 'pinsList', unit: ms, figure: j => j.pinsP99, baselineLabel: 'GET /health p99', baseline: j => j.healthP99, target: { on: 'figure', below: 10 } },
  { name: 'keys-mint', label: 'pind keys mint via serve', job: 'pinsList', unit: ms, figure: j => j.mintMs, baselineLabel: 'pind --version', baseline: j => j.versionMs, target: { on: 'figure', below: 200 } }
]

const argv = process.argv.slice(2)
const value = (name) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : undefined }
const quick = argv.includes('--quick')
const asJson = argv.includes('--json')
const verbose = argv.includes('--verbose')
const only = value('only')?.split(',').map(s => s.trim()).filter(Boolean)
const unknownRows = (only ?? []).filter(n => !ROWS.some(r => r.name === n))
if (unknownRows.length > 0) {
  console.error(`unknown rows: ${unknownRows.join(', ')}; the rows are ${ROWS.map(r => r.name).join(', ')}`)
  process.exit(2)
}
const binary = value('binary') != null ? resolve(value('binary')) : BINARY
try { accessSync(binary, constants.X_OK) } catch {
  console.error(`no executable pind at ${binary}: build it with npm run build, or give --binary`)
  process.exit(2)
}
const unit = value('env-from') ?? 'scripts/pind.service'
const productionEnv = argv.includes('--no-production-env') ? {} : productionRuntimeEnv(value('env-from') != null ? resolve(unit) : join(ROOT, unit))

/** the Ceph daemons scripts/s3/ceph-rgw.sh runs, missing from PATH (it installs them only as root) */
function cephMissing () {
  const missing = ['radosgw', 'ceph-mon', 'ceph-osd'].filter(bin => !(process.env.PATH ?? '').split(delimiter).some(dir => existsSync(join(dir, bin))))
  return missing.length === 0 ? undefined : `no Ceph (${missing.join(', ')} not installed)`
}

const say = (line) => { if (asJson) process.stderr.write(`${line}\n`); else console.log(line) }
const progress = (line) => process.stderr.write(`${line}\n`)

/** runs a script with --json; resolves with its last JSON line, or rejects with its output's tail */
function runJob (job, extraArgs) {
  const args = [join(ROOT, 'scripts', job.script), ...(quick ? job.quick : job.full), ...extraArgs, '--json']
  const env = { ...process.env, BENCH_BINARY: binary, BENCH_SERVE_ENV: JSON.stringify(productionEnv) }
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''; let err = ''
    p.stdout.on('data', b => { out += b; if (verbose) process.stderr.write(b) })
    p.stderr.on('data', b => { err += b; if (verbose) process.stderr.write(b) })
    p.on('error', reject)
    p.on('exit', (code, signal) => {
      const last = out.trim().split('\n').reverse().find(l => l.startsWith('{'))
      if (code === 0 && last != null) {
        try { resolve(JSON.parse(last)); return } catch {}
      }
      const tail = `${out}\n${err}`.trim().split('\n').slice(-15).join('\n')
      reject(new Error(`${job.script} exited ${code ?? signal}${last == null ? ' without a JSON line' : ''}:\n${tail}`))
    })
  })
}

const fmtRatio = (row, r) => row.target.on === 'ratio' && row.target.atLeast < 1.01 ? `${(100 * r).toFixed(0)}%` : `${r.toFixed(2)}×`
const targetText = (row) => row.target.on === 'ratio'
  ? (row.target.atLeast < 1.01 ? `≥ ${(100 * row.target.atLeast).toFixed(0)}% of baseline` : `≥ ${row.target.atLeast}× baseline`)
  : `< ${row.target.below.toLocaleString('en-US')} ms`

const rows = ROWS.filter(r => only == null || only.includes(r.name))
/** a row's label with its sizes: from the script's figures, else the sizes asked for */
const planned = quick ? { pins: 1_000, mb: 2, mib: 4, files: 200 } : { pins: 100_000, mb: 100, mib: 100, files: 10_000 }
const labelOf = (r, j = {}) => r.label
  .replace('{pins}', (j.pins ?? planned.pins).toLocaleString('en-US'))
  .replace('{mb}', String(j.mb ?? (j.bytes != null ? j.bytes / 1e6 : planned.mb)))
  .replace('{mib}', String(j.mib ?? planned.mib))
  .replace('{files}', (j.files ?? planned.files).toLocaleString('en-US'))
const startLoad = loadavg()
const t0 = performance.now()
say(`pind benchmark summary${quick ? ' (--quick: tiny sizes, the figures are noise)' : ''}: ${binary}, Node ${process.version}, ${new Date().toISOString()}`)
say(`pind's runtime environment: ${argv.includes('--no-production-env') ? 'none (--no-production-env)' : Object.keys(productionEnv).length === 0 ? `none set in ${unit}` : `from ${unit}: ${Object.entries(productionEnv).map(([k, v]) => `${k}=${v}`).join(' ')}`}${process.env.BENCH_SERVE_NODE_OPTIONS ? `; NODE_OPTIONS += ${process.env.BENCH_SERVE_NODE_OPTIONS}` : ''}`)
if (startLoad[0] > 1.5) say(`warning: load average ${startLoad[0].toFixed(2)} at the start (> 1.5): other work competes for the CPU, the figures are not to be trusted`)

const results = new Map() // row name → result
const jobNames = [...new Set(rows.map(r => r.job))]
for (const [i, name] of jobNames.entries()) {
  const job = JOBS[name]
  const jobRows = rows.filter(r => r.job === name)
  const skip = job.needs?.()
  if (skip != null) {
    for (const r of jobRows) results.set(r.name, { skipped: skip })
    progress(`[${i + 1}/${jobNames.length}] ${job.script}: skipped: ${skip}`)
    continue
  }
  // bench-rates measures only the targets asked for (and the hello-world)
  const extra = name === 'rates' ? ['--only', [...new Set(jobRows.flatMap(r => ({ health: ['health'], unknown402: ['unknown', 'floor'], bazaar402: ['unknown', 'plain'], local402: ['local'] })[r.name]))].join(',')] : []
  const started = performance.now()
  progress(`[${i + 1}/${jobNames.length}] ${job.script} ${(quick ? job.quick : job.full).join(' ')} ${extra.join(' ')} (load ${loadavg()[0].toFixed(2)})`)
  try {
    const j = await runJob(job, extra)
    for (const r of jobRows) {
      const figure = r.figure(j); const baseline = r.baseline(j)
      const ratio = figure / baseline
      const met = r.target.on === 'ratio' ? ratio >= r.target.atLeast : figure < r.target.below
      const label = labelOf(r, j)
      results.set(r.name, { label, figure, baseline, ratio, met, context: r.context?.(j) || undefined })
    }
    progress(`    done in ${((performance.now() - started) / 1000).toFixed(0)} s`)
  } catch (err) {
    for (const r of jobRows) results.set(r.name, { error: err.message })
    progress(`    failed: ${err.message}`)
  }
}

const endLoad = loadavg()
const table = rows.map(r => {
  const x = results.get(r.name)
  return {
    name: r.name,
    label: x.label ?? labelOf(r),
    ...(x.skipped != null ? { skipped: x.skipped } : {}),
    ...(x.error != null ? { error: x.error } : {}),
    ...(x.figure != null ? { figure: x.figure, baseline: x.baseline, baselineLabel: r.baselineLabel, ratio: x.ratio, unit: r.unit(1).replace(/^[\d.]+ /, '') } : {}),
    ...(x.context != null ? { context: x.context } : {}),
    target: r.target.on === 'ratio' ? { on: 'ratio', atLeast: r.target.atLeast, text: targetText(r) } : { on: 'figure', below: r.target.below, text: targetText(r) },
    met: x.met ?? false
  }
})
const count = (f) => table.filter(f).length
const summary = {
  met: count(t => t.met), missed: count(t => !t.met && t.skipped == null && t.error == null), failed: count(t => t.error != null), skipped: count(t => t.skipped != null)
}

for (const [i, t] of table.entries()) {
  const r = rows[i]
  const name = t.label.padEnd(30)
  if (t.skipped != null) { say(`${name} skipped: ${t.skipped}`); continue }
  if (t.error != null) { say(`${name} FAILED: ${t.error.split('\n')[0]}`); continue }
  const vs = `vs ${t.baselineLabel} ${r.unit(t.baseline)}`
  say(`${name} ${r.unit(t.figure).padStart(13)}  ${vs.padEnd(46)} ${fmtRatio(r, t.ratio).padStart(6)}  target ${targetText(r).padEnd(20)} ${t.met ? 'met' : 'MISSED'}`)
  // context, not a target: what the row's baseline allows on this machine (e.g. node:http's floor for the same answer)
  if (t.context != null) say(`${''.padEnd(30)}   (${t.context.label}: ${r.unit(t.context.figure)}, ${fmtRatio(r, t.context.ratio)} of ${t.baselineLabel})`)
}
say(`${table.length} rows: ${summary.met} met, ${summary.missed} missed${summary.failed > 0 ? `, ${summary.failed} failed to run` : ''}${summary.skipped > 0 ? `, ${summary.skipped} skipped` : ''}; ${((performance.now() - t0) / 1000).toFixed(0)} s; load average at start ${startLoad.map(x => x.toFixed(2)).join(' ')}, at end ${endLoad.map(x => x.toFixed(2)).join(' ')}`)
if (asJson) {
  console.log(JSON.stringify({
    binary, node: process.version, quick, productionEnv, rows: table, ...summary,
    loadavg: { start: startLoad, end: endLoad }, seconds: (performance.now() - t0) / 1000
  }, null, 2))
}
if (summary.failed > 0) process.exitCode = 1
