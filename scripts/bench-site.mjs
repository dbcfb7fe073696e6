#!/usr/bin/env node
/**
 * Site uploads (issue 37): a CAR, and a directory of many small files, paid, against a
 * baseline measured in the same run.
 *
 *   - car: a paid upload of a 100 MB file's UnixFS DAG as a CAR (POST /upload?format=car)
 *     against a paid upload of 100 MB as a file (POST /upload), same serve, the two taking
 *     turns (which goes first alternates). Each upload has fresh random content of the same
 *     size: the CAR of a file already uploaded holds exactly the blocks pind already has. Both
 *     rates are of the 100 MB of file content (the CAR is ~10 KB larger: its block headers).
 *     The CAR is built before the clock starts (@helia/unixfs: pind's layout, so pind stores
 *     the same blocks either way). Target: car / file ≥ 0.9.
 *   - directory: a paid upload of 10,000 files of 5,000 random bytes each (50 MB; a tree of
 *     100 folders of 100 files, `dNN/fNNNNN.bin`) as one directory (POST /upload?format=directory,
 *     one multipart body of 10,000 parts) against the same files imported by @helia/unixfs's
 *     addAll with IPIP-499's unixfs-v1-2025 profile (pind's) into an FsBlockstore in a temp dir,
 *     in a fresh Node process of its own (as bench-upload.mjs does: no HTTP, no payment, no
 *     ledger, no fsync). The baseline must come to the root pind answered, or the run fails
 *     (it would not be the same work). Target: pind / baseline ≥ 0.7.
 * Both paid exchanges are the whole x402 exchange with the lean client of bench-upload.mjs
 * (unpaid POST → 402 → sign → paid POST → 201). Each figure is the median over the runs; the
 * ratios printed are of the medians, and the median of the per-run ratios for information.
 *
 * Usage: node scripts/bench-site.mjs [--runs 3] [--mb 100] [--files 10000] [--file-bytes 5000]
 *          [--only car,directory] [--quick] [--binary] [--json]
 *   --quick   tiny sizes (2 MB, 200 files, 1 run): checks that it runs; the figures are noise
 *   --binary  run dist/pind (or BENCH_BINARY); default the bundle (node dist/pind.cjs)
 *   --json    a last line with the figures as JSON (scripts/bench.mjs reads it)
 */
import { spawn } from 'node:child_process'
import { createCipheriv, createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { unixfs } from '@helia/unixfs'
import { CarWriter } from '@ipld/car/writer'
import { FsBlockstore } from 'blockstore-fs'
import { request } from 'undici'
import { BINARY, cpuMs, jsonResult, median, paidPost, paidUpload, ROOT, startServe, x402For } from './bench-lib.mjs'
import { startDevChain } from './devchain/index.mjs'

const argv = process.argv.slice(2)
const opt = (name, def) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? Number(argv[i + 1]) : def }
const quick = argv.includes('--quick')
const files = opt('files', quick ? 200 : 10_000)
const fileBytes = opt('file-bytes', 5_000)

/** `count` files of `size` pseudo-random bytes from `seed` (AES-CTR: 50 MB in ~0.1 s), in a tree of folders of 100 */
function siteFiles (seed, count, size) {
  const key = createHash('sha256').update(String(seed)).digest()
  const stream = createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(count * size))
  return Array.from({ length: count }, (_, i) => ({
    path: `d${String(Math.floor(i / 100)).padStart(3, '0')}/f${String(i).padStart(5, '0')}.bin`,
    bytes: stream.subarray(i * size, (i + 1) * size)
  }))
}

