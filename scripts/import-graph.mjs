#!/usr/bin/env node
/**
 * The import graph between the folders of src/: one line per edge
 * (`from → to  N imports`), then the upward imports, which make it exit 1.
 *
 *   npm run graph                  the graph of this checkout
 *   npm run graph -- --json        the same as JSON ({ edges, upward })
 *   node scripts/import-graph.mjs --root <dir>   another checkout
 *
 * A node is a folder of src/ (`service`, `ledger`, …) or a file at the top of
 * src/ (`main.ts`). Imports are read with the TypeScript
 * compiler's own pre-processor (type-only imports count too: a type is a
 * dependency of the design), so comments and strings that look like imports
 * are not taken for them.
 *
 * Upward (see README, "Source layout"): the service core imports no shell,
 * and the components below it import neither the core nor a shell. An
 * implementation behind a contract (IMPLEMENTATIONS) is imported only from
 * inside it and by the composition roots, and a package it wraps only from
 * inside it: these count as upward too.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

/** the shells over the core: the CLI, the HTTP API and gateway, the admin channel, the composition roots */
export const SHELLS = ['cli', 'http', 'admin', 'main.ts', 'app']
/** the transport-free use cases */
export const CORE = ['service']
/** the components the core is built from */
export const COMPONENTS = ['ledger', 'ipfs', 'payment', 'auth', 'denylist', 'metrics', 'config', 'datadir', 'runtime', 'kernel']

/**
 * folders (or single files) of src/ behind a contract: who else may import them, and the packages
 * only they import (a package several list is theirs to share)
 */
export const IMPLEMENTATIONS = [
  { dir: 'ledger/lmdb', importers: ['app'], packages: ['lmdb'], contract: 'the ledger\'s contract (src/ledger/)' },
  { dir: 'ledger/postgres', importers: ['app'], packages: ['pg'], contract: 'the ledger\'s contract (src/ledger/)' },
  // the disk block backend's small blocks, packed in an LMDB file of their own
  { dir: 'ipfs/small-blocks.ts', importers: ['ipfs'], packages: ['lmdb'], contract: 'the block backend\'s contract (src/ipfs/block-backend.ts)' }
]

const insideOf = (impl, f) => f === impl.dir || f.startsWith(`${impl.dir}/`)

/** why a file's import reaches behind a contract, or undefined when it does not */
export function behindContract (fromFile, target) {
  if (target.package != null) {
    const owners = IMPLEMENTATIONS.filter(impl => impl.packages.includes(target.package))
    if (owners.length === 0 || owners.some(impl => insideOf(impl, fromFile))) return undefined
    const impl = owners[0]
    return `imports the implementation in src/${impl.dir}${impl.dir.endsWith('.ts') ? '' : '/'} (${target.package}) instead of ${impl.contract}`
  }
  for (const impl of IMPLEMENTATIONS) {
    if (insideOf(impl, fromFile)) continue
    if (insideOf(impl, target.file) && !impl.importers.some(i => fromFile.startsWith(`${i}/`))) return `imports the implementation in src/${impl.dir}${impl.dir.endsWith('.ts') ? '' : '/'} (${target.file}) instead of ${impl.contract}`
  }
  return undefined
}

/** why an edge points upward, or undefined when it does not */
export function upwardReason (from, to) {
  if (CORE.includes(from) && SHELLS.includes(to)) return `the core (${from}) imports a shell (${to})`
  if (COMPONENTS.includes(from) && (CORE.includes(to) || SHELLS.includes(to))) return `a component (${from}) imports ${CORE.includes(to) ? 'the core' : 'a shell'} (${to})`
  return undefined
}

function sourceFiles (dir) {
  const out = []
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) out.push(...sourceFiles(p))
    else if (/\.(ts|mts|cts)$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p)
  }
  return out
}

/** the node a file of src/ belongs to */
function nodeOf (src, file) {
  return relative(src, file).split(sep)[0]
}

/**
 * Every relative import between files of `<root>/src`, grouped by folder.
 * Returns the edges (`from`, `to`, `count`, and the `imports` behind them) and
 * the upward ones among the file-level imports.
 */
export function importGraph (root) {
  const src = resolve(root, 'src')
  const edges = new Map()
  const upward = []
  for (const file of sourceFiles(src)) {
    const text = readFileSync(file, 'utf8')
    const info = ts.preProcessFile(text, true, true)
    const from = nodeOf(src, file)
    const fromFile = relative(src, file).split(sep).join('/')
    for (const ref of info.importedFiles) {
      const line = () => text.slice(0, ref.pos).split('\n').length
      if (!ref.fileName.startsWith('.')) {
        const pkg = ref.fileName.startsWith('@') ? ref.fileName.split('/').slice(0, 2).join('/') : ref.fileName.split('/')[0]
        const why = behindContract(fromFile, { package: pkg })
        if (why != null) upward.push({ file: relative(root, file).split(sep).join('/'), line: line(), imports: ref.fileName, from, to: pkg, why })
        continue
      }
      const target = resolve(dirname(file), ref.fileName.replace(/\.(m|c)?js$/, '.$1ts'))
      if (!target.startsWith(src + sep)) continue
      const behind = behindContract(fromFile, { file: relative(src, target).split(sep).join('/') })
      if (behind != null) upward.push({ file: relative(root, file).split(sep).join('/'), line: line(), imports: ref.fileName, from, to: nodeOf(src, target), why: behind })
      const to = nodeOf(src, target)
      if (to === from) continue
      const key = `${from}\u0000${to}`
      const edge = edges.get(key) ?? { from, to, count: 0, imports: [] }
      edge.count++
      const at = { file: relative(root, file).split(sep).join('/'), line: text.slice(0, ref.pos).split('\n').length, imports: ref.fileName }
      edge.imports.push(at)
      edges.set(key, edge)
      const why = upwardReason(from, to)
      if (why != null) upward.push({ ...at, from, to, why })
    }
  }
  const sorted = [...edges.values()].sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to))
  return { edges: sorted, upward }
}

function main (argv) {
  const at = argv.indexOf('--root')
  const root = at >= 0 ? argv[at + 1] : join(dirname(fileURLToPath(import.meta.url)), '..')
  const { edges, upward } = importGraph(root)
  if (argv.includes('--json')) {
    process.stdout.write(JSON.stringify({ edges: edges.map(({ from, to, count }) => ({ from, to, count })), upward }, null, 2) + '\n')
  } else {
    const width = Math.max(...edges.map(e => e.from.length))
    const lines = edges.map(e => `${e.from.padEnd(width)} → ${e.to.padEnd(width)} ${String(e.count).padStart(4)}${upwardReason(e.from, e.to) != null ? '  UPWARD' : ''}`)
    process.stdout.write(`import graph of src/ (folder → folder, imports)\n${lines.join('\n')}\n`)
    process.stdout.write(upward.length === 0
      ? 'no upward imports\n'
      : `${upward.length} upward import(s):\n${upward.map(u => `  ${u.file}:${u.line} imports ${u.imports}: ${u.why}`).join('\n')}\n`)
  }
  process.exitCode = upward.length === 0 ? 0 : 1
}

if (process.argv[1] != null && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2))
