#!/usr/bin/env node
/**
 * The S3 block backend against raw @aws-sdk/client-s3, in one run, on a throwaway
 * Ceph RADOS Gateway (scripts/s3/; targets: upload >= 0.70 and gateway read >= 0.80 of the raw rate, upload
 * peak RSS < 200 MB):
 *
 *   - upload: the whole paid exchange of a 100 MB file against the built binary with
 *     --blockstore s3 (402, sign, paid POST /upload: import with every block PUT to the
 *     bucket as the body arrives, settle on chain, ledger record, 201; the service logs
 *     each phase's milliseconds and the script prints them; with PIND_UPLOAD_WRITES=staged
 *     in the environment: staged on local disk, settled, then PUT), vs PUTting the same
 *     bytes as the same 1 MiB blocks into the same bucket with the SDK directly, as many
 *     in flight as pind's commit keeps (S3_TUNING.concurrency);
 *   - upload with a ticket: the same file paid by a prepaid ticket, all timed (402, sign,
 *     paid POST /upload/tickets settled at once, then POST /upload with X-Upload-Ticket,
 *     whose blocks are PUT while the body arrives), against the same raw PUT;
 *   - read: GET /ipfs/{cid} of that file through pind's gateway (no read cache: every
 *     block comes from the bucket), vs GETting the same blocks with the SDK, as many in
 *     flight as a gateway reader keeps (S3_TUNING.readAhead);
 *   - gc: `pind gc` (through the running serve) removing N unreferenced blocks from the
 *     bucket, vs listing (ListObjectsV2, pages of 1000) and deleting (DeleteObjects,
 *     batches of 1000) as many objects with the SDK directly.
 * The peak RSS is the service's VmHWM over the uploads; its CPU time (user + system, from
 * /proc/<pid>/stat) is printed per upload and per read.
 *
 * `--no-tickets`: no uploads by ticket. `--json`: a last line with the medians as JSON (scripts/bench.mjs reads it).
 *
 * Usage: node scripts/bench-s3.mjs [--runs 3] [--mb 100] [--gc-blocks 100000] [--bundle | --binary <file>] [--no-tickets] [--json]
 * (`--binary`: another build than dist/pind, e.g. a copy of main's, to alternate the two in one window)
 * (root, or Ceph installed: the first run installs Debian's ceph packages)
 */
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3'
import { base32upper } from 'multiformats/bases/base32'
import { request } from 'undici'
import { BINARY, cpuMs, jsonResult, median, paidUpload, pindEnv, ROOT, rss, startServe, ticketUpload, x402For } from './bench-lib.mjs'
import { startDevChain } from './devchain/index.mjs'
import { startS3 } from './s3/index.mjs'
import { spawn } from 'node:child_process'

const argv = process.argv.slice(2)
const opt = (name, def) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? Number(argv[i + 1]) : def }
const runs = opt('runs', 3)
const size = opt('mb', 100) * 1_000_000
const gcBlocks = opt('gc-blocks', 100_000)
const bundle = argv.includes('--bundle')
const binary = argv.includes('--binary') ? argv[argv.indexOf('--binary') + 1] : BINARY
const tickets = !argv.includes('--no-tickets')
const BLOCK = 1_048_576
/** the machine's load average as the run starts (printed with the results: the figures depend on it) */
const loadAtStart = loadavg().map(x => x.toFixed(2)).join(' ')
// the same in-flight counts as the service (one place: S3_TUNING in src/ipfs/s3-settings.ts)
const tuning = readFileSync(join(ROOT, 'src/ipfs/s3-settings.ts'), 'utf8')
const COMMIT_CONCURRENCY = Number(/\bconcurrency: (\d+)/.exec(tuning)?.[1])
const READ_AHEAD = Number(/\breadAhead: (\d+)/.exec(tuning)?.[1])
if (!(COMMIT_CONCURRENCY > 0 && READ_AHEAD > 0)) throw new Error('cannot read S3_TUNING from src/ipfs/s3-settings.ts')

/** runs `fn` over `items` with `conc` in flight */
async function pool (items, conc, fn) {
  let next = 0
  await Promise.all(Array.from({ length: Math.min(conc, items.length) }, async () => { while (next < items.length) { const i = next++; await fn(items[i], i) } }))
}

