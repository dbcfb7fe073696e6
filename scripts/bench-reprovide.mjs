#!/usr/bin/env node
/**
 * Reprovide throughput on a loopback DHT: pind's keyspace sweep against
 * stock kad-dht `provide()` called per CID, measured in the same run, on the
 * same network.
 *
 *   1. A DHT of `--nodes` (default 20) kad-dht servers on 127.0.0.1, in this
 *      process (scripts/dht-net).
 *   2. A stopped data dir holding N live pins (default 10,000), each
 *      referencing its root block, written straight into LMDB
 *      (scripts/bench-ledger.mjs); pind builds its provide schedule from them
 *      at start, as for a ledger written before routing existed.
 *   3. pind serve (the binary; --bundle: dist/pind.cjs) with --routing dht:
 *      every CID is due, so the first sweep is one full (re)provide pass.
 *      Timed from /health 200 (routing table filled) until every CID is
 *      announced (pind_provides_total{result="done"} = N, pending 0); then
 *      `pind routing status` tells the lookups it took, and a sample of CIDs
 *      is checked at the DHT nodes (each record at k = min(20, nodes) nodes).
 *   4. The baseline, in its own process (scripts/dht-net/provide-baseline.mjs):
 *      a stock kad-dht client calls provide() for `--baseline` other CIDs
 *      (default min(N, 10,000)), 10 at a time like kad-dht's reprovider.
 *
 * Prints CIDs announced per second and the time of the full pass for both,
 * and the ratio. Usage:
 *   node scripts/bench-reprovide.mjs [pins=10000] [--nodes 20] [--baseline N] [--bundle]
 * BENCH_ECHO=1 shows pind's stderr.
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { openBenchLedger } from './bench-ledger.mjs'
import { BINARY, ROOT, rss, startServe } from './bench-lib.mjs'
import { startDhtNetwork } from './dht-net/index.mjs'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createServer } from 'node:net'

const args = process.argv.slice(2)
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? Number(args[i + 1]) : dflt }
const N = Number(args.find((a, i) => /^\d+$/.test(a) && !['--nodes', '--baseline'].includes(args[i - 1])) ?? 10_000)
const NODES = opt('--nodes', 20)
const BASELINE = opt('--baseline', Math.min(N, 10_000))
const useBundle = args.includes('--bundle')
const fmt = (n) => Math.round(n).toLocaleString('en-US')
const log = (s) => process.stderr.write(s + '\n')

const cidOf = (i) => CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`sweep ${i}`).digest())).toString()
const uuid = (i) => { const h = createHash('sha256').update(`req ${i}`).digest('hex'); return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}` }

async function freePort () {
  return await new Promise((resolve) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)) }) })
}

async function writeLedger (dataDir, n) {
  const ledger = await openBenchLedger(dataDir)
  const owner = `0x${'be'.repeat(20)}`
  const now = Date.now()
  for (let from = 0; from < n; from += 50_000) {
    ledger.batch(() => {
      for (let i = from; i < Math.min(n, from + 50_000); i++) {
        const requestid = uuid(i)
        const createdUs = (now - 86_400_000) * 1000 + i * 1_000
        const cid = cidOf(i)
        ledger.putPin({
          requestid, owner, cid, origins: [], meta: {}, status: 'pinned', statusDetails: 'pinned: 1 block', created: new Date(Math.floor(createdUs / 1000)).toISOString(), createdUs,
          months: 12, pinnedUntil: new Date(now + 365 * 86_400_000).toISOString(), dagSize: 1024, source: 'pin',
          payment: { id: `${owner}:${i}`, payer: owner, amount: '1000', network: 'eip155:167000', asset: '0x0', method: 'x402' }
        })
        ledger.putBlocks(requestid, [cid])
      }
    })
  }
  await ledger.close()
}

async function metric (url, re) {
  const text = await (await fetch(url)).text()
  return Number(re.exec(text)?.[1] ?? NaN)
}

async function runCli (bin, binArgs, cmd) {
  const p = spawn(bin, [...binArgs, ...cmd], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  p.stdout.on('data', b => { out += b })
  await new Promise(resolve => p.on('exit', resolve))
  return out
}

log(`loopback DHT: ${NODES} kad-dht servers …`)
const net = await startDhtNetwork({ nodes: NODES })
const k = Math.min(20, NODES)
const dataDir = mkdtempSync(join(tmpdir(), 'pind-bench-reprovide-'))
let serve
try {
  log(`ledger: ${fmt(N)} live pins …`)
  await writeLedger(dataDir, N)

  const metricsAt = `127.0.0.1:${await freePort()}`
  const [bin, binArgs] = useBundle ? [process.execPath, [join(ROOT, 'dist/pind.cjs')]] : [BINARY, []]
  log('pind serve --routing dht …')
  serve = await startServe({
    binary: bin,
    binaryArgs: binArgs,
    args: [...(process.env.BENCH_LOG != null ? ['--log-level', process.env.BENCH_LOG] : []), '--data-dir', dataDir, '--routing', 'dht', '--bootstrap', net.addrs(3).join(','), '--routing-private-addresses', '--dht-mode', 'client', '--metrics-listen', metricsAt]
  })
  // startServe made its own data dir; this run uses ours (the flag given last wins)
  const metricsUrl = `http://${metricsAt}/metrics`
  const t0 = performance.now()
  let done = 0
  let pending = N
  for (;;) {
    done = await metric(metricsUrl, /^pind_provides_total\{result="done"\} (\d+)$/m).catch(() => 0) || 0
    pending = await metric(metricsUrl, /^pind_provide_pending (\d+)$/m).catch(() => N)
    if (done >= N && pending === 0) break
    if (performance.now() - t0 > 30 * 60_000) throw new Error(`sweep did not finish: ${done} of ${N}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  const sweepMs = performance.now() - t0
  const peak = rss(serve.proc.pid).peakMiB
  const status = JSON.parse(await runCli(bin, binArgs, ['routing', 'status', '--json', '--data-dir', dataDir]))
  const pindPeer = (await runCli(bin, binArgs, ['keys', 'peer-id', '--data-dir', dataDir])).trim().split(/\s+/).pop()
  let held = 0
  for (let i = 0; i < 50; i++) held += (await net.records(cidOf(Math.floor(i * N / 50)), pindPeer)).length
  log(`sweep: ${fmt(N)} CIDs in ${(sweepMs / 1000).toFixed(1)} s, ${status.provides.regionsSinceStart} regions, ${status.provides.lookupsSinceStart} lookups; sample records held: ${(held / 50).toFixed(1)} of ${k} nodes per CID`)
  await serve.stop()
  serve = undefined

  log(`baseline: stock kad-dht provide() for ${fmt(BASELINE)} CIDs, 10 at a time …`)
  const base = spawn(process.execPath, [join(ROOT, 'scripts/dht-net/provide-baseline.mjs'), net.addrs(3).join(','), String(BASELINE), '10'], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  base.stdout.on('data', b => { out += b })
  await new Promise(resolve => base.on('exit', resolve))
  const b = JSON.parse(out)
  const seed = (i) => CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`baseline ${i}`).digest())).toString()
  let baseHeld = 0
  for (let i = 0; i < 50; i++) baseHeld += (await net.records(seed(Math.floor(i * BASELINE / 50)), b.peerId)).length
  log(`baseline: ${fmt(BASELINE)} CIDs in ${(b.ms / 1000).toFixed(1)} s (${b.errors} errors); sample records held: ${(baseHeld / 50).toFixed(1)} of ${k} nodes per CID`)

  const sweepRate = N / (sweepMs / 1000)
  const baseRate = BASELINE / (b.ms / 1000)
  const lines = [
    `reprovide on a loopback DHT of ${NODES} kad-dht servers (k = ${k}), ${useBundle ? 'bundle' : 'binary'}`,
    `  pind sweep:         ${fmt(N)} CIDs, one full pass ${(sweepMs / 1000).toFixed(1)} s = ${fmt(sweepRate)} CIDs/s (${status.provides.lookupsSinceStart} DHT lookups, ${status.provides.regionsSinceStart} regions; pind peak RSS ${peak.toFixed(0)} MiB)`,
    `  kad-dht provide():  ${fmt(BASELINE)} CIDs in ${(b.ms / 1000).toFixed(1)} s = ${fmt(baseRate)} CIDs/s (one lookup per CID, 10 at a time)`,
    `  ratio:              ${(sweepRate / baseRate).toFixed(1)}× the per-CID baseline`
  ]
  process.stdout.write(lines.join('\n') + '\n')
} finally {
  await serve?.stop().catch(() => {})
  await net.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
