/**
 * What each archive pass leaves in the process's anonymous memory: the
 * archive's code (src/ledger/lmdb/archive.ts, bundled with esbuild) of this tree
 * and of a baseline git ref (default main), each in its own process with
 * serve's malloc and young-generation settings (docs/runtime.md),
 * runs `passes` passes of `pins` pins and their payments, as
 * PinLedger.archiveDue does: the archive opened, the records put in one
 * commit, the archive closed; a full collection between passes (serve's
 * passes are 10 minutes apart). Prints RssAnon at a quarter of the passes
 * and at the end, the growth per pass between the two (the first quarter
 * is warm-up), and this tree's growth over the baseline's.
 *
 * Usage: node scripts/bench-archive-passes.mjs [passes=2400] [pins=20] [--against <git-ref>=main]
 */
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { bundleAtRef } from './bundle-ref.mjs'
import { unitRuntimeEnv } from './runtime-env.mjs'

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)))
const SELF = fileURLToPath(import.meta.url)
const CACHE = join(ROOT, 'node_modules', '.cache', 'pind-bench-archive') // inside the tree: the bundles' lmdb resolves from its node_modules

async function bundle (ref) {
  return await bundleAtRef({ contents: "export { LedgerArchive } from './src/ledger/lmdb/archive.ts'", cache: CACHE, name: 'archive', ref })
}

function anonMiB () {
  globalThis.gc(); globalThis.gc()
  return Number(readFileSync('/proc/self/status', 'utf8').match(/RssAnon:\s+(\d+)/)[1]) / 1024
}

/** the child: one bundle's passes */
async function child (lib, passes, pins) {
  const { LedgerArchive } = await import(lib)
  const dir = mkdtempSync(join(tmpdir(), 'pind-archive-passes-'))
  try {
    const archive = new LedgerArchive(join(dir, 'ledger-archive.mdb'))
    const now = () => new Date().toISOString()
    const pass = async () => {
      const ps = []; const pays = []
      for (let i = 0; i < pins; i++) {
        const requestid = randomUUID(); const payer = '0x' + 'ab'.repeat(20); const id = `${payer}:${randomUUID()}`
        ps.push({ requestid, owner: payer, cid: 'bafybeig' + 'x'.repeat(51), origins: [], meta: { app: 'bench' }, status: 'pinned', created: now(), createdUs: Date.now() * 1000, months: 1, pinnedUntil: now(), dagSize: 12345, source: 'upload', payment: { id, payer, amount: '1000', network: 'base', asset: '0x' + 'ef'.repeat(20), tx: '0x' + '12'.repeat(32), settledAt: now(), method: 'x402' }, removed: { at: now(), why: 'expired' } })
        pays.push({ id, requestid, purpose: 'POST /pins', payer, amount: '1000' })
      }
      await archive.put(ps, pays)
      await archive.close()
      globalThis.gc()
    }
    const quarter = Math.floor(passes / 4)
    for (let i = 0; i < quarter; i++) await pass()
    const at = anonMiB()
    for (let i = quarter; i < passes; i++) await pass()
    const end = anonMiB()
    process.stdout.write(JSON.stringify({ at, end, perPassKB: (end - at) * 1024 / (passes - quarter) }))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[2] === '--child') {
  await child(process.argv[3], Number(process.argv[4]), Number(process.argv[5]))
} else {
  const args = process.argv.slice(2)
  const ai = args.indexOf('--against')
  const against = ai >= 0 ? args.splice(ai, 2)[1] : 'main'
  const passes = Number(args[0] ?? 2400); const pins = Number(args[1] ?? 20)
  console.log(`${passes} archive passes of ${pins} pins, a full collection between passes; baseline ${against}; load average ${loadavg()[0].toFixed(1)}`)
  const runs = []
  for (const [name, lib] of [[against, await bundle(against)], ['this tree', await bundle()]]) {
    const r = spawnSync(process.execPath, ['--expose-gc', '--max-semi-space-size=4', SELF, '--child', lib, String(passes), String(pins)], {
      encoding: 'utf8', env: { ...process.env, GLIBC_TUNABLES: unitRuntimeEnv().GLIBC_TUNABLES ?? '' }
    })
    if (r.status !== 0) throw new Error(`${name}: ${r.stderr}`)
    const m = JSON.parse(r.stdout)
    runs.push(m)
    console.log(`${name.padEnd(12)} RssAnon ${m.at.toFixed(1)} MiB after ${Math.floor(passes / 4)} passes, ${m.end.toFixed(1)} MiB after ${passes}: ${m.perPassKB.toFixed(2)} KB per pass`)
  }
  console.log(`this tree / ${against}: ${(runs[1].perPassKB / runs[0].perPassKB).toFixed(2)}x per pass`)
  rmSync(CACHE, { recursive: true, force: true })
}
