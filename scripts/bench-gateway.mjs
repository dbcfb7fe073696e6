#!/usr/bin/env node
/**
 * Gateway streaming against a baseline measured in the same run: a 100 MB
 * file pinned in the built binary, read whole from GET /ipfs/{cid}, versus the
 * same bytes from a bare node:http file server (fs.createReadStream). Then
 * many concurrent range requests, watching the service's RSS.
 * `--json`: a last line with the figures as JSON (scripts/bench.mjs reads it); `--no-ranges`:
 * skip the range requests.
 * Usage: node scripts/bench-gateway.mjs [size-bytes] [rounds] [--json] [--no-ranges]
 */
import { randomBytes } from 'node:crypto'
import { writeFileSync, createReadStream, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { toClientEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { privateKeyToAccount } from 'viem/accounts'
import { cpuMs, jsonResult, median, rss, startServe } from './bench-lib.mjs'
import { startDevChain } from './devchain/index.mjs'

const positional = process.argv.slice(2).filter(a => !a.startsWith('--'))
const size = Number(positional[0] ?? 100_000_000)
const rounds = Number(positional[1] ?? 5)
const bytes = randomBytes(size)
const file = join(mkdtempSync(join(tmpdir(), 'pind-gw-')), 'file.bin')
writeFileSync(file, bytes)

const chain = await startDevChain({ payers: 1 })
const pind = await startServe({ args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo], env: { PIND_SETTLER_KEY: chain.settlerKey } })
const base = createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size })
  createReadStream(file).pipe(res)
})
await new Promise(resolve => base.listen(0, '127.0.0.1', resolve))
const baseUrl = `http://127.0.0.1:${base.address().port}/file.bin`


async function drain (url, init) {
  const t0 = performance.now()
  const r = await fetch(url, init)
  let n = 0
  for await (const chunk of r.body) n += chunk.length
  return { ms: performance.now() - t0, n, status: r.status }
}

try {
  const client = x402Client.fromConfig({
    schemes: [{ network: 'eip155:167000', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(chain.payers[0].privateKey))) }],
    spendControls: { allowedAssets: [{ network: 'eip155:167000', asset: chain.usdc }] }
  })
  const form = new FormData()
  form.append('file', new Blob([bytes]), 'big.bin')
  const up = await wrapFetchWithPayment(fetch, client)(`${pind.url}/upload`, { method: 'POST', body: form })
  const { cid } = await up.json()
  const url = `${pind.url}/ipfs/${cid}`
  const startRss = rss(pind.proc.pid).rssMiB

  const pindTimes = []
  const baseTimes = []
  /** the service's CPU time (user + system) per whole read, ms */
  const pindCpu = []
  for (let i = 0; i < rounds; i++) {
    const c0 = cpuMs(pind.proc.pid)
    const a = await drain(url)
    pindCpu.push(cpuMs(pind.proc.pid) - c0)
    if (a.n !== size) throw new Error(`gateway returned ${a.n} bytes`)
    pindTimes.push(a.ms)
    baseTimes.push((await drain(baseUrl)).ms)
  }
  const mbps = (ms) => (size / 1e6) / (ms / 1000)
  const p = mbps(median(pindTimes))
  const b = mbps(median(baseTimes))
  console.log(`GET /ipfs/{cid} ${size} bytes: median ${p.toFixed(0)} MB/s; bare node:http file server: ${b.toFixed(0)} MB/s; ratio ${(p / b).toFixed(2)}`)
  const cpuPer100MB = median(pindCpu) / (size / 1e8)
  console.log(`service CPU (user + system) per read median ${median(pindCpu)} ms (${pindCpu.join(', ')}): ${cpuPer100MB.toFixed(0)} ms per 100 MB; load average ${loadavg().map(l => l.toFixed(1)).join(' ')}`)
  const figures = { bytes: size, rounds, pindMBps: p, baselineMBps: b, ratio: p / b, pindMs: pindTimes, baselineMs: baseTimes, pindCpuMs: pindCpu, cpuMsPer100MB: cpuPer100MB, load: loadavg()[0] }
  if (process.argv.includes('--no-ranges')) { jsonResult(figures) } else {

  const concurrent = 64
  const waves = 5
  const afterWave = []
  const t0 = performance.now()
  for (let w = 0; w < waves; w++) {
    const ranges = Array.from({ length: concurrent }, () => {
      const start = Math.floor(Math.random() * (size - 1_000_000))
      return `bytes=${start}-${start + 999_999}`
    })
    const results = await Promise.all(ranges.map(range => drain(url, { headers: { range } })))
    if (results.some(r => r.status !== 206 || r.n !== 1_000_000)) throw new Error('a range request failed')
    afterWave.push(rss(pind.proc.pid).rssMiB)
  }
  const after = rss(pind.proc.pid)
  console.log(`${waves} waves of ${concurrent} concurrent 1 MB range requests: ${((performance.now() - t0) / waves).toFixed(0)} ms per wave; service RSS before reads ${startRss.toFixed(0)} MiB, after each wave ${afterWave.map(r => r.toFixed(0)).join(' → ')} MiB (a plateau, not a climb, is the point), peak over the whole run (incl. the upload) ${after.peakMiB.toFixed(0)} MiB`)
  jsonResult({ ...figures, peakMiB: after.peakMiB })
  }
} finally {
  base.close()
  await pind.stop()
  await chain.stop()
  rmSync(dirname(file), { recursive: true, force: true })
}
