/**
 * Memory bounds on the read side: many concurrent readers hold one block each
 * plus read-ahead from a shared budget of 8 blocks; and at most 16 size
 * probes reach the network at once (the rest quote as if the root were unreachable).
 */
import { randomBytes } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import { describe, expect, it } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import { readAhead, type LocalBlockstore } from '../../../src/ipfs/content.js'
import type { BlockNetwork } from '../../../src/ipfs/network.js'
import type { IpfsNode } from '../../../src/ipfs/node.js'
import { SizeProbe } from '../../../src/service/pins/size-probe.js'

describe('read-ahead budget', () => {
  it('keeps block reads in flight to one per reader plus 8 shared, and gives the budget back', async () => {
    let inFlight = 0
    let peak = 0
    let release!: () => void
    let gate = new Promise<void>(resolve => { release = resolve })
    const bs: LocalBlockstore = {
      has: async () => true,
      get: async function * () {
        inFlight++
        peak = Math.max(peak, inFlight)
        await gate
        inFlight--
        yield new Uint8Array(10)
      }
    } as unknown as LocalBlockstore
    const items = (): Array<{ cid: CID }> => Array.from({ length: 4 }, () => ({ cid: rawCid(randomBytes(8)) }))
    const readers = 40
    const drain = async (): Promise<void> => { for await (const _ of readAhead(bs, items(), { readAhead: 4 })) { /* consume */ } }

    for (let round = 0; round < 2; round++) {
      peak = 0
      const all = Promise.all(Array.from({ length: readers }, drain))
      await new Promise(resolve => setTimeout(resolve, 20))
      expect(peak).toBe(readers + 8) // without the budget: 40 × 4; with the old one of 32, 72
      release()
      await all
      gate = new Promise<void>(resolve => { release = resolve })
    }
  })
})

describe('size probe', () => {
  it('lets at most 16 probes reach the network at once, 4 of them for one client; the rest are busy', async () => {
    let wanted = 0
    const network = {
      dial: async () => ({ connected: 0, failed: [] }),
      retrieve: async (_cid: CID, signal: AbortSignal) => {
        wanted++
        return await new Promise<Uint8Array>((_resolve, reject) => { signal.addEventListener('abort', () => { reject(new Error('timeout')) }) })
      }
    } as unknown as BlockNetwork
    const node = { blockstore: { has: async () => false } } as unknown as IpfsNode
    const probe = new SizeProbe({ node, network, timeoutMs: 300, ttlMs: 60_000, isServable: () => false })
    // 6 clients × 4: 16 probe, 8 are busy
    const results = await Promise.all(Array.from({ length: 24 }, async (_, i) => await probe.probe(rawCid(randomBytes(8)), [], `client-${i % 6}`)))
    expect(wanted).toBe(16)
    expect(results.filter(r => r.source === 'busy').length).toBe(8)
    expect(results.filter(r => r.source === 'timeout').length).toBe(16)
    // one client: 4 probe, the rest wait their turn
    wanted = 0
    const one = await Promise.all(Array.from({ length: 6 }, async () => await probe.probe(rawCid(randomBytes(8)), [], 'one')))
    expect(wanted).toBe(4)
    expect(one.filter(r => r.source === 'client-busy').length).toBe(2)
    // a miss is not remembered: the same CID is looked for again
    const cid = rawCid(randomBytes(8))
    wanted = 0
    await probe.probe(cid, [], 'again')
    await probe.probe(cid, [], 'again')
    expect(wanted).toBe(2)
  })
})
