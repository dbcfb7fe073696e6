#!/usr/bin/env node
// Bundle the app into one CommonJS file for `node dist/pind.cjs` and for pkg --sea.
//
//   node scripts/bundle.mjs [entry=src/main.ts] [outfile=dist/pind.cjs] [--sourcemap]
//   node scripts/bundle.mjs --cli     (after the above: dist/pind-cli.cjs, the binary's CLI bundle)
//
// --cli: the same program without what its commands import lazily (`await import(…)`: serve,
// the ledger, the block stores, libp2p's keys), a twentieth of the code. The binary starts every
// command but serve's heavy ones on it (scripts/binary-entry.cjs): a start reads V8's code cache of
// the bundle's whole structure, ~1.6 MB and 70-100 ms for the whole program whatever the command.
// Each module left out is a stand-in that throws an error marked as src/cli/fail.ts's
// wholeProgramNeeded when loaded: the command then starts again on the whole program. The CLI
// bundle records the sha256 of the whole bundle built beside it (package-binary.mjs checks the pair).
//
// ESM-only dependencies (helia, libp2p, jose, viem, @x402/*) are bundled into CJS.
// Packages with native addons (lmdb, msgpackr-extract) are bundled too, but for their addon
// files: their loader (node-gyp-build-optional-packages) looks for the `.node` file from its
// package's folder at run time, which a bundle has not. Each loader call becomes a require() of the
// addon's path under node_modules (NATIVE_LOADERS below), left to run time: resolved from
// node_modules when run as `node dist/pind.cjs`, and from pkg's snapshot inside the binary
// (scripts/package-binary.mjs ships the addon files there). Loading lmdb's JavaScript through pkg's
// virtual file system, uncached, took ~25 ms of every start.
import { execFileSync } from 'node:child_process'
import { builtinModules } from 'node:module'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
const sourcemap = args.includes('--sourcemap')
const cli = args.includes('--cli')
const [entryArg = 'src/main.ts', outArg = cli ? 'dist/pind-cli.cjs' : 'dist/pind.cjs'] = args.filter((a) => !a.startsWith('--'))
const entry = path.resolve(root, entryArg)
const outfile = path.resolve(root, outArg)

// Each native addon's loader, as its package's JavaScript calls it, and the addon file it loads on
// linux-x64 with glibc (the binary's one platform). Keep in sync with NATIVE_ASSETS in
// scripts/package-binary.mjs. A loader call not found fails the build: the package changed.
// lmdb's compression dictionary (dict/dict.txt, read beside its module) is not shipped: pind opens
// every LMDB file with compression off.
const NATIVE_LOADERS = [
  { file: 'lmdb/dist/index.cjs', call: 'loadNAPI__default["default"](dirName)', addon: '@lmdb/lmdb-linux-x64/node.napi.glibc.node' },
  { file: 'msgpackr-extract/index.js', call: "require('node-gyp-build-optional-packages')(__dirname)", addon: '@msgpackr-extract/msgpackr-extract-linux-x64/node.napi.glibc.node' }
]
// Optional dependencies that are not installed and never loaded: pg requires pg-native only
// when `pg.native` is read, which the PostgreSQL ledger never does (pure JS client). Left as
// require() calls that are never made.
const ABSENT_OPTIONALS = ['pg-native']

