/**
 * The binary's start addon (scripts/native/binary-start.c), for real: the entry
 * (scripts/binary-entry.cjs) takes the bundle's bytes as V8's source without a copy, and maps
 * the code cache instead of reading it. Run in a child Node so that a mapping this test makes
 * and drops is never touched after it goes.
 */
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { tempDir } from '../../helpers/pind.js'

const ADDON = join(import.meta.dirname, '../../../dist/native/binary-start.node')

/** runs `code` in a child Node with the addon as `addon`; its last stdout line as JSON */
function child (code: string, ...args: string[]): any {
  const r = spawnSync(process.execPath, ['--expose-gc', '-e', `const mod = { exports: {} }; process.dlopen(mod, process.argv[1]); const addon = mod.exports; ${code}`, ADDON, ...args], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').at(-1) as string)
}

describe("the binary's start addon", () => {
  it('maps a file: its bytes, read-only; the errors of a missing file, a folder, an empty file', () => {
    const dir = tempDir('pind-start-addon-')
    const file = join(dir, 'cache')
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256))
    writeFileSync(file, bytes)
    writeFileSync(join(dir, 'empty'), '')
    const out = child(`
      const ab = addon.mapFile(process.argv[2])
      const view = new Uint8Array(ab)
      const sum = view.reduce((a, b) => (a + b) % 1000003, 0)
      const errors = [process.argv[3], process.argv[4], process.argv[5]].map(p => { try { addon.mapFile(p); return null } catch (e) { return [e.code, e.message] } })
      let typeError; try { addon.mapFile(42) } catch (e) { typeError = e.name }
      console.log(JSON.stringify({ length: ab.byteLength, sum, errors, typeError }))
    `, file, join(dir, 'missing'), dir, join(dir, 'empty'))
    expect(out.length).toBe(bytes.length)
    expect(out.sum).toBe(bytes.reduce((a, b) => (a + b) % 1000003, 0))
    expect(out.errors).toEqual([
      ['ENOENT', `${join(dir, 'missing')}: No such file or directory`],
      ['EIO', `${dir}: Input/output error`],
      ['EIO', `${join(dir, 'empty')}: Input/output error`]
    ])
    expect(out.typeError).toBe('TypeError')
  })

  it('makes a one-byte string over a range of an ArrayBuffer, which V8 compiles as a script; a range outside it throws', () => {
    const out = child(`
      const text = '(function (a) { return a * 6 })'
      const ab = new TextEncoder().encode('xx' + text + 'yy').buffer // (lives as long as this process)
      globalThis.keep = ab
      const s = addon.latin1(ab, 2, text.length)
      const fn = new (require('node:vm').Script)(s).runInThisContext()
      const errors = [[ab, 0, ab.byteLength + 1], [ab, -1, 2], [ab, ab.byteLength, 1], ['no', 0, 1]].map(a => { try { addon.latin1(...a); return null } catch (e) { return e.name } })
      console.log(JSON.stringify({ same: s === text, length: s.length, result: fn(7), errors, empty: addon.latin1(ab, ab.byteLength, 0) }))
    `)
    expect(out).toEqual({ same: true, length: 31, result: 42, errors: ['RangeError', 'RangeError', 'RangeError', 'TypeError'], empty: '' })
  })

  it('unmaps a file once its ArrayBuffer is collected', () => {
    const dir = tempDir('pind-start-addon-')
    const file = join(dir, 'cache')
    writeFileSync(file, Buffer.alloc(1 << 20, 1))
    const out = child(`
      const mapped = () => require('node:fs').readFileSync('/proc/self/maps', 'utf8').split('\\n').filter(l => l.endsWith(process.argv[2])).length
      let ab = addon.mapFile(process.argv[2])
      const before = mapped()
      ab = undefined
      // the collection runs the finalizer; Node-API may defer it to the next turn
      setTimeout(() => { globalThis.gc(); setTimeout(() => console.log(JSON.stringify({ before, after: mapped() })), 50) }, 0)
    `, file)
    expect(out).toEqual({ before: 1, after: 0 })
  })
})
