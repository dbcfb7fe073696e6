/**
 * --runtime-malloc-trim's addon, for real: in a Node process with the production unit's malloc
 * threshold, buffers of 64 KiB (a socket read's size) are freed among small ones that live on, as
 * under load: the arena keeps the freed pages resident (free() returns only an arena's top), and
 * malloc_trim gives them back.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { addonPaths, loadMallocTrim } from '../../../src/runtime/malloc-trim.js'
import { unitRuntimeEnv } from '../../../scripts/runtime-env.mjs'

const MiB = 1024 * 1024

/** a child that fragments its arena, then reports its anonymous memory before and after `trim` (when asked) */
const CHILD = `
const anon = () => Number(/RssAnon:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1]) * 1024
const mod = { exports: {} }
process.dlopen(mod, process.argv[1])
const start = anon()
const keep = []
let big = []
for (let i = 0; i < 1600; i++) {
  big.push(new Uint8Array(new ArrayBuffer(64 * 1024)).fill(1))
  keep.push(new Uint8Array(new ArrayBuffer(1024)).fill(2))
}
// freed at once (as --runtime-release-buffers does), not at a collection
for (const b of big) b.buffer.transfer(0)
big = undefined
const freed = anon()
const trimmed = process.argv[2] === 'trim' ? mod.exports.trim() : undefined
console.log(JSON.stringify({ start, freed, after: anon(), trimmed, kept: keep.length }))
`

/** a child that fills an LMDB file, reads it all, then drops its mapped pages and reads it again */
const MAP_CHILD = `
import { readFileSync } from 'node:fs'
import { open } from 'lmdb'
const [addonPath, dir] = process.argv.slice(1)
const mod = { exports: {} }
process.dlopen(mod, addonPath)
/** resident bytes of the mappings whose line ends with \${suffix} */
const rss = (suffix) => readFileSync('/proc/self/smaps', 'utf8').split(/\\n(?=[0-9a-f]+-[0-9a-f]+ )/)
  .filter(m => m.split('\\n')[0].endsWith(suffix))
  .reduce((sum, m) => sum + Number(/^Rss:\\s+(\\d+) kB/m.exec(m)[1]) * 1024, 0)
const db = open({ path: dir + '/test.mdb', compression: false, encoding: 'binary' })
const value = (i) => Buffer.alloc(64 * 1024, i % 251)
for (let i = 0; i < 384; i++) db.putSync(i, value(i))
let sum = 0
for (let i = 0; i < 384; i++) sum += db.getBinary(i).length
const read = rss('/test.mdb')
const node = readFileSync('/proc/self/maps', 'utf8').split('\\n').find(l => / r-xp .* \\//.test(l)).split(/\\s+/).pop()
const other = rss(node)
const advised = mod.exports.dropFilePages()
const dropped = rss('/test.mdb')
let again = sum === 384 * 64 * 1024
for (let i = 0; i < 384; i++) again &&= db.getBinary(i).equals(value(i))
console.log(JSON.stringify({ read, dropped, advised, again, other, otherAfter: rss(node) }))
await db.close()
`

function run (path: string, what: 'trim' | 'none'): { start: number, freed: number, after: number, trimmed?: boolean } {
  // the production unit's GLIBC_TUNABLES: 64 KiB buffers come from the arena, not a mapping of their own
  const r = spawnSync(process.execPath, ['-e', CHILD, path, what], { env: { ...process.env, GLIBC_TUNABLES: unitRuntimeEnv().GLIBC_TUNABLES }, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

describe('glibc malloc_trim (the --runtime-malloc-trim addon)', () => {
  const loaded = loadMallocTrim()

  it('loads (npm run build makes it) and answers whether it gave memory back', () => {
    if (loaded instanceof Error) throw loaded
    expect(typeof loaded.trim()).toBe('boolean')
  })

  it('gives back the freed pages an arena kept among live allocations, which freeing alone does not', () => {
    const path = addonPaths().find(p => existsSync(p))
    expect(path).toBeDefined()
    const kept = run(path as string, 'none')
    // 100 MiB of 64 KiB buffers freed: most of it still resident
    expect(kept.freed - kept.start).toBeGreaterThan(60 * MiB)
    expect(kept.after - kept.start).toBeGreaterThan(60 * MiB)
    const trimmed = run(path as string, 'trim')
    expect(trimmed.freed - trimmed.start).toBeGreaterThan(60 * MiB)
    expect(trimmed.trimmed).toBe(true)
    expect(trimmed.after - trimmed.start).toBeLessThan(20 * MiB)
  })

  it('drops the resident pages of LMDB\'s mapped file, which read back the same after (--runtime-map-trim)', () => {
    const path = addonPaths().find(p => existsSync(p))
    expect(path).toBeDefined()
    const dir = mkdtempSync(join(tmpdir(), 'pind-map-trim-'))
    try {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', MAP_CHILD, path as string, dir], { cwd: process.cwd(), encoding: 'utf8' })
      if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`)
      const out = JSON.parse(r.stdout) as { read: number, dropped: number, advised: number, again: boolean, other: number, otherAfter: number }
      // 24 MiB of values read: their pages resident in the file's mapping
      expect(out.read).toBeGreaterThan(20 * MiB)
      expect(out.advised).toBeGreaterThanOrEqual(out.read)
      expect(out.dropped).toBeLessThan(1 * MiB)
      expect(out.again).toBe(true)
      // a private mapping of a file (the node binary's own) is left as it was
      expect(out.otherAfter).toBeGreaterThan(out.other / 2)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('says why when its addon is not there', () => {
    const missing = loadMallocTrim(['/nonexistent/malloc-trim.node'])
    expect(missing).toBeInstanceOf(Error)
    expect((missing as Error).message).toBe('its addon is missing (looked in /nonexistent/malloc-trim.node; npm run build makes it)')
  })
})