const s3 = await startS3({ storeSize: 8 * 2 ** 30 })
/** what is started before the measurements' own try/finally: stopped if a later start fails */
const stopOnFailure = (...started) => async (err) => { for (const s of started) await s.stop(); throw err }
const chain = await startDevChain({ payers: 1 }).catch(stopOnFailure(s3))
const bucket = await s3.createBucket(`bench-${Date.now()}`).catch(stopOnFailure(chain, s3))
const pind = await startServe({
  ...(bundle ? { binary: process.execPath, binaryArgs: [join(ROOT, 'dist/pind.cjs')] } : { binary }),
  args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--rate-limit-unpaid', '0', '--rate-limit-reads', '0',
    '--blockstore', 's3', '--s3-endpoint', s3.endpoint, '--s3-bucket', bucket, '--s3-force-path-style', '--log-level', 'info'],
  env: { PIND_SETTLER_KEY: chain.settlerKey, ...s3.env() }
}).catch(stopOnFailure(chain, s3))
const payer = x402For(chain, chain.payers[0].privateKey)

const blocksOf = (bytes) => Array.from({ length: Math.ceil(bytes.length / BLOCK) }, (_, i) => bytes.subarray(i * BLOCK, (i + 1) * BLOCK))

async function rawPut (bytes, prefix) {
  const t0 = performance.now()
  await pool(blocksOf(bytes), COMMIT_CONCURRENCY, async (b, i) => { await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: `${prefix}${i}`, Body: b })) })
  return performance.now() - t0
}

async function rawGet (count, prefix) {
  const t0 = performance.now()
  let bytes = 0
  await pool(Array.from({ length: count }, (_, i) => i), READ_AHEAD, async (i) => {
    const r = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: `${prefix}${i}` }))
    bytes += (await r.Body.transformToByteArray()).byteLength
  })
  return { ms: performance.now() - t0, bytes }
}

async function gatewayGet (cid) {
  const t0 = performance.now()
  const r = await request(`${pind.url}/ipfs/${cid}`)
  let bytes = 0
  for await (const chunk of r.body) bytes += chunk.length
  if (r.statusCode !== 200) throw new Error(`gateway answered ${r.statusCode}`)
  return { ms: performance.now() - t0, bytes }
}

/** N small objects under `prefix` (not timed), named as blocks are (pind's gc looks at nothing else): what gc and the baseline delete */
async function fill (prefix, n) {
  const body = randomBytes(100)
  await pool(Array.from({ length: n }, (_, i) => i), 64, async (i) => {
    const name = base32upper.encode(Uint8Array.from([0x12, 0x20, ...createHash('sha256').update(`${prefix}${i}`).digest()]))
    await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: `${prefix}${name}`, Body: body }))
  })
}

async function sdkListAndDelete (prefix) {
  const t0 = performance.now()
  let token
  let n = 0
  do {
    const page = await s3.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, MaxKeys: 1000, ContinuationToken: token }))
    if (page.Contents?.length) {
      const r = await s3.client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: page.Contents.map(o => ({ Key: o.Key })), Quiet: true } }))
      if (r.Errors?.length) throw new Error(`DeleteObjects: ${r.Errors.length} errors`)
      n += page.Contents.length
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined
  } while (token != null)
  return { ms: performance.now() - t0, n }
}

function pindGc () {
  return new Promise((resolve, reject) => {
    const cmd = bundle ? [process.execPath, join(ROOT, 'dist/pind.cjs')] : [binary]
    const t0 = performance.now()
    const p = spawn(cmd[0], [...cmd.slice(1), 'gc', '--json', '--data-dir', pind.dataDir], { stdio: ['ignore', 'pipe', 'inherit'], env: pindEnv() })
    let out = ''
    p.stdout.on('data', b => { out += b })
    p.on('exit', code => code === 0 ? resolve({ ...JSON.parse(out), wallMs: performance.now() - t0 }) : reject(new Error(`pind gc exited ${code}`)))
  })
}

