/**
 * For benchmarks that compare this tree with a git ref (bench-ledger-growth,
 * bench-archive-passes): `contents` (an entry importing from ./src/...) bundled
 * with esbuild from this tree (ref undefined) or from `ref`'s src/ (git
 * archive; the LMDB ledger's files are found in either layout), into `cache` as `<name>-<tree|ref>.mjs`. lmdb stays external: it
 * resolves from this tree's node_modules, so `cache` must be inside the tree.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)))

export async function bundleAtRef ({ contents, cache, name, ref }) {
  const { build } = await import('esbuild')
  mkdirSync(cache, { recursive: true })
  let resolveDir = ROOT
  if (ref != null) {
    resolveDir = mkdtempSync(join(cache, 'src-'))
    execFileSync('sh', ['-c', `git -C "${ROOT}" archive "${ref}" src package.json | tar -x -C "${resolveDir}"`])
    // before the LMDB ledger moved into src/ledger/lmdb/, its files were in src/ledger/
    if (!existsSync(join(resolveDir, 'src/ledger/lmdb'))) contents = contents.replaceAll('./src/ledger/lmdb/', './src/ledger/')
  }
  const outfile = join(cache, `${name}-${ref == null ? 'tree' : ref.replace(/[^\w.-]/g, '_')}.mjs`)
  try {
    await build({
      stdin: { contents, resolveDir, loader: 'ts' },
      bundle: true, platform: 'node', format: 'esm', target: 'node24', outfile, logLevel: 'error',
      external: ['lmdb'], nodePaths: [join(ROOT, 'node_modules')]
    })
  } finally {
    if (ref != null) rmSync(resolveDir, { recursive: true, force: true })
  }
  return outfile
}
