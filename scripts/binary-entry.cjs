'use strict'
// The entry of the binary: scripts/package-binary.mjs copies it beside the bundle, with the
// bundle's file name and sha256 filled in, and pkg runs it first. It compiles the bundle with
// V8's code cache of the previous starts and runs it as a CommonJS module.
//
// Node's compile cache (enableCompileCache) keeps only what V8 compiles eagerly, the bundle's
// top level: every function a start runs is compiled again at each start, most of serve's start.
// A cache made after the start's code has run holds those functions compiled too
// (vm.Script#createCachedData). One cache per kind of start (serve, --version or --help, any
// other command) and per NODE_OPTIONS (V8 rejects a cache made under other flags). A cache that is
// missing or rejected is written once the code has run: serve's when it says it serves (modules
// loaded, ledger opened, libp2p started, listening: globalThis[Symbol.for('pind.codeLoaded')],
// before it changes V8 flags at run time), the others' at exit.
// Where: $PKG_NATIVE_CACHE_PATH (the unit and the image set it to the data dir's .native/),
// else ~/.cache; a folder that cannot be made or written leaves the start as it was.
// The umask is src/app/umask.ts's, set here first: the cache is the owner's alone (0700, 0600).
//
// Neither the bundle nor the cache is copied (scripts/native/binary-start.c; without that addon,
// one copy of each): the script's source is an external string over the bundle's bytes in pkg's
// archive, which the binary maps for the life of the process, and the cache an ArrayBuffer over
// the file mapped read-only. The bundle is the file's one expression, a function
// (scripts/bundle.mjs wraps it), so the source is the file's bytes as they are.
// Two bundles (scripts/bundle.mjs): the whole program, and the CLI alone (--cli). serve, and the
// commands that always need the ledger or the block stores, start on the whole program; every
// other command (admin calls through a running serve, --version, --help) on the CLI bundle, whose
// code cache is a twentieth of the size. A command that turns out to need what only the whole
// program has (an admin command on a stopped data dir) starts again on it, in this process
// (globalThis[Symbol.for('pind.runWholeProgram')], called by src/main.ts).
process.umask(0o077)
const BUNDLE = '__BUNDLE__'
const BUNDLE_SHA256 = '__BUNDLE_SHA256__'
const CLI_BUNDLE = '__CLI_BUNDLE__'
const CLI_BUNDLE_SHA256 = '__CLI_BUNDLE_SHA256__'
/** the commands that start on the whole program (any argument equal to one: a rare false match only costs the CLI bundle's start) */
const WHOLE_PROGRAM = new Set(['serve', 'gc', 'ledger', 'import-ledger', 'export-ledger', 'blocks'])
const { join } = require('node:path')
const cacheDir = join(process.env.PKG_NATIVE_CACHE_PATH || join(require('node:os').homedir(), '.cache'), 'pind-compile-cache')
// Node's own cache, for the modules outside the bundle (lmdb's JavaScript)
try { require('node:module').enableCompileCache(cacheDir) } catch {}

