/**
 * Memory bounds on the read side: many concurrent readers hold one block each
 * plus read-ahead from a shared budget of 32 blocks; and at most 16 size
 * probes reach the network at once (the rest quote as if the root were unreachable).
 */
import { randomBytes } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import { describe, expect, it } from 'vitest'
import { rawCid } from '../../../scripts/peer/index.mjs'
import { readAhead, type LocalBlockstore } from '../../../src/ipfs/content.js'
import type { BlockNetwork } from '../../../src/ipfs/network.js'
import type { IpfsNode } from '../../../src/ipfs/node.js'
import { SizeProbe } from '../../../src/service/size-probe.js'

describe('read-ahead budget', () => {
  it('keeps block reads in flight to one per reader plus 32 shared, and gives the budget back', async () => {
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
      expect(peak).toBe(readers + 32) // without the budget: 40 × 4
      release()
      await all
      gate = new Promise<void>(resolve => { release = resolve })
    }
  })
})

describe('size probe', () => {
  it('lets at most 16 probes reach the network at once; the rest quote without the root', async () => {
    let wanted = 0
    const network = {
      dial: async () => ({ connected: 0, failed: [] }),
      retrieve: async (_cid: CID, signal: AbortSignal) => {
        wanted++
        return await new Promise<Uint8Array>((_resolve, reject) => { signal.addEventListener('abort', () => { reject(new Error('timeout')) }) })
      }
    } as unknown as BlockNetwork
    const node = { blockstore: { has: async () => false } } as unknown as IpfsNode
    const probe = new SizeProbe({ node, network, timeoutMs: 300, ttlMs: 60_000, missTtlMs: 1 })
    const results = await Promise.all(Array.from({ length: 20 }, async () => await probe.probe(rawCid(randomBytes(8)), [])))
    expect(wanted).toBe(16)
    expect(results.filter(r => r.source === 'busy').length).toBe(4)
    expect(results.filter(r => r.source === 'timeout').length).toBe(16)
  })
})
