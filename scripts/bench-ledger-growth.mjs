#!/usr/bin/env node
/**
 * What each paid write leaves in ledger.mdb, measured in bytes and pages, not
 * time: the ledger's code (src/ledger/, bundled with esbuild) is driven
 * through the calls serve's write paths make, for `writes` paid writes, and
 * the same is done with the ledger code of a baseline git ref (default main)
 * in the same run. Per write, as the soak's clients do: a settlement note
 * (markSettling) with what reconciliation would need, then the record
 * (create: pin, payment, block references); a pin by CID (one write in five)
 * goes queued → finishFetch; most writes are removed later (each client
 * keeps its newest `live`, as the soak does), some renewed first. Sixteen
 * payers, random EIP-3009 nonces, one seed: both sides write the same.
 *
 * Prints, for each side, the bytes per paid write of every sub-database
 * (whole pages: scripts/ledger-stats.mjs), each one's leaf-page fill (bytes
 * of its nodes, as lmdb lays them out, over its leaf pages' room), the free
 * pages, the file, and the file-backed RSS of the ledger's mapping after a
 * full scan of every sub-database in a fresh process (lmdb maps the file:
 * what a long-running serve that reads everything keeps resident); then the
 * ratios of this tree to the baseline.
 *
 * With --upgrade, the baseline's ledger is then opened with this tree's code
 * (as a data dir is when pind is upgraded): its exports (JSON Lines with
 * blocks, CSV pins, CSV payments) before the upgrade steps, how long they
 * take, the exports after them (each must be byte for byte the baseline's
 * own), and what the file is then.
 *
 * Usage: node scripts/bench-ledger-growth.mjs [writes=20000] [--against <git-ref>=main] [--live 24] [--seed 1] [--upgrade] [--json file]
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { open } from 'lmdb'
import { formatLedgerStats, ledgerStats } from './ledger-stats.mjs'
import { bundleAtRef } from './bundle-ref.mjs'

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)))
const SELF = fileURLToPath(import.meta.url)
const CACHE = join(ROOT, 'node_modules', '.cache', 'bench-ledger-growth')
const PAYERS = 16

const ENTRY = `
export { openLedgerEnv } from './src/ledger/lmdb/open.ts'
export { PinLedger } from './src/ledger/lmdb/pins.ts'
export { nextCreated, addMonths } from './src/ledger/clock.ts'
export { newRequestid } from './src/ledger/requestid.ts'
export { exportLedger, parseExportOptions } from './src/service/admin/ledger-export.ts'
`
/** the ledger contract over LMDB: exports read through it where the code has it (before it, they read the PinLedger) */
const CONTRACT = 'src/ledger/lmdb/ledger.ts'

/** src/ledger of this tree (ref undefined) or of a git ref, bundled into one module (lmdb stays external: it resolves from this tree's node_modules) */
async function bundle (ref) {
  const hasContract = ref == null
    ? existsSync(join(ROOT, CONTRACT))
    : spawnSync('git', ['-C', ROOT, 'cat-file', '-e', `${ref}:${CONTRACT}`]).status === 0
  const contents = hasContract ? `${ENTRY}export { LmdbLedger } from './${CONTRACT}'\n` : ENTRY
  return await bundleAtRef({ contents, cache: CACHE, name: 'ledger', ref })
}