if (argv[0] === '--baseline-child') {
  // the baseline, alone in its process: @helia/unixfs addAll with the profile into a fresh FsBlockstore
  const site = siteFiles(argv[1], Number(argv[2]), Number(argv[3]))
  const dir = mkdtempSync(join(tmpdir(), 'pind-bench-site-'))
  try {
    const bs = new FsBlockstore(dir)
    await bs.open()
    const t0 = performance.now()
    let root
    for await (const e of unixfs({ blockstore: bs }).addAll(site.map(f => ({ path: f.path, content: f.bytes })), { profile: 'unixfs-v1-2025', wrapWithDirectory: true })) {
      if (e.path === '') root = e.cid.toString()
    }
    console.log(JSON.stringify({ ms: performance.now() - t0, root }))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  process.exit(0)
}

const runs = opt('runs', quick ? 1 : 3)
const size = opt('mb', quick ? 2 : 100) * 1_000_000
const useBinary = argv.includes('--binary')
const onlyArg = argv.indexOf('--only')
const only = onlyArg >= 0 ? argv[onlyArg + 1].split(',') : ['car', 'directory']
for (const o of only) if (o !== 'car' && o !== 'directory') { console.error(`--only takes car and/or directory, not ${o}`); process.exit(2) }

/** a file's UnixFS DAG (pind's layout: CIDv1, raw leaves, 1 MiB chunks, 1,024 links) as a CARv1 */
async function carOf (bytes) {
  const blocks = []
  const recording = { put: async (cid, b) => { blocks.push({ cid, bytes: Uint8Array.from(b) }); return cid }, has: async () => false, get: async () => { throw new Error('not kept') } }
  const root = await unixfs({ blockstore: recording }).addBytes(bytes, { cidVersion: 1, rawLeaves: true })
  const { writer, out } = CarWriter.create([root])
  const chunks = []
  const done = (async () => { for await (const c of out) chunks.push(c) })()
  // in the order the importer wrote them: leaves first, the root last (as streaming tools such as ipfs-car write them)
  for (const b of blocks) await writer.put(b)
  await writer.close()
  await done
  return { root: root.toString(), car: Buffer.concat(chunks) }
}

const BOUNDARY = 'pind-bench-site-boundary'
/** one multipart body of every file as a `file` part named by its path, as 64 KiB pieces and its length */
function directoryBody (site) {
  const pieces = []
  for (const f of site) {
    pieces.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${f.path}"\r\nContent-Type: application/octet-stream\r\n\r\n`), f.bytes, Buffer.from('\r\n'))
  }
  pieces.push(Buffer.from(`--${BOUNDARY}--\r\n`))
  const whole = Buffer.concat(pieces)
  return { whole, length: whole.length }
}

async function baselineInChild (seed) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--baseline-child', String(seed), String(files), String(fileBytes)], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', b => { out += b })
  const code = await new Promise(resolve => child.once('exit', resolve))
  if (code !== 0) throw new Error(`baseline child exited ${code}`)
  return JSON.parse(out)
}


