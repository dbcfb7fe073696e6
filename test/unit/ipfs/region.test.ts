/**
 * Keyspace regions against a synthetic network whose true answers are known:
 * a lookup returns the exact k closest peers (what a healthy DHT converges
 * to). A region explored from any key must tell, for every key under its
 * prefix, exactly the k peers a per-key lookup would find — with a handful
 * of lookups instead of one per key.
 */
import { randomBytes } from 'node:crypto'
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { PeerId } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { beforeAll, describe, expect, it } from 'vitest'
import { bitsOf, commonPrefixLength, compareDistance, hasPrefix, peerKadId, prefixRange, sha256 } from '../../../src/ipfs/routing/keyspace.js'
import { closestInRegion, exploreRegion, gaps } from '../../../src/ipfs/routing/region.js'

const K = 20

async function network (n: number): Promise<Array<{ id: PeerId, kad: Buffer }>> {
  return await Promise.all(Array.from({ length: n }, async () => {
    const id = peerIdFromPrivateKey(await generateKeyPair('Ed25519'))
    return { id, kad: peerKadId(id) }
  }))
}

const trueClosest = (peers: Array<{ id: PeerId, kad: Buffer }>, key: Buffer, k: number): string[] =>
  [...peers].sort((a, b) => compareDistance(key, a.kad, b.kad)).slice(0, k).map(p => p.id.toString())

/** a key under `prefix` (its kad bits start with it) */
function keyUnder (prefix: string): Buffer {
  const key = randomBytes(32)
  for (let i = 0; i < prefix.length; i++) {
    const bit = 1 << (7 - (i & 7))
    key[i >> 3] = prefix[i] === '1' ? (key[i >> 3] as number) | bit : (key[i >> 3] as number) & ~bit
  }
  return key
}

describe('keyspace', () => {
  it('measures common prefixes, ranges and gaps in bits', () => {
    const a = Buffer.alloc(32); const b = Buffer.alloc(32)
    b[1] = 0b00100000
    expect(commonPrefixLength(a, b)).toBe(10)
    expect(bitsOf(b, 12)).toBe('000000000010')
    expect(hasPrefix(b, '0000000000')).toBe(true)
    expect(hasPrefix(b, '00000000001')).toBe(true)
    expect(hasPrefix(b, '00000000000')).toBe(false)
    const r = prefixRange('101')
    expect(r.start.toString('hex').slice(0, 2)).toBe('a0')
    expect(r.end?.toString('hex').slice(0, 2)).toBe('c0')
    expect(prefixRange('11').end).toBeUndefined()
    expect(gaps('01', ['011', '0100'])).toEqual(['0101'])
    expect(gaps('01', [''])).toEqual([])
    expect(gaps('', ['0'])).toEqual(['1'])
  })
})

describe('exploreRegion', () => {
  let peers: Array<{ id: PeerId, kad: Buffer }>
  beforeAll(async () => { peers = await network(600) })

  it('finds, in a few lookups, a region where every key\'s k closest peers are exactly those of a lookup', async () => {
    const byId = new Map(peers.map(p => [p.id.toString(), p]))
    let lookups = 0
    const closest = async (preimage: Uint8Array): Promise<PeerId[]> => {
      lookups++
      return trueClosest(peers, sha256(preimage), K).map(id => (byId.get(id) as { id: PeerId }).id)
    }
    for (let round = 0; round < 10; round++) {
      const mh = randomBytes(34)
      const start = { kad: sha256(mh), preimage: mh }
      const before = lookups
      const region = await exploreRegion(closest, start, K, AbortSignal.timeout(10_000))
      expect(region.complete).toBe(true)
      expect(hasPrefix(start.kad, region.prefix)).toBe(true)
      expect(region.peers.length).toBeGreaterThanOrEqual(K)
      expect(lookups - before).toBeLessThanOrEqual(8)
      for (let i = 0; i < 50; i++) {
        const key = keyUnder(region.prefix)
        expect(closestInRegion(region, key, K).map(p => p.id.toString()).sort()).toEqual(trueClosest(peers, key, K).sort())
      }
    }
  })

  it('covers the whole keyspace with every peer when the network is smaller than k (lookups stop bringing new peers)', async () => {
    const few = peers.slice(0, 7)
    const region = await exploreRegion(async () => few.map(p => p.id), { kad: randomBytes(32), preimage: randomBytes(34) }, K, AbortSignal.timeout(1000))
    expect(region).toMatchObject({ prefix: '', complete: true })
    expect(region.lookups).toBeLessThanOrEqual(3)
    expect(region.peers).toHaveLength(7)
  })
})
