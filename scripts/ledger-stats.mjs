#!/usr/bin/env node
/**
 * Where a ledger's bytes are: pages (leaf, branch, overflow) and entries of
 * each of ledger.mdb's sub-databases, lmdb's own free-page list, and the pages
 * nothing accounts for (freed, waiting for reuse). Opens the ledger read-only:
 * run it on a data dir no pind is serving (a reader left open by a process
 * that dies stops lmdb reusing freed pages until its stale-reader check).
 *
 * With `fill` (--fill), also each sub-database's leaf-page fill: the bytes of
 * its nodes as lmdb lays them out (an 8-byte header, the key, the value or an
 * overflow page's number, rounded up to even, and a 2-byte pointer) over the
 * room of its leaf pages (page size less the 16-byte header). It reads every
 * entry.
 *
 * Usage: node scripts/ledger-stats.mjs <data-dir> [--per N] [--fill]   (N: bytes per N, e.g. paid writes)
 */
import { statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { open } from 'lmdb'

/**
 * @param {string} dataDir
 * @param {{ fill?: boolean }} [opts]
 * @returns {{ pageSize: number, fileBytes: number, usedPages: number, freePages: number, dbs: Record<string, { pages: number, leaf: number, branch: number, overflow: number, entries: number, bytes: number, fill?: number }> }}
 */
export function ledgerStats (dataDir, opts = {}) {
  const path = join(dataDir, 'ledger.mdb')
  const root = open({ path, maxDbs: 64, readOnly: true, compression: false })
  try {
    const env = root.getStats()
    const pageSize = env.pageSize
    const pagesOf = (s) => s.treeLeafPageCount + s.treeBranchPageCount + s.overflowPages
    const dbs = {}
    const row = (s) => ({ pages: pagesOf(s), leaf: s.treeLeafPageCount, branch: s.treeBranchPageCount, overflow: s.overflowPages, entries: s.entryCount, bytes: pagesOf(s) * pageSize })
    // the unnamed database lists the named ones
    for (const name of [...root.getKeys()].map(String).sort()) {
      const db = root.openDB({ name, encoding: 'binary' })
      dbs[name] = row(db.getStats())
      if (opts.fill === true && dbs[name].leaf > 0) {
        const raw = root.openDB({ name, encoding: 'binary', keyEncoding: 'binary' })
        // lmdb puts a value on overflow pages when its node would not let two fit a page
        const nodeMax = (((pageSize - 16) / 2) & ~1) - 2
        let used = 0
        for (const { key, value } of raw.getRange()) {
          const node = 8 + key.length + value.length
          used += ((node > nodeMax ? 8 + key.length + 8 : node) + 1 & ~1) + 2
        }
        dbs[name].fill = used / (dbs[name].leaf * (pageSize - 16))
      }
    }
    dbs['(names)'] = row(env.root)
    dbs['(free list)'] = row(env.free)
    const usedPages = Object.values(dbs).reduce((a, d) => a + d.pages, 0) + 2 // two meta pages
    const allocated = env.lastPageNumber + 1
    return { pageSize, fileBytes: statSync(path).size, usedPages, freePages: Math.max(0, allocated - usedPages), dbs }
  } finally {
    root.close()
  }
}

/** The table: bytes (and bytes per `per`, e.g. per paid write) by sub-database, largest first. */
export function formatLedgerStats (st, per, perName = 'paid write') {
  const lines = []
  const f = (b) => per > 0 ? (b / per).toFixed(0).padStart(10) : ''
  lines.push(`ledger.mdb ${(st.fileBytes / 2 ** 20).toFixed(1)} MiB (page ${st.pageSize} B)${per > 0 ? `; bytes per ${perName} over ${per}` : ''}:`)
  const fills = Object.values(st.dbs).some(d => d.fill != null)
  lines.push(`  ${'sub-database'.padEnd(22)} ${'entries'.padStart(8)} ${'leaf'.padStart(6)} ${'branch'.padStart(6)} ${'ovfl'.padStart(6)} ${'KiB'.padStart(8)}${per > 0 ? `  ${'B/' + perName}`.padStart(12) : ''}${fills ? '  leaf fill' : ''}`)
  const rows = Object.entries(st.dbs).sort((a, b) => b[1].bytes - a[1].bytes)
  for (const [name, d] of rows) {
    if (d.pages === 0) continue
    lines.push(`  ${name.padEnd(22)} ${String(d.entries).padStart(8)} ${String(d.leaf).padStart(6)} ${String(d.branch).padStart(6)} ${String(d.overflow).padStart(6)} ${(d.bytes / 1024).toFixed(0).padStart(8)}${f(d.bytes)}${d.fill != null ? `${(100 * d.fill).toFixed(0).padStart(10)}%` : ''}`)
  }
  const freeBytes = st.freePages * st.pageSize
  lines.push(`  ${'(free pages)'.padEnd(22)} ${''.padStart(8)} ${''.padStart(6)} ${''.padStart(6)} ${''.padStart(6)} ${(freeBytes / 1024).toFixed(0).padStart(8)}${f(freeBytes)}`)
  lines.push(`  ${'file'.padEnd(22)} ${''.padStart(8)} ${''.padStart(6)} ${''.padStart(6)} ${''.padStart(6)} ${(st.fileBytes / 1024).toFixed(0).padStart(8)}${f(st.fileBytes)}`)
  return lines
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const i = args.indexOf('--per')
  const per = i >= 0 ? Number(args[i + 1]) : 0
  const fill = args.includes('--fill')
  const dir = args.find((a, j) => !a.startsWith('--') && args[j - 1] !== '--per')
  if (dir == null) {
    console.error('usage: node scripts/ledger-stats.mjs <data-dir> [--per N] [--fill]')
    process.exit(2)
  }
  for (const l of formatLedgerStats(ledgerStats(resolve(dir), { fill }), per)) console.log(l)
}
