/**
 * SizeProbe remembers what a root declared for one TTL (the payment
 * validity): expired entries go as new ones come, so the cache holds one
 * TTL of quotes. It used to sweep only at 10,000 entries; the soak's heap
 * snapshots saw it grow by 185 entries a minute past what was live (issue 18).
 */
import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import { SizeProbe } from '../../../src/service/pins/size-probe.js'

afterEach(() => { vi.useRealTimers() })

describe('SizeProbe cache', () => {
  it('drops what has expired as it remembers more, and answers a live entry from the cache', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(new Date('2026-11-24T12:00:00.000Z'))
    const blocks = new Map<string, Uint8Array>()
    let retrieved = 0
    const probe = new SizeProbe({
      node: { blockstore: { has: async () => false, get: async function * () {} } } as never,
      network: { dial: async () => ({ connected: 1, failed: [] }), retrieve: async (cid: { toString: () => string }) => { retrieved++; return blocks.get(cid.toString()) as Uint8Array } } as never,
      timeoutMs: 5000,
      ttlMs: 60_000,
      isServable: () => true
    })
    const roots = Array.from({ length: 5 }, () => { const b = randomBytes(100); const cid = rawCid(b); blocks.set(cid.toString(), b); return cid })
    for (const cid of roots.slice(0, 3)) expect((await probe.probe(cid, ['/ip4/127.0.0.1/tcp/1'])).source).toBe('network')
    expect(probe.cached).toBe(3)
    // within the TTL: from the cache, no second retrieval
    expect((await probe.probe(roots[0] as never, ['/ip4/127.0.0.1/tcp/1'])).size).toBeDefined()
    expect(retrieved).toBe(3)

    vi.setSystemTime(new Date('2026-11-24T12:01:30.000Z'))
    await probe.probe(roots[3] as never, ['/ip4/127.0.0.1/tcp/1'])
    // the three of a TTL ago are gone
    expect(probe.cached).toBe(1)
    await probe.probe(roots[4] as never, ['/ip4/127.0.0.1/tcp/1'])
    expect(probe.cached).toBe(2)
    // an expired root probed again is retrieved again and remembered anew
    await probe.probe(roots[0] as never, ['/ip4/127.0.0.1/tcp/1'])
    expect([retrieved, probe.cached]).toEqual([6, 3])
  })

  it('reads a root held here once, and asks the store each time whether it still holds it', async () => {
    const block = randomBytes(100)
    const root = rawCid(block)
    let held = true
    let reads = 0
    let retrieved = 0
    const probe = new SizeProbe({
      node: { blockstore: { has: async () => held, get: async function * () { reads++; yield block } } } as never,
      network: { dial: async () => ({ connected: 1, failed: [] }), retrieve: async () => { retrieved++; return block } } as never,
      timeoutMs: 5000,
      ttlMs: 60_000,
      isServable: () => true
    })
    const first = await probe.probe(root, [])
    expect(first).toEqual({ size: { dagSize: 100, fileSize: 100, how: 'raw block' }, source: 'local' })
    expect(await probe.probe(root, [])).toEqual(first)
    expect(reads).toBe(1)
    // gone from the store (gc): no longer found on this node
    held = false
    expect((await probe.probe(root, [])).source).toBe('network')
    expect([reads, retrieved]).toEqual([1, 1])
  })

  it('with the store\'s removal count, asks whether a root is still held only once a removal has ended', async () => {
    const block = randomBytes(100)
    const root = rawCid(block)
    let held = true
    let removals = 0
    let asked = 0
    let removing: (() => void) | undefined
    const probe = new SizeProbe({
      node: {
        blockstore: {
          // a removal that ends while the store is being asked: its answer may be stale already
          has: async () => { asked++; const was = held; removing?.(); return was },
          get: async function * () { yield block }
        }
      } as never,
      network: { dial: async () => ({ connected: 1, failed: [] }), retrieve: async () => block } as never,
      timeoutMs: 5000,
      ttlMs: 60_000,
      isServable: () => true,
      removals: () => removals
    })
    expect((await probe.probe(root, [])).source).toBe('local')
    expect((await probe.probe(root, [])).source).toBe('local')
    expect(asked).toBe(1)
    // gc removed it: the count moved, so the store is asked again
    held = false
    removals++
    expect((await probe.probe(root, [])).source).toBe('network')
    expect(asked).toBe(2)
    // held again; a removal ends while the store answers "held": that answer is not kept
    held = true
    removing = () => { removing = undefined; held = false; removals++ }
    expect((await probe.probe(root, [])).source).toBe('local')
    expect((await probe.probe(root, [])).source).toBe('network')
    expect(asked).toBe(4)
  })
  it('answers at once (known) only what it need not ask for: a root not served here that it remembers, one seen held since the last removal', async () => {
    const block = randomBytes(100)
    const root = rawCid(block)
    const other = rawCid(randomBytes(100))
    let servable = false
    let removals = 0
    let asked = 0
    const probe = new SizeProbe({
      node: { blockstore: { has: async () => { asked++; return true }, get: async function * () { yield block } } } as never,
      network: { dial: async () => ({ connected: 1, failed: [] }), retrieve: async () => block } as never,
      timeoutMs: 5000,
      ttlMs: 60_000,
      isServable: () => servable,
      removals: () => removals
    })
    // never asked: nothing at hand, for a root served here or not
    expect(probe.known(root)).toBeUndefined()
    servable = true
    expect(probe.known(root)).toBeUndefined()
    // not served here: the network's answer, remembered, is at hand
    servable = false
    const fromNetwork = await probe.probe(root, [])
    expect(fromNetwork.source).toBe('network')
    expect(probe.known(root)).toBe(fromNetwork)
    expect(probe.known(other)).toBeUndefined()
    // served and held here: at hand once seen held, until a removal (gc) moves the count
    servable = true
    expect(probe.known(root)).toBeUndefined()
    const local = await probe.probe(root, [])
    expect(local.source).toBe('local')
    expect(probe.known(root)).toBe(local)
    removals++
    expect(probe.known(root)).toBeUndefined()
    expect(asked).toBe(1)
    // probes off: "not in time" for any root not served here, at once
    const off = new SizeProbe({ node: { blockstore: { has: async () => false } } as never, network: {} as never, timeoutMs: 0, ttlMs: 60_000, isServable: () => false })
    expect(off.known(other)?.source).toBe('timeout')
  })
})
