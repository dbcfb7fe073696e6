/**
 * The built bundle (scripts/bundle.mjs) is ASCII only: a single non-ASCII
 * character anywhere (esbuild keeps some comments unescaped) makes V8 hold
 * the whole source as a two-byte string, twice the memory for the life of
 * every pind process.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { BUNDLE } from '../helpers/pind.js'

describe('the bundle', () => {
  it('is ASCII only, and still says what its comments said (escaped)', () => {
    const bytes = readFileSync(BUNDLE)
    const first = bytes.findIndex(b => b > 0x7f)
    expect(first, first >= 0 ? `non-ASCII at byte ${first}: ${bytes.subarray(Math.max(0, first - 40), first + 10).toString('latin1')}` : '').toBe(-1)
    // the comments of src/ that have a dash in them are kept, escaped
    expect(bytes.toString('latin1')).toContain('\\u2014')
  })
})