/** a deterministic PRNG (mulberry32) */
function prng (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const EXPORTS = [{ format: 'jsonl', withBlocks: true }, { format: 'csv', records: 'pins' }, { format: 'csv', records: 'payments' }]
const EXPORT_NOW = new Date('2030-01-01T00:00:00.000Z')

/** sha256 of each export of the ledger (`env`, read by `ledger`: a PinLedger), with one side's code */
async function exportHashes (lib, env, ledger) {
  const { exportLedger, parseExportOptions, LmdbLedger } = await import(lib)
  const { createHash } = await import('node:crypto')
  const source = LmdbLedger != null ? new LmdbLedger(env, ledger) : ledger
  const hashes = []
  for (const o of EXPORTS) {
    const h = createHash('sha256')
    // async chunks (the contract) or sync ones (before it): for await reads either
    for await (const c of exportLedger(source, parseExportOptions(o), EXPORT_NOW).chunks) h.update(c)
    hashes.push(h.digest('hex'))
  }
  return hashes
}

/** the child with --upgrade: the baseline's ledger opened by this tree's code, exported before and after its upgrade steps */
async function upgradeChild (lib, dir) {
  const { openLedgerEnv, PinLedger } = await import(lib)
  const env = await openLedgerEnv(join(dir, 'ledger.mdb'))
  const before = await exportHashes(lib, env, new PinLedger(env))
  const t0 = performance.now()
  await new PinLedger(env).upgrade()
  const ms = performance.now() - t0
  const after = await exportHashes(lib, env, new PinLedger(env))
  await env.close()
  process.stdout.write(JSON.stringify({ before, after, ms, stats: ledgerStats(dir) }))
}

/**
 * Drives `ledger` through the calls serve's write paths make, `n` paid writes
 * from `payers` payers: per write a settlement note (markSettling) with what
 * reconciliation would need, then the record (create: pin, payment, block
 * references); a pin by CID (a share `byCid` of the writes) goes queued →
 * finishFetch; a share `renew` is renewed once; each payer keeps its newest
 * `live` and removes the rest, as the soak's clients do. One seed: every run,
 * and both sides of the bench, write the same. `clock`: the ledger code's own
 * nextCreated, addMonths and newRequestid (this tree's, or a baseline's bundle).
 * test/unit/ledger/footprint.test.ts writes its uploads with this too.
 */
export async function paidWrites (clock, ledger, { n, live, seed, payers: payerCount = PAYERS, byCid: byCidShare = 0.2, renew: renewShare = 0.05, maxBlocks = 4 }) {
  const { nextCreated, addMonths, newRequestid } = clock
  const { CID } = await import('multiformats/cid')
  const { sha256 } = await import('multiformats/hashes/sha2')
  const raw = 0x55
  const rnd = prng(seed)
  const hex = (bytes) => { let s = ''; for (let i = 0; i < bytes; i++) s += Math.floor(rnd() * 256).toString(16).padStart(2, '0'); return s }
  const payers = Array.from({ length: payerCount }, () => `0x${hex(20)}`)
  const asset = `0x${'036cbd53842c5426634e7929541ec2318f3dcf7e'}`
  const network = 'eip155:84532'
  let blockSeq = 0
  const cidOf = async () => CID.create(1, raw, await sha256.digest(Buffer.from(`block-${seed}-${blockSeq++}`))).toString()

  const held = payers.map(() => [])
  for (let i = 0; i < n; i++) {
    const p = i % payerCount
    const payer = payers[p]
    const nonce = `0x${hex(32)}`
    const id = `${payer}:${nonce}`
    const proof = hex(32)
    const byCid = rnd() < byCidShare
    const blocks = []
    const nBlocks = 1 + Math.floor(rnd() * maxBlocks)
    for (let b = 0; b < nBlocks; b++) blocks.push(await cidOf())
    const cid = blocks[0]
    const created = nextCreated()
    const createdAt = new Date(Math.floor(created.us / 1000))
    const months = 1 + Math.floor(rnd() * 3)
    const amount = String(1000 + Math.floor(rnd() * 100000))
    const size = 1000 + Math.floor(rnd() * 60_000_000)
    const pin = {
      requestid: newRequestid(createdAt.getTime()), owner: payer, cid, ...(byCid ? {} : { name: 'soak.bin' }),
      origins: byCid ? ['/ip4/127.0.0.1/tcp/40123/p2p/12D3KooWRBy97UB99e3J6hiPesre1MZeuNQvfan4gBziswrRJsNK'] : [], meta: {},
      status: byCid ? 'queued' : 'pinned', created: created.iso, createdUs: created.us, months,
      pinnedUntil: addMonths(createdAt, months).toISOString(),
      ...(byCid ? { maxBytes: size, fetch: { attempts: 0, giveUpAt: new Date(createdAt.getTime() + 3600_000).toISOString() } } : { dagSize: size + 100, fileSize: size }),
      source: byCid ? 'pin' : 'upload',
      payment: { id, payer, amount, network, asset, method: 'x402' }
    }
    const purpose = byCid ? `pin:${cid}:${months}` : `upload:${cid}`
    await ledger.markSettling({
      paymentId: id, payer, amount, purpose, at: new Date().toISOString(), validBefore: String(Math.floor(Date.now() / 1000) + 300),
      fulfil: { proof, pin, ...(byCid ? {} : { upload: { staging: `stage-${i}`, blocks } }) }
    })
    const tx = `0x${hex(32)}`
    const settledAt = new Date().toISOString()
    const paid = { ...pin, payment: { ...pin.payment, tx, settledAt } }
    const record = { id, requestid: pin.requestid, purpose, payer, amount, network, tx, at: settledAt, proof }
    await ledger.create(paid, record, byCid ? [] : blocks)
    if (byCid) await ledger.finishFetch(pin.requestid, blocks, size + 100, 'pinned from 1 provider')
    held[p].push(pin.requestid)
    if (rnd() < renewShare) {
      // a renewal: another payment for the same pin
      const rn = `${payer}:0x${hex(32)}`
      const renewed = ledger.get(pin.requestid)
      const until = addMonths(new Date(renewed.pinnedUntil), 1)
      await ledger.renew(pin.requestid, 1, { id: rn, requestid: pin.requestid, purpose: `renew:${pin.requestid}:1:${renewed.pinnedUntil}`, payer, amount, network, tx: `0x${hex(32)}`, at: new Date().toISOString(), proof: hex(32) }, () => until)
    }
    while (held[p].length > live) await ledger.remove(held[p].shift(), 'unpinned')
  }
}

/** the child: writes `n` paid writes with one side's ledger code, then measures */
async function child (lib, dir, n, live, seed, keep) {
  const code = await import(lib)
  const { openLedgerEnv, PinLedger } = code
  const env = await openLedgerEnv(join(dir, 'ledger.mdb'))
  const ledger = new PinLedger(env)
  await ledger.upgrade()
  await paidWrites(code, ledger, { n, live, seed })
  const exports = keep ? await exportHashes(lib, env, new PinLedger(env)) : undefined
  await env.close()

  const stats = ledgerStats(dir, { fill: true })
  // a fresh process's view after reading everything: the mapping's resident pages
  const root = open({ path: join(dir, 'ledger.mdb'), maxDbs: 64, readOnly: true, compression: false })
  let scanned = 0
  for (const name of [...root.getKeys()].map(String)) {
    const db = root.openDB({ name, encoding: 'binary', keyEncoding: 'binary' })
    for (const { key, value } of db.getRange()) scanned += key.length + value.length
  }
  const rss = mappedRss(join(dir, 'ledger.mdb'))
  await root.close()
  process.stdout.write(JSON.stringify({ stats, rss, scanned, exports }))
}

/** resident bytes of this process's mappings of `file` (/proc/self/smaps) */
function mappedRss (file) {
  let rss = 0
  let inFile = false
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inFile = line.trimEnd().endsWith(file)
    else if (inFile && line.startsWith('Rss:')) rss += Number(line.split(/\s+/)[1]) * 1024
  }
  return rss
}

