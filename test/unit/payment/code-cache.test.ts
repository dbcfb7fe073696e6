/**
 * CodeCache: a payer's code read once for the four questions of one payment,
 * read again once its time is up, never kept when the read failed, shared
 * while in flight, and bounded.
 */
import { describe, expect, it } from 'vitest'
import { CodeCache } from '../../../src/payment/code-cache.js'

type Code = `0x${string}` | undefined
const A = '0x00000000000000000000000000000000000000aA' as const
const B = '0x00000000000000000000000000000000000000bB' as const

function reader (answer: (address: string, n: number) => Code | Error): { read: (a: { address: `0x${string}` }) => Promise<Code>, reads: string[] } {
  const reads: string[] = []
  return {
    reads,
    read: async ({ address }) => {
      reads.push(address)
      await new Promise(resolve => setImmediate(resolve))
      const r = answer(address, reads.length)
      if (r instanceof Error) throw r
      return r
    }
  }
}

describe('CodeCache', () => {
  it('reads an address once for repeated questions within its time, in any letter case', async () => {
    const r = reader(() => '0x')
    const c = new CodeCache(r.read)
    for (let i = 0; i < 4; i++) expect(await c.getCode({ address: i % 2 === 0 ? A : A.toLowerCase() as `0x${string}` })).toBe('0x')
    expect(r.reads).toHaveLength(1)
    expect(await c.getCode({ address: B })).toBe('0x')
    expect(r.reads).toHaveLength(2)
  })

  it('shares a read in flight', async () => {
    const r = reader(() => '0x6080')
    const c = new CodeCache(r.read)
    const all = await Promise.all([c.getCode({ address: A }), c.getCode({ address: A }), c.getCode({ address: A })])
    expect(all).toEqual(['0x6080', '0x6080', '0x6080'])
    expect(r.reads).toHaveLength(1)
  })

  it('reads again once the time is up, and takes the new answer', async () => {
    let now = 1_000
    const r = reader((_, n) => n === 1 ? '0x' : '0xef0100aa')
    const c = new CodeCache(r.read, { ttlMs: 30_000, max: 10, now: () => now })
    expect(await c.getCode({ address: A })).toBe('0x')
    now += 29_999
    expect(await c.getCode({ address: A })).toBe('0x')
    expect(r.reads).toHaveLength(1)
    now += 1
    expect(await c.getCode({ address: A })).toBe('0xef0100aa')
    expect(r.reads).toHaveLength(2)
  })

  it('keeps no failed read: every waiter sees the failure, the next question reads again', async () => {
    const r = reader((_, n) => n === 1 ? new Error('rpc down') : '0x')
    const c = new CodeCache(r.read)
    const both = await Promise.allSettled([c.getCode({ address: A }), c.getCode({ address: A })])
    expect(both.map(x => x.status)).toEqual(['rejected', 'rejected'])
    expect(c.size).toBe(0)
    expect(await c.getCode({ address: A })).toBe('0x')
    expect(r.reads).toHaveLength(2)
  })

  it('keeps at most its bound of addresses, the oldest forgotten first', async () => {
    const r = reader(() => '0x')
    const c = new CodeCache(r.read, { ttlMs: 30_000, max: 3, now: () => 0 })
    const addr = (i: number): `0x${string}` => `0x${i.toString(16).padStart(40, '0')}`
    for (let i = 0; i < 5; i++) await c.getCode({ address: addr(i) })
    expect(c.size).toBe(3)
    await c.getCode({ address: addr(4) })
    expect(r.reads).toHaveLength(5)
    await c.getCode({ address: addr(0) })
    expect(r.reads).toHaveLength(6)
  })
})