const t = { up: [], put: [], read: [], get: [], ticket: [], bought: [] }
/** the service's CPU time (user + system, ms) per paid upload and per gateway read */
const cpu = { up: [], read: [], ticket: [] }
try {
  await paidUpload(pind.url, randomBytes(1_000_000), payer) // warm-up
  if (tickets) await ticketUpload(pind.url, randomBytes(1_000_000), payer)
  if (runs === 0) console.log('(--runs 0: no upload or read runs)')
  const idle = rss(pind.proc.pid)
  const cids = []
  for (let i = 0; i < runs; i++) {
    const bytes = randomBytes(size)
    const c0 = cpuMs(pind.proc.pid)
    const up = await paidUpload(pind.url, bytes, payer)
    cpu.up.push(cpuMs(pind.proc.pid) - c0)
    t.up.push(up.ms)
    cids.push(up.body.cid)
    t.put.push(await rawPut(bytes, `raw/${i}/`))
    // the same size by a ticket, other bytes (a fresh DAG: nothing in the bucket already)
    if (!tickets) continue
    const c1 = cpuMs(pind.proc.pid)
    const tk = await ticketUpload(pind.url, randomBytes(size), payer)
    cpu.ticket.push(cpuMs(pind.proc.pid) - c1)
    t.ticket.push(tk.ms)
    t.bought.push(tk.boughtMs)
  }
  const peak = rss(pind.proc.pid) // over the uploads (paid and by ticket) only: reads come next
  if (runs > 0) {
    // the service's own split of each upload: import (receive, hash, stage), settle, commit (PUTs)
    const phases = pind.stderr().split('\n').filter(l => l.includes('"upload pinned"')).map(l => JSON.parse(l)).slice(-runs)
    for (let i = 0; i < runs; i++) {
      const c0 = cpuMs(pind.proc.pid)
      const read = await gatewayGet(cids[i])
      cpu.read.push(cpuMs(pind.proc.pid) - c0)
      if (read.bytes !== size) throw new Error(`gateway gave ${read.bytes} bytes`)
      t.read.push(read.ms)
      t.get.push((await rawGet(Math.ceil(size / BLOCK), `raw/${i}/`)).ms)
  }
  const peakRead = rss(pind.proc.pid)
  const mb = size / 1e6
  const line = (name, xs) => `${name.padEnd(62)} median ${median(xs).toFixed(0).padStart(5)} ms  ${(mb / (median(xs) / 1000)).toFixed(0).padStart(4)} MB/s  (${xs.map(x => x.toFixed(0)).join(', ')})`
  console.log(`${mb} MB, ${runs} runs each, ${bundle ? 'bundle' : `binary ${binary}`}, Ceph RGW ${s3.endpoint}; load average at start ${loadAtStart}; commit ${COMMIT_CONCURRENCY} PUTs in flight, gateway read-ahead ${READ_AHEAD} GETs`)
  console.log(line('pind: 402 + sign + paid upload, blocks PUT to S3', t.up))
  console.log(line(`raw SDK: PUT the same 1 MiB blocks, ${COMMIT_CONCURRENCY} in flight`, t.put))
  if (tickets) console.log(line('pind: 402 + sign + ticket bought + upload with it', t.ticket))
  if (tickets) console.log(`  of which the ticket (402, sign, paid POST /upload/tickets, settled): median ${median(t.bought).toFixed(0)} ms (${t.bought.map(x => x.toFixed(0)).join(', ')})`)
  console.log(line('pind: GET /ipfs/{cid} from S3 (no cache)', t.read))
  console.log(line(`raw SDK: GET the same 1 MiB blocks, ${READ_AHEAD} in flight`, t.get))
  const ratio = (base, x) => base.map((b, i) => b / x[i])
  const ph = (k) => phases.map(p => p[k]).join(', ')
  // written as the body arrives (--upload-writes auto with S3), or staged and committed after the settlement (staged)
  if (phases.every(p => p.writes === 'direct')) console.log(`  pind's phases per upload (ms): import (receive, hash, blocks handed to their PUTs) ${ph('importMs')}; PUTs still running after the body ${ph('storedMs')}; settle ${ph('settleMs')}; ledger ${ph('ledgerMs')} — import vs raw PUT ${median(t.put.map((x, i) => x / phases[i].importMs)).toFixed(2)}`)
  else console.log(`  pind's phases per upload (ms): import ${ph('importMs')}; seal ${ph('sealMs')}; store ready ${ph('readyMs')}; settle ${ph('settleMs')}; commit (the PUTs) ${ph('commitMs')}; ledger ${ph('ledgerMs')} — commit vs raw PUT ${median(t.put.map((x, i) => x / phases[i].commitMs)).toFixed(2)}`)
  const tphases = pind.stderr().split('\n').filter(l => l.includes('"upload pinned with a ticket"')).map(l => JSON.parse(l)).slice(-runs)
  const tph = (k) => tphases.map(p => p[k]).join(', ')
  if (tickets) console.log(`  pind's phases per ticket upload (ms): import (receive, hash, blocks handed to their PUTs) ${tph('importMs')}; PUTs still running after the body ${tph('storedMs')}; in all (claim included) ${tph('ms')}`)
  console.log(`upload ratio raw/pind: ${(median(t.put) / median(t.up)).toFixed(2)} (target >= 0.70); per run ${ratio(t.put, t.up).map(r => r.toFixed(2)).join(', ')}`)
  if (tickets) console.log(`ticket upload ratio raw/pind: ${(median(t.put) / median(t.ticket)).toFixed(2)} (target >= 0.70); per run ${ratio(t.put, t.ticket).map(r => r.toFixed(2)).join(', ')}`)
  console.log(`read ratio raw/pind:   ${(median(t.get) / median(t.read)).toFixed(2)} (target >= 0.70); per run ${ratio(t.get, t.read).map(r => r.toFixed(2)).join(', ')}`)
  console.log(`service CPU (user + system) per paid upload median ${median(cpu.up)} ms (${cpu.up.join(', ')}), per ticket upload ${median(cpu.ticket)} ms (${cpu.ticket.join(', ')}), per gateway read ${median(cpu.read)} ms (${cpu.read.join(', ')})`)
  console.log(`service RSS idle ${idle.rssMiB.toFixed(0)} MiB, peak over all uploads ${peak.peakMiB.toFixed(0)} MiB (target < 200 MB = 191 MiB); peak after the reads too ${peakRead.peakMiB.toFixed(0)} MiB`)
  const rate = (xs) => mb / (median(xs) / 1000)
  jsonResult({
    mb, runs, uploadMBps: rate(t.up), putMBps: rate(t.put), readMBps: rate(t.read), getMBps: rate(t.get),
    ...(tickets ? { ticketMBps: rate(t.ticket) } : {}), uploadMs: t.up, putMs: t.put, readMs: t.read, getMs: t.get, peakMiB: peak.peakMiB
  })
  }

  if (gcBlocks > 0) {
    let t0 = performance.now()
    await fill('blocks/', gcBlocks)
    await fill('sdk/', gcBlocks)
    console.log(`gc: ${gcBlocks} unreferenced blocks put under pind's prefix and ${gcBlocks} objects under another (${((performance.now() - t0) / 1000).toFixed(0)} s, not timed)`)
    const gc = await pindGc()
    if (gc.removedBlocks !== gcBlocks) throw new Error(`pind gc removed ${gc.removedBlocks} of ${gcBlocks}`)
    t0 = performance.now()
    const sdk = await sdkListAndDelete('sdk/')
    if (sdk.n !== gcBlocks) throw new Error(`the SDK deleted ${sdk.n}`)
    console.log(`pind gc of ${gcBlocks} blocks (${gc.scannedBlocks} scanned, ${gc.keptBlocks} kept): ${(gc.wallMs / 1000).toFixed(1)} s for the command (gc's own figure ${(gc.ms / 1000).toFixed(1)} s)`)
    console.log(`raw SDK list + delete of ${gcBlocks} objects: ${(sdk.ms / 1000).toFixed(1)} s; ratio raw/pind ${(sdk.ms / gc.wallMs).toFixed(2)}`)
  }
} finally {
  await pind.stop()
  await chain.stop()
  await s3.stop()
}
