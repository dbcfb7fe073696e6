#!/usr/bin/env node
/**
 * Pin by CID against a baseline measured in the same run. pind (the built
 * binary, or the bundle with --bundle) on a local dev chain is asked to pin a
 * random UnixFS file (CIDv1, raw leaves, 1 MiB chunks) held by a loopback
 * origin peer A: paid POST /pins {cid, origins} → 202, then GET /pins/{id}
 * every 20 ms until `pinned`. The time runs from sending the paid POST
 * (402 → size probe → sign → paid retry → settle → 202) to seeing `pinned`.
 * Baseline: a plain Helia peer B, dialled to A, runs `helia.pins.add(cid)` on
 * a separate random file of the same size from A. Fresh CIDs every run;
 * medians are printed, with pind's CPU time per pin, its RSS before the runs and its peak after.
 * Also this process's CPU and event-loop use while pind pins: the origin A lives here, and pind's
 * fetch waits on it (a Helia origin serving 100 MiB costs ~3 s of CPU on this machine), so pind's
 * time follows what A gets of the machine; Helia's own pin runs A and B on this one event loop.
 * `--json`: a last line with the medians as JSON (scripts/bench.mjs reads it).
 * Usage: node scripts/bench-pin.mjs [size-MiB=100] [--runs N=3] [--bundle] [--json]
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { multiaddr } from '@multiformats/multiaddr'
import { toClientEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { CID } from 'multiformats/cid'
import { privateKeyToAccount } from 'viem/accounts'
import { cpuMs, jsonResult, median, ROOT, rss, startServe } from './bench-lib.mjs'
import { startDevChain } from './devchain/index.mjs'
import { startPeer } from './peer/index.mjs'

// helia's pins.add that fails fast also rejects a promise nobody awaits: log it, do not die silently
process.on('unhandledRejection', (err) => { console.error('unhandledRejection:', err) })

const argv = process.argv.slice(2)
const runsAt = argv.indexOf('--runs')
const runs = runsAt >= 0 ? Number(argv[runsAt + 1]) : 3
const bundle = argv.includes('--bundle')
const sizeArg = argv.find((a, i) => !a.startsWith('--') && (runsAt < 0 || i !== runsAt + 1))
const size = Math.round(Number(sizeArg ?? 100) * 1024 * 1024)
if (!(size > 0) || !(runs >= 1)) throw new Error('usage: node scripts/bench-pin.mjs [size-MiB] [--runs N] [--bundle]')
const MiB = size / 1024 / 1024

let chain, pind, A, B
try {
  chain = await startDevChain({ payers: 1 })
  pind = await startServe({
    // the origin peers run on loopback: allow origins at any address
    args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--origin-addresses', 'any'],
    env: { PIND_SETTLER_KEY: chain.settlerKey },
    ...(bundle ? { binary: process.execPath, binaryArgs: [join(ROOT, 'dist/pind.cjs')] } : {})
  })
  A = await startPeer()
  B = await startPeer()
  await B.helia.libp2p.dial(multiaddr(A.multiaddrs()[0]))
  const origins = A.multiaddrs()

  const client = x402Client.fromConfig({
    schemes: [{ network: 'eip155:167000', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(chain.payers[0].privateKey))) }],
    spendControls: { allowedAssets: [{ network: 'eip155:167000', asset: chain.usdc }] }
  })
  const pay = wrapFetchWithPayment(fetch, client)

  /** pind: paid POST /pins → 202 → poll until pinned; returns total ms and ms to the 202 */
  const pinWithPind = async (cid) => {
    const t0 = performance.now()
    const r = await pay(`${pind.url}/pins`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid, origins })
    })
    const accepted = performance.now() - t0
    const body = await r.json()
    if (r.status !== 202) throw new Error(`POST /pins: ${r.status} ${JSON.stringify(body)}`)
    const token = r.headers.get('x-wallet-auth-token')
    for (;;) {
      const s = await fetch(`${pind.url}/pins/${body.requestid}`, { headers: { authorization: `Bearer ${token}` } })
      const st = await s.json()
      if (s.status !== 200) throw new Error(`GET /pins/${body.requestid}: ${s.status} ${JSON.stringify(st)}`)
      if (st.status === 'pinned') return { ms: performance.now() - t0, accepted }
      if (st.status === 'failed') throw new Error(`pin failed: ${st.info?.status_details}`)
      await new Promise(resolve => setTimeout(resolve, 20))
    }
  }

  /** baseline: plain helia pins.add on B, fetching from A over bitswap */
  const pinWithHelia = async (cid) => {
    const t0 = performance.now()
    for await (const _ of B.helia.pins.add(CID.parse(cid))) {} // eslint-disable-line no-unused-vars
    return performance.now() - t0
  }

  const before = rss(pind.proc.pid)
  const pindMs = []; const acceptedMs = []; const baseMs = []; const pindCpuMs = []; const originCpuMs = []; const heliaCpuMs = []; const originElu = []
  /** this process's CPU (the origin A, the baseline B, the client) in ms */
  const ownCpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000 }
  for (let i = 0; i < runs; i++) {
    const cid = (await A.addRandom(size)).cid
    const c0 = cpuMs(pind.proc.pid)
    const o0 = ownCpuMs()
    const e0 = performance.eventLoopUtilization()
    const p = await pinWithPind(cid)
    originElu.push(performance.eventLoopUtilization(e0).utilization)
    originCpuMs.push(ownCpuMs() - o0)
    pindCpuMs.push(cpuMs(pind.proc.pid) - c0)
    pindMs.push(p.ms); acceptedMs.push(p.accepted)
    const baseCid = (await A.addRandom(size)).cid
    const h0 = ownCpuMs()
    baseMs.push(await pinWithHelia(baseCid))
    heliaCpuMs.push(ownCpuMs() - h0)
    console.log(`run ${i + 1}/${runs}: pind ${p.ms.toFixed(0)} ms (202 after ${p.accepted.toFixed(0)} ms), helia pins.add ${baseMs.at(-1).toFixed(0)} ms`)
  }
  const after = rss(pind.proc.pid)

  const p = median(pindMs); const b = median(baseMs)
  const rate = (ms) => (MiB / (ms / 1000)).toFixed(1)
  const list = (xs) => xs.map(t => t.toFixed(0)).join(', ')
  console.log(`pin by CID, ${MiB} MiB from a loopback origin, ${bundle ? 'bundle (node dist/pind.cjs)' : 'binary dist/pind'}, median of ${runs}:`)
  console.log(`  pind (paid POST → pinned):  ${p.toFixed(0)} ms, ${rate(p)} MiB/s  [${list(pindMs)}]; of which POST → 202: ${median(acceptedMs).toFixed(0)} ms`)
  console.log(`  baseline helia pins.add:    ${b.toFixed(0)} ms, ${rate(b)} MiB/s  [${list(baseMs)}]`)
  console.log(`  ratio pind/baseline time:   ${(p / b).toFixed(2)}`)
  console.log(`  pind's CPU per pin (user + system, the status polls included): ${median(pindCpuMs)} ms [${list(pindCpuMs)}]`)
  console.log(`  this process's CPU (the origin serving, the client polling) while pind pins: ${median(originCpuMs).toFixed(0)} ms [${list(originCpuMs)}]; while helia pins (origin and fetcher): ${median(heliaCpuMs).toFixed(0)} ms [${list(heliaCpuMs)}]`)
  console.log(`  this process's event loop busy while pind pins (the origin's main thread): ${(100 * median(originElu)).toFixed(0)}% [${originElu.map(u => (100 * u).toFixed(0)).join(', ')}]`)
  console.log(`  pind RSS before runs ${before.rssMiB.toFixed(0)} MiB, after ${after.rssMiB.toFixed(0)} MiB, peak ${after.peakMiB.toFixed(0)} MiB`)
  jsonResult({ mib: MiB, runs, pindMs: p, heliaMs: b, pindMiBps: MiB / (p / 1000), heliaMiBps: MiB / (b / 1000), acceptedMs: median(acceptedMs), pindRuns: pindMs, heliaRuns: baseMs, pindCpuMs: median(pindCpuMs), originCpuMs: median(originCpuMs), heliaCpuMs: median(heliaCpuMs), peakMiB: after.peakMiB })
} finally {
  await pind?.stop()
  if (pind != null) rmSync(pind.dataDir, { recursive: true, force: true })
  await B?.stop()
  await A?.stop()
  await chain?.stop()
}
