#!/usr/bin/env node
/**
 * `pind gc` on a stopped data dir holding N raw blocks (1–4 KiB, random), half
 * referenced in the ledger's `block-refs` and half unreachable. Reports setup
 * time, `gc --dry-run` wall time, then `gc` wall time (spawn → exit), gc's own
 * `ms`, scanned/removed/kept, freed bytes and the gc process's peak RSS (VmHWM,
 * polled). Checks afterwards that exactly N/2 files remain and that every
 * referenced block is still there.
 * Baseline in the same run: plain Node walking an identical second tree with
 * fs.opendir and unlinking the same unreferenced half (Set lookup + unlink, no
 * ledger, no stat, no process start) — gc/baseline is the ratio of those times.
 * Usage: node scripts/bench-gc.mjs [blocks=100000] [--binary]   (default runs
 * the bundle: node dist/pind.cjs; --binary runs dist/pind)
 */
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { mkdir, opendir, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NextToLast } from 'blockstore-fs/sharding'
import { open } from 'lmdb'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { BINARY, ROOT, rss } from './bench-lib.mjs'

const N = Number(process.argv.slice(2).find(a => /^\d+$/.test(a)) ?? 100_000)
const useBinary = process.argv.includes('--binary')
const [bin, binArgs] = useBinary ? [BINARY, []] : [process.execPath, [join(ROOT, 'dist/pind.cjs')]]
const SHARDING = new NextToLast()
const rawCid = (bytes) => CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(bytes).digest()))
const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`

const tmp = mkdtempSync(join(tmpdir(), 'pind-bench-gc-'))
const dataDir = join(tmp, 'data')
const blocksA = join(dataDir, 'blocks')
const blocksB = join(tmp, 'baseline-blocks')

/** Spawns `pind gc`, polling VmHWM while it runs; resolves with wall ms, parsed JSON and peak RSS. */
function runGc (extra) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const p = spawn(bin, [...binArgs, 'gc', '--json', '--data-dir', dataDir, ...extra], {
      stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PIND_DATA_DIR: dataDir }
    })
    let out = ''; let err = ''; let peak = 0
    p.stdout.on('data', b => { out += b })
    p.stderr.on('data', b => { err += b })
    const poll = () => { try { const v = rss(p.pid).peakMiB; if (Number.isFinite(v)) peak = Math.max(peak, v) } catch {} } // NaN once a zombie
    const timer = setInterval(poll, 5)
    p.on('error', reject)
    p.on('exit', (code) => {
      const ms = performance.now() - t0
      clearInterval(timer)
      if (code !== 0) return reject(new Error(`pind gc exited ${code}: ${err}`))
      resolve({ ms, res: JSON.parse(out.trim().split('\n').pop()), peakMiB: peak })
    })
  })
}

try {
  // ---- setup: N blocks in both trees, half referenced in the ledger
  const t0 = performance.now()
  const referenced = [] // { cid, dir, file }
  let unrefBytes = 0
  let next = 0
  const worker = async () => {
    while (next < N) {
      const i = next++
      const bytes = randomBytes(1024 + Math.floor(Math.random() * 3073))
      const cid = rawCid(bytes)
      const { dir, file } = SHARDING.encode(cid)
      await Promise.all([writeFile(join(blocksA, dir, file), bytes), writeFile(join(blocksB, dir, file), bytes)])
      if (i % 2 === 0) referenced.push({ cid: cid.toString(), dir, file })
      else unrefBytes += bytes.length
    }
  }
  // all 32×32 NextToLast shard folders up front, so the writers never race on mkdir
  const b32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'
  for (const a of b32) for (const b of b32) for (const t of [blocksA, blocksB]) await mkdir(join(t, a + b), { recursive: true })
  await Promise.all(Array.from({ length: 64 }, worker))
  await mkdir(join(dataDir, 'staging'), { recursive: true }) // keys/ and identity are left for pind to create (keys/ must be 0700)
  const root = open({ path: join(dataDir, 'ledger.mdb'), maxDbs: 32, compression: false, mapSize: 2 ** 36 })
  const meta = root.openDB({ name: 'meta' })
  const refs = root.openDB({ name: 'block-refs' })
  await meta.transaction(() => {
    meta.put('schemaVersion', 1)
    meta.put('created', new Date().toISOString())
    meta.put('expiryGrace', 604800)
    meta.put('index:pins-by-expiry', true)
  })
  for (let i = 0; i < referenced.length; i += 10_000) {
    await refs.transaction(() => { for (const r of referenced.slice(i, i + 10_000)) refs.put(r.cid, 1) })
  }
  await root.close()
  const setupMs = performance.now() - t0
  console.log(`setup: ${N} blocks (${referenced.length} referenced, ${N - referenced.length} unreachable, ${mib(unrefBytes)} unreachable) ×2 trees + ledger in ${(setupMs / 1000).toFixed(1)} s`)
  console.log(`running ${useBinary ? 'dist/pind (binary)' : 'node dist/pind.cjs (bundle)'}`)

  // ---- dry run, then the real gc
  const dry = await runGc(['--dry-run'])
  console.log(`gc --dry-run: wall ${dry.ms.toFixed(0)} ms, reported ${dry.res.ms} ms, would remove ${dry.res.removedBlocks} of ${dry.res.scannedBlocks} (${mib(dry.res.freedBytes)}), peak RSS ${dry.peakMiB.toFixed(1)} MiB`)
  const gc = await runGc([])
  const r = gc.res
  console.log(`gc: via ${r.via}; marked ${r.markedBlocks}, scanned ${r.scannedBlocks}, removed ${r.removedBlocks}, kept ${r.keptBlocks}, expired pins ${r.expiredPins}`)
  console.log(`gc: freed ${r.freedBytes} bytes (${mib(r.freedBytes)}; expected ${unrefBytes})`)
  console.log(`gc: wall ${gc.ms.toFixed(0)} ms (spawn → exit), reported ${r.ms} ms, peak RSS ${gc.peakMiB.toFixed(1)} MiB`)

  // ---- verify
  let remaining = 0
  for (const d of readdirSync(blocksA)) remaining += readdirSync(join(blocksA, d)).filter(f => f.endsWith('.data')).length
  const missing = referenced.filter(x => !existsSync(join(blocksA, x.dir, x.file))).length
  const ok = remaining === referenced.length && missing === 0 && r.removedBlocks === N - referenced.length &&
    r.keptBlocks === referenced.length && r.freedBytes === unrefBytes && dry.res.removedBlocks === r.removedBlocks
  console.log(`verify: ${remaining} files remain (expected ${referenced.length}), ${missing} referenced blocks missing → ${ok ? 'OK' : 'FAIL'}`)
  if (!ok) process.exitCode = 1

  // ---- baseline: bare opendir walk + unlink of the same half in tree B
  const keep = new Set(referenced.map(x => x.file))
  const b0 = performance.now()
  let bRemoved = 0
  for await (const dir of await opendir(blocksB)) {
    if (!dir.isDirectory()) continue
    for await (const f of await opendir(join(blocksB, dir.name))) {
      if (!f.isFile() || !f.name.endsWith('.data') || keep.has(f.name)) continue
      await unlink(join(blocksB, dir.name, f.name))
      bRemoved++
    }
  }
  const baseMs = performance.now() - b0
  console.log(`baseline (node opendir + unlink, no ledger, in-process): removed ${bRemoved} in ${baseMs.toFixed(0)} ms`)
  console.log(`ratio: gc wall/baseline ${(gc.ms / baseMs).toFixed(2)}x, gc reported ms/baseline ${(r.ms / baseMs).toFixed(2)}x`)
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