// Runs first in the bundle, inside a pkg binary only (process.pkg is set by pkg's
// bootstrap); stringified into the banner below. Both fixes are no-ops elsewhere.
// `addonHashes`: sha256 of each native addon file this build ships (path under node_modules →
// hex), computed below when bundling.
function pkgRuntimeFixes (addonHashes) {
  if (!process.pkg || process.__pindPkgFixes) return
  process.__pindPkgFixes = true
  const fs = require('fs')
  const path = require('path')
  const crypto = require('crypto')
  const url = require('url')
  // 1. pkg's process.dlopen hook copies an addon out of the snapshot to
  //    $PKG_NATIVE_CACHE_PATH (default ~/.cache) but reads that variable once, at process
  //    start-up, before app code runs. This wrapper re-reads it at each dlopen, so the app
  //    may set process.env.PKG_NATIVE_CACHE_PATH (a writable dir: its data dir) any time
  //    before it first requires lmdb. When unset, pkg's own hook does the work.
  //    The copy already there is checked against the hash this build recorded, which leaves
  //    the addon's pages in the binary untouched: reading them from pkg's archive made its
  //    3.4 MiB of the binary resident for the life of the process.
  const pkgDlopen = process.dlopen
  process.dlopen = function (mod, file, ...rest) {
    const dir = process.env.PKG_NATIVE_CACHE_PATH
    if (dir && typeof file === 'string' && file.startsWith('/snapshot/')) {
      const sha256 = (b) => crypto.createHash('sha256').update(b).digest('hex')
      const known = addonHashes[file.slice(file.lastIndexOf('/node_modules/') + '/node_modules/'.length)]
      const copied = (hash) => path.join(path.resolve(dir), 'pkg', hash.slice(0, 32), path.basename(file))
      const stampOf = (hash, stat) => `${hash} ${stat.dev} ${stat.ino} ${stat.size} ${stat.ctimeNs}\n`
      const writeStamp = (copy, stamp) => {
        try {
          const tmp = `${copy}.checked.${process.pid}.tmp`
          fs.writeFileSync(tmp, stamp)
          fs.renameSync(tmp, `${copy}.checked`)
        } catch {} // (a folder it cannot write: the copy is hashed at each start)
      }
      // A copy whose sha256 was checked is not read again while it is the same file unchanged: a
      // stamp beside it records its device, inode, size and ctime at the check (any write, chmod or
      // replacement changes one of them, and no process can set a ctime). Hashing its 3.4 MiB took
      // 6-8 ms of every start. Whoever may write this folder could forge a stamp, as they could
      // V8's code cache beside it (pind-compile-cache/): it is the data dir's owner's alone.
      let kept
      try {
        if (known != null) {
          const copy = copied(known)
          const stat = fs.statSync(copy, { bigint: true })
          const stamp = stampOf(known, stat)
          let stamped
          try { stamped = fs.readFileSync(`${copy}.checked`, 'utf8') === stamp } catch {}
          kept = stamped === true || sha256(fs.readFileSync(copy)) === known
          if (kept && stamped !== true) writeStamp(copy, stamp)
        }
      } catch {}
      if (kept) {
        file = copied(known)
        return pkgDlopen.call(this, mod, file, ...rest)
      }
      // The first start on this folder: the addon's bytes in pkg's archive, without a copy, from the
      // binary's entry (scripts/binary-entry.cjs); they are this build's, whose sha256 is known
      // (reading them out of the archive and hashing them took 15-20 ms of that start).
      const archived = known != null ? globalThis[Symbol.for('pind.archivedFile')]?.(file) : undefined
      const bytes = archived ?? fs.readFileSync(file)
      const out = copied(archived != null ? known : sha256(bytes))
      let same = false
      try { same = fs.readFileSync(out).equals(bytes) } catch {}
      if (!same) {
        fs.mkdirSync(path.dirname(out), { recursive: true })
        const tmp = `${out}.${process.pid}.tmp`
        fs.writeFileSync(tmp, bytes, { mode: 0o755 })
        fs.renameSync(tmp, out) // atomic: a concurrent start never dlopens a partial file
        if (archived != null) writeStamp(out, stampOf(known, fs.statSync(out, { bigint: true })))
      }
      file = out
    }
    return pkgDlopen.call(this, mod, file, ...rest)
  }
  // 2. pkg's virtual fs serves string paths only; a module reading a file beside it with
  //    fs.readFileSync(new URL('./x', import.meta.url)) then misses the snapshot (ENOENT). Turn
  //    file: URLs into paths.
  const readFileSync = fs.readFileSync
  fs.readFileSync = function (p, ...rest) {
    if (p instanceof URL && p.protocol === 'file:') p = url.fileURLToPath(p)
    return readFileSync.call(this, p, ...rest)
  }
}
const NATIVE_ADDONS = NATIVE_LOADERS.map((l) => l.addon)
const addonHashes = Object.fromEntries(NATIVE_ADDONS.flatMap((a) => {
  const f = path.join(root, 'node_modules', a)
  return existsSync(f) ? [[a, createHash('sha256').update(readFileSync(f)).digest('hex')]] : []
}))
// --cli: the whole bundle it goes with (package-binary.mjs pairs them by this line)
const WHOLE = path.join(path.dirname(outfile), 'pind.cjs')
const pairing = cli ? `// pind whole bundle sha256 ${existsSync(WHOLE) ? createHash('sha256').update(readFileSync(WHOLE)).digest('hex') : 'none'}\n` : ''
if (cli && !existsSync(WHOLE)) {
  console.error(`bundle: --cli goes with the whole bundle ${WHOLE}: build it first (node scripts/bundle.mjs)`)
  process.exit(1)
}
// The bundle is a CommonJS module's body inside a function (the footer closes it), which runs
// it when Node loads the file as a module (`node dist/pind.cjs`, a require), and is the value of
// the file's one expression when the binary's entry compiles it as a script
// (scripts/binary-entry.cjs): the entry takes the file's bytes inside the binary as the script's
// source without a copy, which a wrapper added at run time would need.
const WRAPPER_OPEN = "(function (body) { return typeof module === 'object' && module !== null && typeof require === 'function' ? body.call(this, exports, require, module, __filename, __dirname) : body })(function (exports, require, module, __filename, __dirname) {"
const WRAPPER_CLOSE = '\n})'
// ESM code reads import.meta.url; `define` below rewrites it to __import_meta_url.
const banner = `${pairing}${WRAPPER_OPEN}var __import_meta_url = require('url').pathToFileURL(__filename).href;
var __nodeM = (mod) => mod == null ? mod : Object.create(mod, { default: { value: mod, enumerable: true } });
(${pkgRuntimeFixes})(${JSON.stringify(addonHashes)});`

