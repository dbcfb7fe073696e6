#!/usr/bin/env node
/**
 * Paid uploads against the built binary on a local dev chain, paid with
 * @x402/fetch: time of a 10 MB upload (402 → sign → upload → settle → 201),
 * and the service's peak RSS during a 100 MB upload.
 * Usage: node scripts/bench-upload.mjs [runs-of-10MB]
 */
import { randomBytes } from 'node:crypto'
import { toClientEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { privateKeyToAccount } from 'viem/accounts'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { unixfs } from '@helia/unixfs'
import { FsBlockstore } from 'blockstore-fs'
import { median, rss, startServe } from './bench-lib.mjs'
import { startDevChain } from './devchain/index.mjs'

const runs = Number(process.argv[2] ?? 3)
const chain = await startDevChain({ payers: 1 })
const pind = await startServe({
  args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo],
  env: { PIND_SETTLER_KEY: chain.settlerKey }
})
try {
  const client = x402Client.fromConfig({
    schemes: [{ network: 'eip155:167000', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(chain.payers[0].privateKey))) }],
    spendControls: { allowedAssets: [{ network: 'eip155:167000', asset: chain.usdc }] }
  })
  const pay = wrapFetchWithPayment(fetch, client)
  const upload = async (bytes) => {
    const form = new FormData()
    form.append('file', new Blob([bytes]), 'bench.bin')
    const t0 = performance.now()
    const r = await pay(`${pind.url}/upload`, { method: 'POST', body: form })
    const body = await r.json()
    if (r.status !== 201) throw new Error(`upload failed: ${r.status} ${JSON.stringify(body)}`)
    return performance.now() - t0
  }
  const times = []
  for (let i = 0; i < runs; i++) times.push(await upload(randomBytes(10_000_000)))
  console.log(`paid 10 MB upload (402 + paid retry + settle): median ${median(times).toFixed(0)} ms over ${runs} runs (${times.map(t => t.toFixed(0)).join(', ')})`)
  const before = rss(pind.proc.pid)
  const bigTimes = []
  for (let i = 0; i < 3; i++) bigTimes.push(await upload(randomBytes(100_000_000)))
  const after = rss(pind.proc.pid)
  // baseline in the same run: the same import (UnixFS, CIDv1, raw leaves, 1 MiB chunks) hashing and
  // writing the blocks to an on-disk blockstore in this process, with no HTTP, payment or ledger
  const baseTimes = []
  for (let i = 0; i < 3; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'pind-bench-base-'))
    const bs = new FsBlockstore(dir)
    await bs.open()
    const bytes = randomBytes(100_000_000)
    const t0 = performance.now()
    await unixfs({ blockstore: bs }).addByteStream((async function * () { for (let o = 0; o < bytes.length; o += 65536) yield bytes.subarray(o, o + 65536) })(), { cidVersion: 1, rawLeaves: true })
    baseTimes.push(performance.now() - t0)
    await bs.close()
    rmSync(dir, { recursive: true, force: true })
  }
  const t = median(bigTimes)
  const b = median(baseTimes)
  console.log(`paid 100 MB upload (402 + paid retry with the body + import + settle + commit): median ${t.toFixed(0)} ms (${(100 / (t / 1000)).toFixed(0)} MB/s)`)
  console.log(`baseline (same import into an FsBlockstore, no HTTP): median ${b.toFixed(0)} ms (${(100 / (b / 1000)).toFixed(0)} MB/s); ratio ${(b / t).toFixed(2)} (target >= 0.70)`)
  console.log(`service RSS before ${before.rssMiB.toFixed(0)} MiB, peak ${after.peakMiB.toFixed(0)} MiB (target < 200 MB)`)
} finally {
  await pind.stop()
  await chain.stop()
}
