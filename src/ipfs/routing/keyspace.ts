/**
 * The Kademlia keyspace of the Amino DHT: a CID's key is sha256 of its
 * multihash, a peer's is sha256 of its peer ID's multihash; closeness is XOR
 * distance. Prefixes are bit strings ('0101…'); a prefix names a keyspace
 * region (every key starting with those bits).
 */
import { createHash, randomBytes } from 'node:crypto'
import type { PeerId } from '@libp2p/interface'

export const KEY_BYTES = 32
/** the longest prefix a lookup target is searched for (2^20 hashes at worst); longer gaps are left unexplored */
export const MAX_TARGET_PREFIX = 20

export function sha256 (bytes: Uint8Array): Buffer {
  return createHash('sha256').update(bytes).digest()
}

export function peerKadId (peer: PeerId): Buffer {
  return sha256(peer.toMultihash().bytes)
}

/** Common prefix length in bits. */
export function commonPrefixLength (a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < KEY_BYTES; i++) {
    const x = (a[i] as number) ^ (b[i] as number)
    if (x !== 0) return i * 8 + Math.clz32(x) - 24
  }
  return KEY_BYTES * 8
}

/** XOR distance order: negative if `a` is closer to `target` than `b`. */
export function compareDistance (target: Uint8Array, a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < KEY_BYTES; i++) {
    const da = (a[i] as number) ^ (target[i] as number)
    const db = (b[i] as number) ^ (target[i] as number)
    if (da !== db) return da - db
  }
  return 0
}

/** The first `n` bits of a key as a bit string. */
export function bitsOf (key: Uint8Array, n: number): string {
  let s = ''
  for (let i = 0; i < n; i++) s += ((key[i >> 3] as number) >> (7 - (i & 7))) & 1
  return s
}

export function hasPrefix (key: Uint8Array, prefix: string): boolean {
  for (let i = 0; i < prefix.length; i++) {
    if (((((key[i >> 3] as number) >> (7 - (i & 7))) & 1) === 1) !== (prefix[i] === '1')) return false
  }
  return true
}

/** The keys a prefix covers, as a byte range: start inclusive, end exclusive (none past the last key). */
export function prefixRange (prefix: string): { start: Buffer, end?: Buffer } {
  const start = Buffer.alloc(KEY_BYTES)
  for (let i = 0; i < prefix.length; i++) if (prefix[i] === '1') start[i >> 3] = (start[i >> 3] as number) | (1 << (7 - (i & 7)))
  // end = prefix + 1 at its last bit, then zeros
  const lastZero = prefix.lastIndexOf('0')
  if (lastZero < 0) return { start }
  const end = Buffer.alloc(KEY_BYTES)
  const upTo = prefix.slice(0, lastZero) + '1'
  for (let i = 0; i < upTo.length; i++) if (upTo[i] === '1') end[i >> 3] = (end[i >> 3] as number) | (1 << (7 - (i & 7)))
  return { start, end }
}

/** A key's position in the keyspace as a fraction in [0, 1) (its first 48 bits). */
export function keyFraction (key: Uint8Array): number {
  return Buffer.from(key.subarray(0, 6)).readUIntBE(0, 6) / 2 ** 48
}

/**
 * Bytes whose sha256 starts with `prefix`: a lookup target inside a region
 * (the DHT hashes what it is asked about). Yields to the event loop while it
 * searches; expected 2^len tries. Undefined past MAX_TARGET_PREFIX bits.
 */
export async function preimageWithPrefix (prefix: string, signal?: AbortSignal): Promise<Uint8Array | undefined> {
  if (prefix.length > MAX_TARGET_PREFIX) return undefined
  const seed = randomBytes(16)
  for (let n = 0; ; n++) {
    seed.writeUInt32BE(n >>> 0, 12)
    if (hasPrefix(sha256(seed), prefix)) return Buffer.from(seed)
    if ((n & 0xfff) === 0xfff) {
      await new Promise(resolve => setImmediate(resolve))
      signal?.throwIfAborted()
    }
  }
}