if (!existsSync(entry)) {
  console.error(`bundle: entry not found: ${entry}`)
  process.exit(1)
}

// --cli: every module imported lazily is a stand-in that throws (see the top of this file)
const wholeProgramOnly = {
  name: 'whole-program-only',
  setup (b) {
    b.onResolve({ filter: /.*/ }, (a) => a.kind === 'dynamic-import' ? { path: a.path, namespace: 'whole-program-only' } : undefined)
    b.onLoad({ filter: /.*/, namespace: 'whole-program-only' }, (a) => ({
      loader: 'js',
      contents: `const e = new Error(${JSON.stringify(`pind: ${a.path} is in the whole program only (this is the CLI bundle)`)}); e[Symbol.for('pind.wholeProgramNeeded')] = true; throw e`
    }))
  }
}

// One copy of zod 3 (zod 4 is the top level's; @x402/core, evm and extensions require ^3 and npm
// gives each its own copy of 3.25.76, under node_modules/@x402/<name>/node_modules; zod 4 carries
// a frozen copy of zod 3 as 'zod/v3', which the MCP SDK imports): without this, zod 3 would be
// bundled three or four times, each copy's code compiled, cached and run at start. Each import of
// zod 3, whichever form, resolves to @x402/core's copy.
const ZOD3_AT = path.join(root, 'node_modules', '@x402', 'core')
const X402_IMPORTER = /[\\/]node_modules[\\/]@x402[\\/]/
const oneZod3 = {
  name: 'one-zod3',
  setup (b) {
    b.onResolve({ filter: /^zod(\/.*)?$/ }, async (a) => {
      if (a.pluginData?.zod3) return undefined
      const v3 = a.path === 'zod/v3' ? 'zod/v3' : X402_IMPORTER.test(a.importer) ? a.path : undefined
      if (v3 == null) return undefined
      const r = await b.resolve(v3, { kind: a.kind, resolveDir: ZOD3_AT, pluginData: { zod3: true } })
      return r.errors.length > 0 ? { errors: r.errors } : { path: r.path, sideEffects: r.sideEffects }
    })
  }
}

// lmdb is its CommonJS build (dist/index.cjs, what Node's require loads), whatever imports it: its
// ESM build is other files. Each loader of NATIVE_LOADERS requires its addon's file, external.
const nativeLoaders = {
  name: 'native-loaders',
  setup (b) {
    b.onResolve({ filter: /^lmdb$/ }, () => ({ path: path.join(root, 'node_modules', 'lmdb', 'dist', 'index.cjs') }))
    for (const l of NATIVE_LOADERS) {
      const file = path.join(root, 'node_modules', l.file)
      b.onLoad({ filter: new RegExp(`${l.file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`) }, (a) => {
        if (a.path !== file) return undefined
        const code = readFileSync(file, 'utf8')
        if (!code.includes(l.call)) return { errors: [{ text: `${l.file} no longer loads its addon with ${l.call}: update NATIVE_LOADERS in scripts/bundle.mjs` }] }
        return { contents: code.replace(l.call, `require(${JSON.stringify(l.addon)})`), loader: 'js', resolveDir: path.dirname(file) }
      })
    }
    // the addon files those loaders require, left to run time; any other addon fails the build
    b.onResolve({ filter: /\.node$/ }, (a) => NATIVE_ADDONS.includes(a.path)
      ? { path: a.path, external: true }
      : { errors: [{ text: `native addon ${a.path} (from ${a.importer}) cannot be bundled: add its loader to NATIVE_LOADERS in scripts/bundle.mjs and ship its file as a pkg asset` }] })
  }
}

let build
try {
  ({ build } = await import('esbuild'))
} catch (err) {
  console.error(`bundle: cannot load esbuild (${err.message}): install the devDependency esbuild`)
  process.exit(1)
}

