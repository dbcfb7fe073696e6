/**
 * New requestids are UUIDv7: the pins database, block lists and fetch queue
 * are keyed by them, so ids that sort in creation order make inserts append
 * instead of touching a page anywhere in the ledger (issue 18).
 */
import { describe, expect, it } from 'vitest'
import { newRequestid } from '../../../src/ledger/requestid.js'

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('newRequestid', () => {
  it('gives RFC 9562 version 7 UUIDs that carry their time and sort in creation order', () => {
    const t0 = Date.UTC(2026, 10, 23, 21, 0, 0)
    const ids = Array.from({ length: 500 }, (_, i) => newRequestid(t0 + i * 7))
    for (const id of ids) expect(id).toMatch(UUID_V7)
    expect([...ids].sort()).toEqual(ids)
    expect(new Set(ids).size).toBe(ids.length)
    expect(Number.parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16)).toBe(t0)
  })

  it('keeps the rest random: ids of the same millisecond differ', () => {
    const ids = Array.from({ length: 1000 }, () => newRequestid(1_700_000_000_000))
    expect(new Set(ids).size).toBe(ids.length)
    expect(new Set(ids.map(id => id.slice(0, 13))).size).toBe(1)
  })
})
