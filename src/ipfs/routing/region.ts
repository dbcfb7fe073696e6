/**
 * Keyspace regions, the way Kubo's sweep provider finds them
 * (go-libp2p-kad-dht provider/: closestPeersToPrefix, ShortestCoveredPrefix):
 *
 * A lookup for target t returns the k peers closest to t. Every peer sharing
 * more than m bits with t (m = the smallest common prefix among the k) is
 * closer than the farthest of them, so it is among them: t's first m+1 bits
 * are a "covered" prefix — every peer under it is known. A region is a prefix
 * P around the key being announced such that (a) at least k known peers lie
 * under P and (b) P is tiled by covered prefixes: then every peer under P is
 * known, and for any key under P its k closest peers are all under P (XOR
 * distance keeps them inside). So one region exploration — a few lookups —
 * tells where every key in the region goes, instead of one lookup per key.
 * Gaps in P's coverage are explored with a lookup for a target inside them.
 */
import type { PeerId } from '@libp2p/interface'
import { bitsOf, commonPrefixLength, compareDistance, hasPrefix, peerKadId, preimageWithPrefix, sha256 } from './keyspace.js'

export interface RegionPeer {
  id: PeerId
  kad: Buffer
}

export interface Region {
  /** bit-string prefix of the keys this region covers ('' = the whole keyspace) */
  prefix: string
  /** every peer known under the prefix (at least k unless the network is smaller) */
  peers: RegionPeer[]
  lookups: number
  /** false when exploration stopped before every gap was filled (lookup budget or a too-long gap) */
  complete: boolean
}

/** the k closest peers to what `preimage` hashes to, as the DHT answers */
export type ClosestPeers = (preimage: Uint8Array, signal: AbortSignal) => Promise<PeerId[]>

const MAX_LOOKUPS = 16

export async function exploreRegion (closest: ClosestPeers, start: { kad: Buffer, preimage: Uint8Array }, k: number, signal: AbortSignal): Promise<Region> {
  const known = new Map<string, RegionPeer>()
  const covered: string[] = []
  let target = start
  let lookups = 0
  let stale = 0
  for (;;) {
    const found = await closest(target.preimage, signal)
    lookups++
    if (found.length === 0 && known.size === 0) throw new Error('the DHT lookup found no peers')
    let fresh = 0
    for (const id of found) {
      const key = id.toString()
      if (!known.has(key)) { known.set(key, { id, kad: peerKadId(id) }); fresh++ }
    }
    // (peers that did not answer are as good as absent: no record can be stored with them)
    let m = 256
    for (const id of found) m = Math.min(m, commonPrefixLength(target.kad, known.get(id.toString())?.kad as Buffer))
    covered.push(bitsOf(target.kad, Math.min(m + 1, 256)))
    // lookups that bring no new peer, twice in a row: every reachable peer is known (a network smaller than k)
    stale = fresh === 0 ? stale + 1 : 0
    if (stale >= 2) covered.push('')
    const prefix = regionPrefix(start.kad, [...known.values()], k)
    const missing = gaps(prefix, covered)
    const peers = [...known.values()].filter(p => hasPrefix(p.kad, prefix))
    if (missing.length === 0) return { prefix, peers, lookups, complete: true }
    const next = lookups < MAX_LOOKUPS ? await preimageWithPrefix(missing[0] as string, signal) : undefined
    if (next == null) return { prefix, peers, lookups, complete: false }
    target = { preimage: next, kad: sha256(next) }
  }
}

/** The longest prefix of `key` with at least k known peers under it ('' if fewer than k are known). */
function regionPrefix (key: Buffer, peers: RegionPeer[], k: number): string {
  if (peers.length < k) return ''
  const cpls = peers.map(p => commonPrefixLength(key, p.kad)).sort((a, b) => b - a)
  return bitsOf(key, cpls[k - 1] as number)
}

/** The parts of `prefix` no covered prefix tiles. */
export function gaps (prefix: string, covered: string[]): string[] {
  if (covered.some(c => prefix.startsWith(c))) return []
  if (!covered.some(c => c.startsWith(prefix))) return [prefix]
  return [...gaps(prefix + '0', covered), ...gaps(prefix + '1', covered)]
}

/** The k peers of a region closest to a key (all of them if fewer). */
export function closestInRegion (region: Region, key: Buffer, k: number): RegionPeer[] {
  if (region.peers.length <= k) return region.peers
  return [...region.peers].sort((a, b) => compareDistance(key, a.kad, b.kad)).slice(0, k)
}
