#!/usr/bin/env node
/**
 * Paid uploads right after start, again at once, and again after an idle
 * spell, against two or more services side by side (V8's young
 * generation after an idle spell).
 *
 * When a service goes quiet, its idle collection (src/runtime/idle-collection.ts) and V8's
 * memory reducer shrink the young generation to 1-2 MiB. Held at that size
 * (`--semi-space-growth-factor=1`, main before the cap) the next load
 * promotes what would have died young: more scavenges and mark-compacts,
 * fewer uploads. This runs the same bursts against each service in turn:
 *   - burst "start": right after start-up, then "start, again" at once
 *     (plain load: nothing idle between);
 *   - idle: until every service has run its idle collection (its young
 *     generation back at <= 2 MiB, from /metrics), and `--settle` s more;
 *   - burst "idle", then "idle, again" at once.
 * The idle part runs `--cycles` times (services taking turns, the order
 * alternating). A burst: `--clients` paying clients at once (each its own
 * payer), each `--uploads` paid uploads (the whole x402 exchange) of sizes
 * drawn log-uniform from 4 KiB to `--max-kb`, the same sizes for every
 * service. Printed per service and burst kind: the burst's time, scavenges
 * and mark-compacts (/metrics, gc counts), the young generation's size at the
 * end, RSS max and mean (sampled every 200 ms); and each figure's ratio to the
 * first service's (the baseline) in the same run, with the load average.
 *
 * Usage: node scripts/bench-idle.mjs [--cycles 2] [--clients 8] [--uploads 6] [--max-kb 4096]
 *   [--settle 5] [--service name=path/to/binary[,ENV=value...]]...
 * Default services: main=dist/pind-main (a copy of main's build, if present) and this=dist/pind.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { paidUpload, ROOT, startServe, x402For } from './bench-lib.mjs'
import { startDevChain } from './devchain/index.mjs'

const argv = process.argv.slice(2)
const opt = (name, def) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? Number(argv[i + 1]) : def }
const cycles = opt('cycles', 2)
const clients = opt('clients', 8)
const uploads = opt('uploads', 6)
const maxKb = opt('max-kb', 4096)
const settleS = opt('settle', 5)
const MiB = 1024 * 1024

/** name=binary[,K=V...] */
function parseService (s) {
  const [head, ...envs] = s.split(',')
  const eq = head.indexOf('=')
  return { name: head.slice(0, eq), binary: join(ROOT, head.slice(eq + 1)), env: Object.fromEntries(envs.map(e => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)])) }
}
const specs = argv.flatMap((a, i) => a === '--service' ? [parseService(argv[i + 1])] : [])
if (specs.length === 0) {
  if (existsSync(join(ROOT, 'dist/pind-main'))) specs.push(parseService('main=dist/pind-main'))
  specs.push(parseService('this=dist/pind'))
}
for (const s of specs) if (!existsSync(s.binary)) { console.error(`bench-idle: ${s.binary} missing`); process.exit(1) }

/** GET over the admin socket (HTTP on a Unix socket) */
function adminGet (socketPath, path) {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath, path, timeout: 10_000 }, res => {
      let body = ''
      res.on('data', b => { body += b })
      res.on('end', () => { resolve(body) })
    })
    req.on('timeout', () => { req.destroy(new Error('admin socket timeout')) })
    req.on('error', reject)
    req.end()
  })
}

async function heapFigures (svc) {
  const text = await adminGet(join(svc.dataDir, 'admin.sock'), '/metrics')
  // a count not yet collected (no mark-compact so far) is not in the text yet
  const num = (re) => Number(re.exec(text)?.[1] ?? 0)
  return {
    minor: num(/^pind_nodejs_gc_duration_seconds_count\{kind="minor"\} (\S+)/m),
    major: num(/^pind_nodejs_gc_duration_seconds_count\{kind="major"\} (\S+)/m),
    newSpace: num(/^pind_nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)/m)
  }
}

function rssParts (pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? NaN) / 1024
  return { rss: kb('VmRSS'), anon: kb('RssAnon') }
}

// the same sizes for every service and burst: log-uniform 4 KiB .. maxKb
let seed = 18
const rand = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31 }
const plan = Array.from({ length: clients }, () => Array.from({ length: uploads }, () => Math.round(4096 * Math.exp(rand() * Math.log(maxKb / 4)))))
const payload = randomBytes(maxKb * 1024)