// `pind --version` says which commit a binary was built from, and when
function gitCommit () {
  try {
    const git = (...a) => execFileSync('git', a, { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim()
    const commit = git('rev-parse', '--short=12', 'HEAD')
    return git('status', '--porcelain', '--untracked-files=no') === '' ? commit : `${commit}-dirty`
  } catch {
    return 'unknown' // not a git checkout (a source tarball)
  }
}
const buildDate = new Date(process.env.SOURCE_DATE_EPOCH != null ? Number(process.env.SOURCE_DATE_EPOCH) * 1000 : Date.now()).toISOString().replace(/\.\d{3}Z$/, 'Z')

// written beside the target and renamed into place: a process starting from the bundle
// meanwhile (a test, a running `npm start`) reads the old file or the new one, never half of one
const tmpOut = sourcemap ? outfile : `${outfile}.tmp-${process.pid}` // (a source map names its bundle: written in place)
const started = performance.now()
try {
  await build({
    entryPoints: [entry],
    outfile: tmpOut,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    // Whitespace and syntax only: identifiers keep their names, so stack traces and logs name
    // the same functions as before (only line:column changes; --sourcemap maps them back). The
    // bundle is 6.1 MiB instead of 9.0, and V8 holds its source as a string for the life of the
    // process (lazy functions compile from it), beside the file's pages pkg's archive maps:
    // at start 5 MiB less V8 heap used and anonymous memory. keepNames is left off:
    // its 8,680 __name() calls cost 10 MiB of anonymous memory and 20 MiB of committed heap at
    // start, and without it .name values are what they were unminified (esbuild's renaming of
    // clashing names, e.g. parse8, predates the minifying; stack traces show the same names).
    minifyWhitespace: true,
    minifySyntax: true,
    minifyIdentifiers: false,
    keepNames: false,
    sourcemap: sourcemap ? 'linked' : false,
    legalComments: 'eof', // keep the dependencies' license notices in what we ship
    external: ABSENT_OPTIONALS,
    // lets an entry outside the repo (a probe in /tmp) resolve the repo's dependencies
    nodePaths: [path.join(root, 'node_modules')],
    define: {
      'import.meta.url': '__import_meta_url',
      'import.meta.filename': '__filename',
      'import.meta.dirname': '__dirname',
      __PIND_COMMIT__: JSON.stringify(gitCommit()),
      __PIND_BUILD_DATE__: JSON.stringify(buildDate)
    },
    // `await import(…)` of a bundled module runs its code in the bundle (no module loader), and
    // the CLI bundle can replace it (--cli above)
    supported: { 'dynamic-import': false },
    banner: { js: banner },
    footer: { js: WRAPPER_CLOSE },
    logLevel: 'warning',
    // a native addon is never inlined: each is required from node_modules at run time (NATIVE_LOADERS)
    plugins: [...(cli ? [wholeProgramOnly] : []), oneZod3, nativeLoaders]
  })
} catch {
  // esbuild has already printed the errors
  if (tmpOut !== outfile) rmSync(tmpOut, { force: true })
  console.error('bundle: failed')
  process.exit(1)
}
// ASCII only. esbuild escapes every non-ASCII character in code, but not in the comments
// it keeps (a "—" in one of ours, a name in a license notice), and one such character makes
// V8 hold the whole 6 MB source as a two-byte string: 12 MB of memory instead of 6 for the
// life of the process. Escaped as \uXXXX (UTF-16 units), which in any code position would
// also mean the same character; in a comment it is only text.
const text = readFileSync(tmpOut, 'utf8')
// eslint-disable-next-line no-control-regex
const ascii = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
// esbuild wraps each lazily run module as __esm({"<its path>"(){…}}) (__commonJS likewise), and
// all ~2,400 of these object literals run at every start: each key a new property name, V8 adds
// a map transition per literal to one list that it keeps sorted, quadratic work (~40 M
// instructions, 14% of `pind --version`). One key for all (the helpers call the object's only
// method, whatever its name), padded with spaces to the same length so that columns (and a
// source map) stay right; the module's path is no longer the init function's name.
const wrappers = ascii.replace(/(__esm|__commonJS)\(\{"([^"\\]*)"\(/g, (_, helper, path) => `${helper}({m${' '.repeat(path.length + 1)}(`)
// A default or namespace import of a Node built-in from ESM code becomes __toESM(require("node:…")),
// which copies every property of the module onto a new object, reading each one's descriptor: 30
// such imports at start, and reading node:util's lazily loaded properties (util.diff) loads and
// compiles their modules, ~12 ms of serve's start. __nodeM (the banner's) gives an object that
// inherits the module's properties instead, with the module as its default. node:process is left
// to __toESM: its methods and setters need the process itself as `this`. Same length as __toESM
// (columns stay right).
const builtins = new Set(builtinModules.filter((m) => m !== 'process'))
const result = wrappers.replace(/__toESM\(require\("(node:)?([a-z_/]+)"\)/g, (all, prefix, name) => builtins.has(name) ? all.replace('__toESM', '__nodeM') : all)
if (result !== text) writeFileSync(tmpOut, result)
if (tmpOut !== outfile) renameSync(tmpOut, outfile)
const ms = performance.now() - started
const mib = statSync(outfile).size / 2 ** 20
console.log(`bundle: ${path.relative(process.cwd(), outfile)} ${mib.toFixed(1)} MiB in ${ms.toFixed(0)} ms`)
