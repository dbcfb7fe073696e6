/**
 * The built bundle (scripts/bundle.mjs) is ASCII only: a single non-ASCII
 * character anywhere (esbuild keeps the license comments unescaped) makes V8
 * hold the whole source as a two-byte string, twice the memory for the life
 * of every pind process. It is minified (whitespace and syntax: the source
 * string is smaller) but keeps its names and its dependencies' license notices.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { BUNDLE } from '../helpers/pind.js'

describe('the bundle', () => {
  it('is ASCII only, and its messages still say what they said (escaped)', () => {
    const bytes = readFileSync(BUNDLE)
    const first = bytes.findIndex(b => b > 0x7f)
    expect(first, first >= 0 ? `non-ASCII at byte ${first}: ${bytes.subarray(Math.max(0, first - 40), first + 10).toString('latin1')}` : '').toBe(-1)
    // a message of src/cli/gc.ts with a dash in it
    expect(bytes.toString('latin1')).toContain('interrupted; nothing half-done \\u2014 run it again to finish')
  })

  it('is minified but keeps the names of its functions and the license notices', () => {
    const text = readFileSync(BUNDLE, 'latin1')
    // no indentation or comments left, e.g. esbuild's markers of where each module starts
    expect(text).not.toMatch(/^\/\/ src\/heap\.ts$/m)
    expect(text).toMatch(/function collectWhenIdle\(/)
    expect(text).toMatch(/noble-ciphers - MIT License/)
  })

  it('wraps its lazily run modules under one key: no new property name for V8 to add at each start', () => {
    const text = readFileSync(BUNDLE, 'latin1')
    expect(text).not.toMatch(/__(esm|commonJS)\(\{"/)
    const keys = new Set([...text.matchAll(/__(?:esm|commonJS)\(\{(\w+) *\(/g)].map(m => m[1]))
    expect([...keys]).toEqual(['m'])
    expect(text.match(/__esm\(\{m *\(/g)?.length).toBeGreaterThan(1000)
  })
})
