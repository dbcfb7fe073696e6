/**
 * src/kernel/thousands.ts: counts with thousands separators as `toLocaleString('en-US')` writes them,
 * without Intl (whose first formatter maps ~4.6 MiB of ICU data into serve for good).
 */
import { describe, expect, it } from 'vitest'
import { thousands } from '../../src/kernel/thousands.js'
import { count } from '../../src/cli/progress.js'

describe('thousands', () => {
  it('writes integers as en-US does', () => {
    const values = [0, 1, 12, 999, 1000, 1001, 9999, 10_000, 123_456, 1_000_000, 1_234_567, 987_654_321, Number.MAX_SAFE_INTEGER, -1, -1000, -1_234_567]
    for (let n = 1; n < 1e15; n = n * 7 + 3) values.push(n)
    for (const n of values) expect(thousands(n)).toBe(n.toLocaleString('en-US'))
    expect(count(1_234_567)).toBe('1,234,567')
  })

  it('keeps a fraction as it is, grouping only the whole part', () => {
    expect(thousands(1234.5)).toBe('1,234.5')
    expect(thousands(-0.25)).toBe('-0.25')
  })
})