const chain = await startDevChain({ payers: clients * specs.length, pruneHistory: true })
const services = []
try {
  for (const [i, s] of specs.entries()) {
    const pind = await startServe({
      binary: s.binary,
      args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--rate-limit-unpaid', '0', '--rate-limit-reads', '0'],
      env: { PIND_SETTLER_KEY: chain.settlerKey, PIND_LOG_LEVEL: 'warn', ...s.env }
    })
    services.push({ ...s, ...pind, payers: chain.payers.slice(i * clients, (i + 1) * clients).map(p => x402For(chain, p.privateKey)), results: {} })
  }

  async function burst (svc, kind) {
    const before = await heapFigures(svc)
    const samples = [rssParts(svc.proc.pid)]
    const sampler = setInterval(() => { try { samples.push(rssParts(svc.proc.pid)) } catch {} }, 200)
    const t0 = performance.now()
    // each upload's bytes differ (a fresh prefix), so no upload is a duplicate of an earlier one
    await Promise.all(plan.map(async (sizes, c) => {
      for (const size of sizes) {
        const bytes = Buffer.concat([randomBytes(32), payload.subarray(0, size)])
        await paidUpload(svc.url, bytes, svc.payers[c])
      }
    }))
    const ms = performance.now() - t0
    clearInterval(sampler)
    samples.push(rssParts(svc.proc.pid))
    const after = await heapFigures(svc)
    const r = {
      ms,
      minor: after.minor - before.minor,
      major: after.major - before.major,
      newSpaceMiB: after.newSpace / MiB,
      newSpaceBeforeMiB: before.newSpace / MiB,
      rssMax: Math.max(...samples.map(s => s.rss)),
      rssMean: samples.reduce((a, s) => a + s.rss, 0) / samples.length,
      anonMax: Math.max(...samples.map(s => s.anon)),
      load: loadavg()[0]
    }
    ;(svc.results[kind] ??= []).push(r)
    console.log(`${svc.name.padEnd(8)} ${kind.padEnd(12)} ${(ms / 1000).toFixed(1).padStart(6)} s  scavenges ${String(r.minor).padStart(5)}  mark-compacts ${String(r.major).padStart(4)}  new space ${r.newSpaceBeforeMiB.toFixed(1)} -> ${r.newSpaceMiB.toFixed(1)} MiB  RSS max ${r.rssMax.toFixed(0)} mean ${r.rssMean.toFixed(0)} (anon max ${r.anonMax.toFixed(0)}) MiB  load ${r.load.toFixed(1)}`)
  }

  async function waitIdle () {
    const t0 = performance.now()
    const done = new Set()
    while (done.size < services.length) {
      if (performance.now() - t0 > 120_000) throw new Error(`no idle collection within 120 s: ${services.filter(s => !done.has(s)).map(s => s.name)}`)
      await new Promise(resolve => setTimeout(resolve, 1000))
      for (const s of services) if (!done.has(s) && (await heapFigures(s)).newSpace <= 2 * MiB) done.add(s)
    }
    await new Promise(resolve => setTimeout(resolve, settleS * 1000))
    console.log(`(idle: every service's young generation at <= 2 MiB after ${((performance.now() - t0) / 1000).toFixed(0)} s, + ${settleS} s)`)
  }

  const total = clients * uploads
  const mb = plan.flat().reduce((a, b) => a + b, 0) / 1e6
  console.log(`${cycles} cycles; a burst: ${clients} clients x ${uploads} paid uploads (${total}, ${mb.toFixed(0)} MB), 4 KiB..${maxKb} KiB log-uniform; services: ${services.map(s => `${s.name}=${s.binary}${Object.keys(s.env).length > 0 ? ` ${JSON.stringify(s.env)}` : ''}`).join(', ')}`)
  // a service's second burst comes right after its first: nothing idle between
  for (const s of services) {
    await burst(s, 'start')
    await burst(s, 'start, again')
  }
  for (let c = 0; c < cycles; c++) {
    await waitIdle()
    for (const s of c % 2 === 0 ? [...services].reverse() : services) {
      await burst(s, 'idle')
      await burst(s, 'idle, again')
    }
  }

  const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
  const base = services[0]
  console.log(`\nmedians per burst kind (ratio to ${base.name}, the same run):`)
  for (const kind of ['start', 'start, again', 'idle', 'idle, again']) {
    for (const s of services) {
      const rs = s.results[kind]
      const b = base.results[kind]
      const f = (k) => med(rs.map(r => r[k]))
      const ratio = (k) => { const d = med(b.map(r => r[k])); return s === base ? '' : d === 0 ? ' (n/a)' : ` (${(f(k) / d).toFixed(2)}x)` }
      console.log(`${kind.padEnd(12)} ${s.name.padEnd(8)} ${(f('ms') / 1000).toFixed(1)} s${ratio('ms')}, ${(total / (f('ms') / 1000)).toFixed(1)} uploads/s; scavenges ${f('minor')}${ratio('minor')}, mark-compacts ${f('major')}${ratio('major')}; new space at the end ${f('newSpaceMiB').toFixed(1)} MiB; RSS max ${f('rssMax').toFixed(0)} MiB${ratio('rssMax')}, mean ${f('rssMean').toFixed(0)} MiB${ratio('rssMean')}, anon max ${f('anonMax').toFixed(0)} MiB`)
    }
  }
  console.log(`load average at the end: ${loadavg().map(x => x.toFixed(1)).join(' ')}`)
} finally {
  for (const s of services) await s.stop()
  await chain.stop()
}