const chain = await startDevChain({ payers: 1 })
const pind = await startServe({
  ...(useBinary ? {} : { binary: process.execPath, binaryArgs: [join(ROOT, 'dist/pind.cjs')] }),
  args: ['--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo, '--rate-limit-unpaid', '0', '--rate-limit-reads', '0'],
  env: { PIND_SETTLER_KEY: chain.settlerKey }
})
const payer = x402For(chain, chain.payers[0].privateKey)

const t = { file: [], car: [], dir: [], dirBase: [] }
const cpu = { file: [], car: [], dir: [] }
/** runs `f` (a paid upload), timing it and the service's CPU */
async function measured (key, f) {
  const c0 = cpuMs(pind.proc.pid)
  const r = await f()
  cpu[key].push(cpuMs(pind.proc.pid) - c0)
  t[key].push(r.ms)
  return r
}
const rate = (bytes, ms) => (bytes / 1e6) / (ms / 1000)
try {
  console.log(`bench-site: ${only.join(' + ')}, ${runs} run${runs > 1 ? 's' : ''}, ${useBinary ? `binary ${BINARY}` : 'bundle dist/pind.cjs'}, Node ${process.version}, load ${readFileSync('/proc/loadavg', 'utf8').trim()}`)
  // warm-up: one small paid upload of each kind, so the first measured run does not pay for cold paths
  await paidUpload(pind.url, randomBytes(1_000_000), payer)
  await paidUpload(pind.url, (await carOf(randomBytes(1_000_000))).car, payer, '/upload?format=car')
  for (let i = 0; i < runs; i++) {
    if (only.includes('car')) {
      const file = randomBytes(size)
      const { root, car } = await carOf(randomBytes(size))
      const asFile = async () => await measured('file', async () => await paidUpload(pind.url, file, payer))
      const asCar = async () => {
        const r = await measured('car', async () => await paidUpload(pind.url, car, payer, '/upload?format=car'))
        if (r.body.cid !== root) throw new Error(`the CAR was pinned as ${r.body.cid}, its root is ${root}`)
      }
      if (i % 2 === 0) { await asFile(); await asCar() } else { await asCar(); await asFile() }
      console.log(`  run ${i + 1}: file ${t.file.at(-1).toFixed(0)} ms, CAR (${car.length} bytes) ${t.car.at(-1).toFixed(0)} ms`)
    }
    if (only.includes('directory')) {
      const seed = randomBytes(8).toString('hex')
      const { whole, length } = directoryBody(siteFiles(seed, files, fileBytes))
      const post = async (headers) => await request(`${pind.url}/upload?format=directory`, {
        method: 'POST',
        body: (function * () { for (let o = 0; o < whole.length; o += 65536) yield whole.subarray(o, o + 65536) })(),
        headers: { ...headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(length) }
      })
      const r = await measured('dir', async () => await paidPost(post, payer))
      if (r.body.files?.length !== files) throw new Error(`the directory upload answered ${r.body.files?.length} files, not ${files}`)
      const base = await baselineInChild(seed)
      if (base.root !== r.body.cid) throw new Error(`@helia/unixfs came to ${base.root}, pind to ${r.body.cid}: not the same import`)
      t.dirBase.push(base.ms)
      console.log(`  run ${i + 1}: directory ${t.dir.at(-1).toFixed(0)} ms, @helia/unixfs ${base.ms.toFixed(0)} ms`)
    }
  }
  const line = (name, bytes, xs) => `${name.padEnd(58)} median ${median(xs).toFixed(0).padStart(6)} ms  ${rate(bytes, median(xs)).toFixed(1).padStart(6)} MB/s  (${xs.map(x => x.toFixed(0)).join(', ')})`
  const perRun = (a, b) => a.map((x, i) => b[i] / x)
  const figures = { quick, runs, binary: useBinary }
  if (only.includes('car')) {
    const mb = size / 1e6
    console.log(line(`paid upload, ${mb} MB as a file`, size, t.file))
    console.log(line(`paid upload, ${mb} MB as a CAR (?format=car)`, size, t.car))
    const ratio = median(t.file) / median(t.car)
    console.log(`ratio CAR / file: ${ratio.toFixed(2)} (target >= 0.90); per run ${perRun(t.car, t.file).map(r => r.toFixed(2)).join(', ')}`)
    console.log(`  service CPU per upload (user + system): file ${median(cpu.file).toFixed(0)} ms, CAR ${median(cpu.car).toFixed(0)} ms`)
    Object.assign(figures, { mb, fileMBps: rate(size, median(t.file)), carMBps: rate(size, median(t.car)), carRatio: ratio, fileMs: t.file, carMs: t.car, fileCpuMs: cpu.file, carCpuMs: cpu.car })
  }
  if (only.includes('directory')) {
    const bytes = files * fileBytes
    console.log(line(`paid directory upload, ${files} files of ${fileBytes} bytes`, bytes, t.dir))
    console.log(line('baseline: @helia/unixfs addAll into FsBlockstore, no HTTP', bytes, t.dirBase))
    const ratio = median(t.dirBase) / median(t.dir)
    console.log(`ratio directory / baseline: ${ratio.toFixed(2)} (target >= 0.70); per run ${perRun(t.dir, t.dirBase).map(r => r.toFixed(2)).join(', ')}`)
    console.log(`  service CPU per directory upload (user + system): ${median(cpu.dir).toFixed(0)} ms`)
    Object.assign(figures, { files, fileBytes, dirMB: bytes / 1e6, dirMBps: rate(bytes, median(t.dir)), dirBaselineMBps: rate(bytes, median(t.dirBase)), dirRatio: ratio, dirMs: t.dir, dirBaselineMs: t.dirBase, dirCpuMs: cpu.dir })
  }
  jsonResult(figures)
} finally {
  await pind.stop()
  await chain.stop()
}
