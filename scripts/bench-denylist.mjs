#!/usr/bin/env node
/**
 * Denylists the size of Bad Bits: load time, memory and lookup cost of pind's
 * compiled lists (src/denylist/), against a baseline measured in the same run.
 *
 * 1. A generated list of --entries (default 500,000) legacy double hashes
 *    (`//<sha256 hex of CIDv1-base32/>`, the Bad Bits format, with its
 *    header), plus a tenth as many modern `//<b58 multihash>` entries.
 * 2. In fresh processes (so memory is theirs alone): pind's reader
 *    (readDenylistFile, bundled from src/ with esbuild) vs the obvious
 *    implementation, a Set of the hex strings read line by line — the load
 *    time, the memory the list holds once loaded (RSS, heap, array buffers,
 *    after gc), and the time per lookup of a CID that is listed and of one
 *    that is not (pind checks every key type the spec asks for; the
 *    baseline only the legacy hash).
 * 3. The service (the binary, or --bundle): start to the first /health 200
 *    and RSS, without and with --denylist; how long an appended line takes
 *    to apply (fs.watch, debounced); and the rate of gateway requests for a
 *    CID pind does not hold (each one checked against the list) with and
 *    without it.
 *
 * Usage: node scripts/bench-denylist.mjs [--entries 500000] [--lookups 200000] [--bundle]
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { appendFileSync, closeSync, createReadStream, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { base32 } from 'multiformats/bases/base32'
import { base58btc } from 'multiformats/bases/base58'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { Pool } from 'undici'
import { ROOT, rss, startServe } from './bench-lib.mjs'

const argv = process.argv.slice(2)
const opt = (name, def) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? Number(argv[i + 1]) : def }
const SELF = fileURLToPath(import.meta.url)

/** the i-th listed CID: a dag-pb CIDv1 of a made-up block */
const listedCid = (i) => CID.createV1(0x70, Digest.create(0x12, createHash('sha256').update(`listed ${i}`).digest()))
/** a CID on no list */
const otherCid = (i) => CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`other ${i}`).digest()))
const legacy = (cid) => createHash('sha256').update(`${cid.toV1().toString(base32)}/`).digest('hex')
const modern = (cid) => base58btc.baseEncode(Digest.create(0x12, createHash('sha256').update(base58btc.baseEncode(cid.multihash.bytes)).digest()).bytes)
const mib = (b) => b / 1024 / 1024

if (argv[0] === '--child') await child(argv[1], argv[2], argv[3], Number(argv[4]), Number(argv[5]))
else await main()

