/**
 * What long-lived caches keep: only the bytes they count, never the larger
 * buffer those bytes are a view of (found by heap snapshots in the soak,
 * scripts/soak.mjs: 91 remembered root blocks held 37 MiB of bitswap
 * messages; 1000 cached 402 bodies held 55 of Buffer's 64 KiB pool slabs).
 */
import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { sha256 } from 'multiformats/hashes/sha2'
import { rawCid } from '../../scripts/peer/index.mjs'
import { PaymentRequiredError } from '../../src/kernel/errors.js'
import { errorAnswer } from '../../src/http/error-catalog.js'
import { BlockNetwork } from '../../src/ipfs/network.js'
import type { IpfsNode } from '../../src/ipfs/node.js'

describe('kept blocks', () => {
  it('a remembered block is a copy of the block alone, not a view of the message it came in', async () => {
    const block = randomBytes(1000)
    const cid = rawCid(block)
    // as bitswap hands blocks out: a view into a 4 MiB message
    const message = new Uint8Array(4 * 1024 * 1024)
    message.set(block, 12345)
    const view = message.subarray(12345, 12345 + block.length)
    let asked = 0
    const node = {
      bitswap: () => ({ retrieve: async () => { asked++; return view }, bitswap: { wantList: { wants: new Map(), peers: new Map() } } }),
      getHasher: async () => sha256,
      connections: () => [],
      isConnected: () => false
    } as unknown as IpfsNode
    const network = new BlockNetwork(node)
    const first = await network.retrieve(cid, AbortSignal.timeout(1000), { remember: true })
    expect(Buffer.from(first).equals(block)).toBe(true)
    const kept = await network.retrieve(cid, AbortSignal.timeout(1000))
    expect(asked).toBe(1) // the second came from what was kept
    expect(Buffer.from(kept).equals(block)).toBe(true)
    expect(kept.buffer.byteLength).toBe(block.length) // before: the whole 4 MiB message
  })
})

/** a node whose bitswap hands out `block` (as a view into a bigger message) and counts the wants */
function nodeSending (block: Uint8Array): { node: IpfsNode, asked: () => number } {
  let asked = 0
  const message = new Uint8Array(block.length + 100)
  message.set(block, 50)
  const node = {
    bitswap: () => ({ retrieve: async () => { asked++; return message.subarray(50, 50 + block.length) }, bitswap: { wantList: { wants: new Map(), peers: new Map() } } }),
    getHasher: async () => sha256,
    connections: () => [],
    isConnected: () => false
  } as unknown as IpfsNode
  return { node, asked: () => asked }
}

describe('kept blocks are let go (issue 18: found holding 16 MiB in a service idle after a soak)', () => {
  afterEach(() => { vi.useRealTimers() })

  it('a kept block is handed once to the fetch that stores it, then let go; a quote asking again keeps it', async () => {
    const block = randomBytes(1000)
    const cid = rawCid(block)
    const { node, asked } = nodeSending(block)
    const network = new BlockNetwork(node)
    await network.retrieve(cid, AbortSignal.timeout(1000), { remember: true }) // the quote's probe
    await network.retrieve(cid, AbortSignal.timeout(1000), { remember: true }) // the paid retry's quote
    expect(asked()).toBe(1)
    const stored = await network.retrieve(cid, AbortSignal.timeout(1000)) // the paid fetch, which stages it
    expect(Buffer.from(stored).equals(block)).toBe(true)
    expect(asked()).toBe(1)
    expect(network.kept()).toEqual({ blocks: 0, bytes: 0 })
    await network.retrieve(cid, AbortSignal.timeout(1000))
    expect(asked()).toBe(2) // before: still 1, the block held for 10 minutes
  })

  it('kept blocks go after a minute (the paid retry of a 402 comes within seconds), though nothing else arrives', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    const block = randomBytes(1000)
    const { node } = nodeSending(block)
    const network = new BlockNetwork(node)
    await network.retrieve(rawCid(block), AbortSignal.timeout(60_000), { remember: true })
    vi.advanceTimersByTime(59_000)
    expect(network.kept()).toEqual({ blocks: 1, bytes: 1000 })
    vi.advanceTimersByTime(1000)
    expect(network.kept()).toEqual({ blocks: 0, bytes: 0 }) // before: held 10 minutes, and past them until a newer block was remembered
  })
})

describe('cached answers', () => {
  it('an error body is a buffer of its own, not a slice of the shared Buffer pool', () => {
    const err = new PaymentRequiredError('pay', 'challenge', { price: '1000' })
    const body = errorAnswer(err).body
    expect(JSON.parse(body.toString()).error.reason).toBe('PAYMENT_REQUIRED')
    expect(body.buffer.byteLength).toBe(body.byteLength) // before: a 64 KiB pool slab
    expect(errorAnswer(err).body).toBe(body)
  })
})