function runChild (args) {
  const r = spawnSync(process.execPath, [SELF, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 })
  if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

/** one side's writes and figures; with `upgradeLib`, then that code's upgrade of the same data dir */
function runSide (lib, n, live, seed, upgradeLib) {
  const dir = mkdtempSync(join(tmpdir(), 'pind-ledger-growth-'))
  try {
    const side = runChild(['--child', lib, dir, String(n), String(live), String(seed), upgradeLib != null ? 'keep' : ''])
    if (upgradeLib != null) side.upgrade = runChild(['--upgrade-child', upgradeLib, dir])
    return side
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function main () {
  const args = process.argv.slice(2)
  if (args[0] === '--child') return await child(args[1], args[2], Number(args[3]), Number(args[4]), Number(args[5]), args[6] === 'keep')
  if (args[0] === '--upgrade-child') return await upgradeChild(args[1], args[2])
  const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def }
  const n = Number(args.find((a, j) => !a.startsWith('--') && !args[j - 1]?.startsWith('--')) ?? 20000)
  const against = opt('--against', 'main')
  const live = Number(opt('--live', 24))
  const seed = Number(opt('--seed', 1))
  const json = opt('--json')
  console.log(`${n} paid writes, ${PAYERS} payers, each keeping its newest ${live}; baseline ${against}; load average ${loadavg()[0].toFixed(1)}`)
  const [baseLib, treeLib] = [await bundle(against), await bundle()]
  const base = runSide(baseLib, n, live, seed, args.includes('--upgrade') ? treeLib : undefined)
  const tree = runSide(treeLib, n, live, seed)
  const mib = (b) => (b / 2 ** 20).toFixed(1)
  for (const [name, r] of [[against, base], ['this tree', tree]]) {
    console.log(`\n${name}:`)
    for (const l of formatLedgerStats(r.stats, n)) console.log(l)
    console.log(`  file-backed RSS of ledger.mdb after a full scan: ${mib(r.rss)} MiB, ${(r.rss / n).toFixed(0)} B per paid write`)
  }
  console.log(`\nthis tree / ${against}:`)
  const names = [...new Set([...Object.keys(base.stats.dbs), ...Object.keys(tree.stats.dbs)])]
  for (const db of names.sort()) {
    const a = base.stats.dbs[db]?.bytes ?? 0
    const b = tree.stats.dbs[db]?.bytes ?? 0
    if (a === 0 && b === 0) continue
    console.log(`  ${db.padEnd(22)} ${(a / n).toFixed(0).padStart(6)} → ${(b / n).toFixed(0).padStart(6)} B/write  ${a > 0 ? (b / a).toFixed(2) : '—'}`)
  }
  const free = (r) => r.stats.freePages * r.stats.pageSize
  console.log(`  ${'(free pages)'.padEnd(22)} ${(free(base) / n).toFixed(0).padStart(6)} → ${(free(tree) / n).toFixed(0).padStart(6)} B/write`)
  console.log(`  ${'ledger.mdb'.padEnd(22)} ${(base.stats.fileBytes / n).toFixed(0).padStart(6)} → ${(tree.stats.fileBytes / n).toFixed(0).padStart(6)} B/write  ${(tree.stats.fileBytes / base.stats.fileBytes).toFixed(2)}`)
  console.log(`  ${'RSS of its mapping'.padEnd(22)} ${(base.rss / n).toFixed(0).padStart(6)} → ${(tree.rss / n).toFixed(0).padStart(6)} B/write  ${(tree.rss / base.rss).toFixed(2)}`)
  if (base.upgrade != null) {
    const u = base.upgrade
    const same = (a, b) => a.every((h, i) => h === b[i])
    console.log(`\n${against}'s ledger opened by this tree: upgrade steps ${u.ms.toFixed(0)} ms; exports (JSON Lines with blocks, CSV pins, CSV payments) before them ${same(u.before, base.exports) ? 'byte for byte' : 'NOT'} the same as ${against}'s, after them ${same(u.after, base.exports) ? 'byte for byte' : 'NOT'} the same; ledger.mdb then ${mib(u.stats.fileBytes)} MiB (lmdb does not shrink its file: freed pages are reused), payments ${((u.stats.dbs.payments?.bytes ?? 0) / n).toFixed(0)} + payments-binary ${((u.stats.dbs['payments-binary']?.bytes ?? 0) / n).toFixed(0)}, pins ${((u.stats.dbs.pins?.bytes ?? 0) / n).toFixed(0)} B per write, free pages ${(u.stats.freePages * u.stats.pageSize / n).toFixed(0)}`)
    if (!same(u.before, base.exports) || !same(u.after, base.exports)) process.exitCode = 1
  }
  if (json != null) writeFileSync(json, JSON.stringify({ writes: n, against, live, seed, base, tree }, null, 1))
}

if (process.argv[1] === SELF) await main()