async function main () {
  const entries = opt('entries', 500_000)
  const lookups = opt('lookups', 200_000)
  const dir = mkdtempSync(join(tmpdir(), 'pind-bench-deny-'))
  try {
    const file = join(dir, 'badbits.deny')
    const modernCount = Math.floor(entries / 10)
    let t0 = performance.now()
    const fd = openSync(file, 'w')
    writeSync(fd, 'version: 1\nname: generated (Bad Bits format)\nhints:\n  gateway_status: 410\n  double_hash_fn: sha256\n  double_hash_enc: hex\n---\n')
    let buf = ''
    for (let i = 0; i < entries + modernCount; i++) {
      buf += i < entries ? `//${legacy(listedCid(i))}\n` : `//${modern(listedCid(i))}\n`
      if (buf.length > 1 << 20) { writeSync(fd, buf); buf = '' }
    }
    writeSync(fd, buf)
    closeSync(fd)
    console.log(`list: ${entries} legacy + ${modernCount} modern double hashes, ${mib(statSync(file).size).toFixed(1)} MiB, written in ${Math.round(performance.now() - t0)} ms`)

    // pind's reader, bundled from the sources as serve runs it
    t0 = performance.now()
    const lib = join(dir, 'denylist-lib.mjs')
    const { build } = await import('esbuild')
    await build({
      stdin: { contents: "export { readDenylistFile } from './src/denylist/read-file.ts'\nexport { Probe } from './src/denylist/compiled.ts'\n", resolveDir: ROOT, loader: 'ts' },
      bundle: true, platform: 'node', format: 'esm', target: 'node24', outfile: lib, logLevel: 'error'
    })

    const run = (kind) => {
      const r = spawnSync(process.execPath, ['--expose-gc', SELF, '--child', kind, file, lib, String(entries + modernCount), String(lookups)], { encoding: 'utf8', maxBuffer: 1 << 20 })
      if (r.status !== 0) throw new Error(`${kind}: ${r.stderr}`)
      return JSON.parse(r.stdout)
    }
    const base = run('set')
    const pind = run('pind')
    const row = (name, a, b, unit, digits = 0) => console.log(`${name.padEnd(34)} ${a.toFixed(digits).padStart(9)} ${b.toFixed(digits).padStart(12)} ${unit.padEnd(5)} ${(a / b).toFixed(2).padStart(7)}`)
    console.log(`\nin-process (fresh processes, after gc)   pind   Set<hex>     unit   ratio`)
    row('load', pind.loadMs, base.loadMs, 'ms')
    row('RSS held by the list', pind.rssMiB, base.rssMiB, 'MiB', 1)
    row('heap + array buffers held', pind.heldMiB, base.heldMiB, 'MiB', 1)
    row('peak RSS while loading', pind.peakMiB, base.peakMiB, 'MiB', 1)
    row('lookup, listed CID', pind.hitUs, base.hitUs, 'µs', 2)
    row('lookup, CID not listed', pind.missUs, base.missUs, 'µs', 2)
    console.log(`(pind's lookup tables: ${pind.tablesMiB.toFixed(1)} MiB; pind: ${pind.found}/${lookups} listed found, ${pind.falsePositives} false positives; Set: ${base.found}/${lookups} found — it holds no modern entries)`)

    await serviceBench(file, dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function child (kind, file, lib, listed, lookups) {
  for (let i = 0; i < 3; i++) { gc(); await new Promise(resolve => setTimeout(resolve, 50)) }
  const before = process.memoryUsage()
  let check
  let tables
  const t0 = performance.now()
  if (kind === 'pind') {
    const { readDenylistFile, Probe } = await import(lib)
    const { list } = await readDenylistFile(file)
    globalThis.keep = list
    tables = list.byteSize
    check = (cid) => { const m = list.match(new Probe(cid), ''); return m != null && !m.allow }
  } else {
    const set = new Set()
    let header = true
    for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
      if (header) { header = line !== '---'; continue }
      if (line.startsWith('//')) set.add(line.slice(2))
    }
    globalThis.keep = set
    check = (cid) => set.has(legacy(cid))
  }
  const loadMs = performance.now() - t0
  const peakMiB = rss(process.pid).peakMiB
  // freed array buffers are released after a full collection and a turn of the event loop
  for (let i = 0; i < 3; i++) { gc(); await new Promise(resolve => setTimeout(resolve, 50)) }
  const after = process.memoryUsage()
  const held = (m) => m.heapUsed + m.arrayBuffers
  const hits = Array.from({ length: lookups }, (_, i) => listedCid((i * 7919) % listed))
  const misses = Array.from({ length: lookups }, (_, i) => otherCid(i))
  let found = 0
  let t = performance.now()
  for (const c of hits) if (check(c)) found++
  const hitUs = (performance.now() - t) * 1000 / lookups
  let falsePositives = 0
  t = performance.now()
  for (const c of misses) if (check(c)) falsePositives++
  const missUs = (performance.now() - t) * 1000 / lookups
  process.stdout.write(JSON.stringify({ tablesMiB: tables != null ? mib(tables) : undefined, loadMs, rssMiB: mib(after.rss - before.rss), heldMiB: mib(held(after) - held(before)), peakMiB, hitUs, missUs, found, falsePositives }))
}

async function serviceBench (file, dir) {
  const bundle = argv.includes('--bundle')
  const how = bundle ? { binary: process.execPath, binaryArgs: [join(ROOT, 'dist/pind.cjs')] } : {}
  const listDir = join(dir, 'lists')
  mkdirSync(listDir)
  renameSync(file, join(listDir, 'badbits.deny'))
  const results = {}
  for (const [name, args] of [['without a denylist', []], ['with the list', ['--denylist', listDir]]]) {
    const s = await startServe({ ...how, args: ['--rate-limit-reads', '0', ...args] })
    const started = rss(s.proc.pid).rssMiB
    try {
      const pool = new Pool(s.url, { connections: 16 })
      const rate = await rateOf(pool, `/ipfs/${otherCid(1)}`, 3000)
      let applyMs
      if (args.length > 0) {
        const target = otherCid(2)
        const t0 = performance.now()
        appendFileSync(join(listDir, 'badbits.deny'), `//${legacy(target)}\n`)
        for (;;) {
          const r = await fetch(`${s.url}/ipfs/${target}`)
          await r.arrayBuffer()
          if (r.status === 410) break
          if (performance.now() - t0 > 60_000) throw new Error('the appended line never applied')
          await new Promise(resolve => setTimeout(resolve, 5))
        }
        applyMs = performance.now() - t0
      }
      results[name] = { startMs: s.ms, rssMiB: started, rate, applyMs, rssAfterMiB: rss(s.proc.pid).rssMiB }
      await pool.close()
    } finally {
      await s.stop()
    }
  }
  const a = results['with the list']
  const b = results['without a denylist']
  console.log(`\nthe service (${bundle ? 'bundle' : 'binary'})                with list   without     unit   ratio`)
  const row = (name, x, y, unit, digits = 0) => console.log(`${name.padEnd(34)} ${x.toFixed(digits).padStart(9)} ${y.toFixed(digits).padStart(9)}     ${unit.padEnd(6)} ${(x / y).toFixed(2).padStart(6)}`)
  row('start to first /health 200', a.startMs, b.startMs, 'ms')
  row('RSS after start', a.rssMiB, b.rssMiB, 'MiB', 1)
  row('RSS after the requests (+ a reload)', a.rssAfterMiB, b.rssAfterMiB, 'MiB', 1)
  row('GET /ipfs/<not held> rate', a.rate, b.rate, 'req/s')
  console.log(`an appended line applied (fs.watch, 200 ms debounce, re-read of the whole list) in ${Math.round(a.applyMs)} ms`)
}

/** completed requests per second over `ms`, 16 connections back to back (404s expected) */
async function rateOf (pool, path, ms) {
  let count = 0
  let done = false
  const end = performance.now() + ms
  const loop = async () => {
    while (!done) {
      const r = await pool.request({ method: 'GET', path })
      await r.body.dump()
      if (r.statusCode !== 404) throw new Error(`expected 404, got ${r.statusCode}`)
      if (performance.now() > end) { done = true; break }
      count++
    }
  }
  await Promise.all(Array.from({ length: 16 }, loop))
  return count / (ms / 1000)
}