function runWithCodeCache (bundle, sha256) {
  const fs = require('node:fs')
  const vm = require('node:vm')
  const Module = require('node:module')
  const file = join(__dirname, bundle)
  const addon = startAddon()
  // how this start read its code, for serve's 'serving' line (src/cli/serve.ts)
  const loaded = { source: 'in place', cache: 'mapped' }
  let source
  try {
    source = archivedSource(file, addon)
    if (source == null) { loaded.source = 'copied'; source = fs.readFileSync(file, 'latin1') } // (ASCII: package-binary.mjs checks)
  } catch { return false }
  // serve's start, `--version` or `--help` (which run little: their cache would serve the others
  // poorly), any other command
  const args = process.argv.slice(2)
  const kind = args.includes('serve') ? 'serve' : args.some(a => /^(-V|--version|-h|--help|help)$/.test(a)) ? 'info' : 'cli'
  const build = sha256.slice(0, 16)
  const cacheFile = join(cacheDir, `${build}-${kind}-${hash(process.env.NODE_OPTIONS || '')}`)
  let cachedData
  try {
    if (addon != null) cachedData = new Uint8Array(addon.mapFile(cacheFile))
    else { loaded.cache = 'read'; cachedData = fs.readFileSync(cacheFile) }
  } catch {}
  const script = new vm.Script(source, { filename: file, cachedData })
  // (decided now: the cache's bytes, or its mapping, are not held for the life of the process)
  let kept = cachedData != null && !script.cachedDataRejected
  if (!kept) loaded.cache = cachedData == null ? 'none' : 'rejected'
  cachedData = undefined
  globalThis[Symbol.for('pind.codeLoad')] = loaded
  const write = () => {
    if (kept) return
    kept = true
    try {
      fs.mkdirSync(cacheDir, { recursive: true })
      fs.accessSync(cacheDir, fs.constants.W_OK) // before the work of making the cache
      // other builds' caches, once unwritten for a day (two builds run in turn keep theirs)
      for (const f of fs.readdirSync(cacheDir)) {
        if (!/^[0-9a-f]{16}-/.test(f) || f.startsWith(`${build}-`)) continue
        const other = join(cacheDir, f)
        try { if (Date.now() - fs.statSync(other).mtimeMs > 86_400_000) fs.rmSync(other, { force: true }) } catch {} // (gone meanwhile)
      }
      const tmp = `${cacheFile}.${process.pid}.tmp`
      fs.writeFileSync(tmp, script.createCachedData())
      fs.renameSync(tmp, cacheFile) // a concurrent start reads the old file or the new one
    } catch {}
  }
  globalThis[Symbol.for('pind.codeLoaded')] = write
  // serve's only once it serves: a serve that stopped earlier (a bad setting) ran few
  if (kind !== 'serve') process.on('exit', write)
  const mod = new Module(file, module)
  mod.filename = file
  mod.paths = Module._nodeModulePaths(__dirname)
  script.runInThisContext().call(mod.exports, mod.exports, Module.createRequire(file), mod, file, __dirname)
  return true
}

/** scripts/native/binary-start.c, or undefined where it does not load (the start then copies) */
function startAddon () {
  try {
    const mod = { exports: {} }
    process.dlopen(mod, join(__dirname, 'native', 'binary-start.node'))
    return typeof mod.exports.latin1 === 'function' && typeof mod.exports.mapFile === 'function' ? mod.exports : undefined
  } catch {}
}

/**
 * A file's bytes in pkg's archive, without a copy: a Buffer over the memory the binary maps for the
 * life of the process (node:sea's raw asset; never written), or undefined (not in the archive, or
 * compressed). Also for the bundle's pkg run-time fixes (scripts/bundle.mjs), which write the
 * native addons out of the archive: globalThis[Symbol.for('pind.archivedFile')].
 */
let archive
function archivedFile (file) {
  const SNAPSHOT = '/snapshot'
  if (typeof file !== 'string' || !file.startsWith(`${SNAPSHOT}/`)) return undefined
  try {
    if (archive === undefined) {
      archive = null
      const sea = require('node:sea')
      // pkg's manifest: each file's [offset, length] in the archive, keyed by its path under /snapshot
      const manifest = JSON.parse(sea.getAsset('__pkg_manifest__', 'utf8'))
      if (!manifest.compression && manifest.offsets != null) archive = { bytes: sea.getRawAsset('__pkg_archive__'), offsets: manifest.offsets }
    }
    const at = archive?.offsets[file.slice(SNAPSHOT.length)]
    if (!Array.isArray(at) || at[0] + at[1] > archive.bytes.byteLength) return undefined
    return Buffer.from(archive.bytes, at[0], at[1])
  } catch {}
}
globalThis[Symbol.for('pind.archivedFile')] = archivedFile

/** the bundle's source over its bytes in pkg's archive, or undefined */
function archivedSource (file, addon) {
  if (addon == null) return undefined
  const bytes = archivedFile(file)
  return bytes && addon.latin1(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

function hash (s) {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0
  return h.toString(16).padStart(8, '0')
}

function runWholeProgram () {
  if (!runWithCodeCache(BUNDLE, BUNDLE_SHA256)) require('./__BUNDLE__')
}

// the literal requires also tell pkg's walker to ship the bundles (and what they require)
if (process.argv.slice(2).some(a => WHOLE_PROGRAM.has(a))) runWholeProgram()
else {
  globalThis[Symbol.for('pind.runWholeProgram')] = runWholeProgram
  if (!runWithCodeCache(CLI_BUNDLE, CLI_BUNDLE_SHA256)) require('./__CLI_BUNDLE__')
}
