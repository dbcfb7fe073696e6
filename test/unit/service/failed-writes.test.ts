/**
 * FailedWrites: past its allowance within the hour, a payer's uploads are
 * staged; the hour passing, or another payer, changes nothing for the rest.
 */
import { describe, expect, it } from 'vitest'
import { FailedWrites } from '../../../src/service/uploads/failed-writes.js'

describe('FailedWrites', () => {
  it('allows direct writes until a payer\'s failed uploads wrote more than the allowance within the hour', () => {
    let now = 1_000_000
    const f = new FailedWrites(10, () => now)
    expect(f.allows('a')).toBe(true)
    f.failed('a', 6)
    f.failed('a', 4)
    // at the allowance: still allowed; past it: not
    expect(f.allows('a')).toBe(true)
    f.failed('a', 1)
    expect(f.allows('a')).toBe(false)
    expect(f.allows('b')).toBe(true)
    f.failed('b', 0)
    expect(f.allows('b')).toBe(true)
    // the hour counts from the first failure: just before it ends, still refused; after, allowed afresh
    now += 3600_000
    expect(f.allows('a')).toBe(false)
    now += 1
    expect(f.allows('a')).toBe(true)
    f.failed('a', 11)
    expect(f.allows('a')).toBe(false)
  })

  it('remembers at most 10,000 payers, forgetting the oldest first', () => {
    const f = new FailedWrites(0)
    for (let i = 0; i < 10_001; i++) f.failed(`p${i}`, 1)
    expect(f.allows('p0')).toBe(true)
    expect(f.allows('p1')).toBe(false)
    expect(f.allows('p10000')).toBe(false)
  })
})
