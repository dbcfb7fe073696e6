/**
 * A set of CIDs held in typed arrays: what ServableBlocks keeps of every
 * referenced block, so a ledger of millions of blocks costs tens of bytes a
 * block and no object for the garbage collector to walk.
 *
 * A CID is its codec and multihash, as the ledger keys it (v0 and v1 of the
 * same dag-pb block are one). A 32-byte digest (sha2-256, blake3…) goes in
 * an open-addressing table: one byte naming its codec and hash function
 * (up to 255 such pairs, numbered as met) and the 32 digest bytes, 33 bytes
 * a slot, probed linearly, kept between 3/8 and 3/4 full (~55 bytes a CID
 * on average). Any other CID (identity or longer digests, a 256th pair) goes
 * in a Set of strings: rare, and dearer.
 *
 * The slot comes from the digest's first 8 bytes mixed with a per-process
 * random seed: digests are uniform, and the seed keeps anyone who can pin
 * blocks from choosing digests that pile up in one run of slots.
 */
import { randomFillSync } from 'node:crypto'
import { CID } from 'multiformats/cid'

const DIGEST = 32
const WORDS = DIGEST / 4
const MIN_SLOTS = 1024
/** a codec and hash function pair is numbered by codec × 2^20 + hash code */
const PAIR_SPAN = 2 ** 20
const MAX_TAGS = 255

function wordAt (d: Uint8Array, i: number): number {
  return (d[i] as number) | ((d[i + 1] as number) << 8) | ((d[i + 2] as number) << 16) | ((d[i + 3] as number) << 24)
}

export class CidSet {
  /** per slot: 0 empty, else the tag of the CID's codec and hash function */
  private tags = new Uint8Array(MIN_SLOTS)
  /** per slot: the digest as 8 little-endian words */
  private words = new Int32Array(MIN_SLOTS * WORDS)
  private mask = MIN_SLOTS - 1
  private inTable = 0
  private readonly pairTags = new Map<number, number>()
  /** every other CID, by its codec and multihash bytes */
  private readonly others = new Set<string>()
  private readonly seed: number
  private readonly seed2: number

  constructor () {
    const s = randomFillSync(new Int32Array(2))
    this.seed = s[0] as number
    this.seed2 = s[1] as number
  }

  get size (): number {
    return this.inTable + this.others.size
  }

  /** Makes room for `n` CIDs at once (a load that knows how many come). */
  reserve (n: number): void {
    let slots = this.tags.length
    while (n > slots * 0.75) slots *= 2
    if (slots !== this.tags.length) this.resize(slots)
  }

  has (cid: CID): boolean {
    const d = cid.multihash.digest
    const tag = d.length === DIGEST ? this.tagOf(cid.code, cid.multihash.code, false) : 0
    if (tag === 0) return this.others.size > 0 && this.others.has(otherKey(cid.code, cid.multihash.bytes))
    return this.find(tag, d) >= 0
  }

  add (cid: CID): void {
    this.addParts(cid.code, cid.multihash.code, cid.multihash.digest, cid.multihash.bytes)
  }

  delete (cid: CID): void {
    this.deleteParts(cid.code, cid.multihash.code, cid.multihash.digest, cid.multihash.bytes)
  }

  /** Adds a CID given as the ledger keys it (v1, as a string), without building a CID (a load adds millions). */
  addKey (key: string): void {
    const k = partsOf(key)
    this.addParts(k.codec, k.hash, k.digest, k.multihash)
  }

  deleteKey (key: string): void {
    const k = partsOf(key)
    this.deleteParts(k.codec, k.hash, k.digest, k.multihash)
  }

  private addParts (codec: number, hash: number, d: Uint8Array, mh: Uint8Array): void {
    const tag = d.length === DIGEST ? this.tagOf(codec, hash, true) : 0
    if (tag === 0) { this.others.add(otherKey(codec, mh)); return }
    if (this.find(tag, d) >= 0) return
    if (this.inTable + 1 > this.tags.length * 0.75) this.resize(this.tags.length * 2)
    let i = this.home(tag, wordAt(d, 0), wordAt(d, 4))
    while (this.tags[i] !== 0) i = (i + 1) & this.mask
    this.tags[i] = tag
    for (let w = 0; w < WORDS; w++) this.words[i * WORDS + w] = wordAt(d, w * 4)
    this.inTable++
  }

  private deleteParts (codec: number, hash: number, d: Uint8Array, mh: Uint8Array): void {
    const tag = d.length === DIGEST ? this.tagOf(codec, hash, false) : 0
    if (tag === 0) { this.others.delete(otherKey(codec, mh)); return }
    let hole = this.find(tag, d)
    if (hole < 0) return
    this.inTable--
    // backward shift: each entry after the hole, up to an empty slot, moves into it if its home is not between them
    let j = hole
    for (;;) {
      j = (j + 1) & this.mask
      const t = this.tags[j] as number
      if (t === 0) break
      const home = this.home(t, this.words[j * WORDS] as number, this.words[j * WORDS + 1] as number)
      if (((j - home) & this.mask) < ((j - hole) & this.mask)) continue
      this.tags[hole] = t
      this.words.copyWithin(hole * WORDS, j * WORDS, j * WORDS + WORDS)
      hole = j
    }
    this.tags[hole] = 0
    if (this.tags.length > MIN_SLOTS && this.inTable < this.tags.length * 0.2) this.resize(this.tags.length / 2)
  }

  /** the slot of this digest, or -1 */
  private find (tag: number, d: Uint8Array): number {
    const w0 = wordAt(d, 0)
    const w1 = wordAt(d, 4)
    let i = this.home(tag, w0, w1)
    for (;;) {
      const t = this.tags[i]
      if (t === 0) return -1
      if (t === tag && this.words[i * WORDS] === w0 && this.same(i, d)) return i
      i = (i + 1) & this.mask
    }
  }

  private same (i: number, d: Uint8Array): boolean {
    for (let w = 1; w < WORDS; w++) if (this.words[i * WORDS + w] !== wordAt(d, w * 4)) return false
    return true
  }

  private home (tag: number, w0: number, w1: number): number {
    let h = (w0 ^ this.seed) + Math.imul(w1 ^ this.seed2, 0x9e3779b1) + Math.imul(tag, 0x85ebca6b)
    h ^= h >>> 16
    h = Math.imul(h, 0x7feb352d)
    h ^= h >>> 15
    h = Math.imul(h, 0x846ca68b)
    h ^= h >>> 16
    return h & this.mask
  }

  /** the tag of the CID's codec and hash function; 0 when it has none (and `assign` is false, or there is no tag left) */
  private tagOf (codec: number, hash: number, assign: boolean): number {
    if (hash >= PAIR_SPAN || codec >= 2 ** 32) return 0
    const pair = codec * PAIR_SPAN + hash
    const tag = this.pairTags.get(pair)
    if (tag !== undefined || !assign || this.pairTags.size >= MAX_TAGS) return tag ?? 0
    this.pairTags.set(pair, this.pairTags.size + 1)
    return this.pairTags.size
  }

  private resize (slots: number): void {
    const tags = this.tags
    const words = this.words
    this.tags = new Uint8Array(slots)
    this.words = new Int32Array(slots * WORDS)
    this.mask = slots - 1
    for (let j = 0; j < tags.length; j++) {
      const t = tags[j] as number
      if (t === 0) continue
      let i = this.home(t, words[j * WORDS] as number, words[j * WORDS + 1] as number)
      while (this.tags[i] !== 0) i = (i + 1) & this.mask
      this.tags[i] = t
      this.words.set(words.subarray(j * WORDS, j * WORDS + WORDS), i * WORDS)
    }
  }
}

/** a CID outside the table: its codec, then its multihash's bytes as latin1 */
function otherKey (codec: number, mh: Uint8Array): string {
  return `${codec}:${Buffer.from(mh.buffer, mh.byteOffset, mh.byteLength).toString('latin1')}`
}

/** a CID's parts, read from its string */
export interface CidParts { codec: number, hash: number, digest: Uint8Array, multihash: Uint8Array }

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567'
const BASE32_VALUE = new Int8Array(128).fill(-1)
for (let i = 0; i < BASE32.length; i++) BASE32_VALUE[BASE32.charCodeAt(i)] = i
const scratch = new Uint8Array(256)

/**
 * The parts of a CID given as a string: a CIDv1 in base32 (how the ledger
 * keys every CID) decoded here in place; any other through CID.parse. The
 * digest and multihash returned are valid until the next call.
 */
export function partsOf (key: string): CidParts {
  const n = key.charCodeAt(0) === 0x62 && key.length * 5 / 8 <= scratch.length ? decodeBase32(key) : -1
  if (n > 0 && scratch[0] === 1) {
    let i = 1
    const codec = varintAt(i, n); i = varintEnd
    const start = i
    const hash = varintAt(i, n); i = varintEnd
    const size = varintAt(i, n); i = varintEnd
    if (codec >= 0 && hash >= 0 && size >= 0 && i + size === n) return { codec, hash, digest: scratch.subarray(i, n), multihash: scratch.subarray(start, n) }
  }
  const cid = CID.parse(key)
  return { codec: cid.code, hash: cid.multihash.code, digest: cid.multihash.digest, multihash: cid.multihash.bytes }
}

/**
 * A CID's codec and multihash as one latin1 string (its CIDv1 bytes after
 * the version): the same for a CID's v0 and v1, and for its string and its
 * object (ServableBlocks' key of a root).
 */
export function codecAndMultihash (cid: CID | string): string {
  if (typeof cid === 'string') {
    const n = cid.charCodeAt(0) === 0x62 && cid.length * 5 / 8 <= scratch.length ? decodeBase32(cid) : -1
    if (n > 1 && scratch[0] === 1) return Buffer.from(scratch.buffer, scratch.byteOffset + 1, n - 1).toString('latin1')
    cid = CID.parse(cid)
  }
  const b = cid.bytes
  if (cid.version === 1) return Buffer.from(b.buffer, b.byteOffset + 1, b.byteLength - 1).toString('latin1')
  return String.fromCharCode(cid.code) + Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1')
}

/** the bytes of multibase base32 (after its 'b') into scratch: how many, or -1 */
function decodeBase32 (s: string): number {
  let bits = 0
  let value = 0
  let n = 0
  for (let i = 1; i < s.length; i++) {
    const c = s.charCodeAt(i)
    const v = c < 128 ? BASE32_VALUE[c] as number : -1
    if (v < 0) return -1
    value = ((value << 5) | v) & 0xfff
    bits += 5
    if (bits >= 8) {
      bits -= 8
      scratch[n++] = (value >>> bits) & 0xff
    }
  }
  return n
}

let varintEnd = 0
/** the unsigned varint at `i` (before `end`), its end in varintEnd; -1 when it runs past `end` or past 2^28 */
function varintAt (i: number, end: number): number {
  let v = 0
  for (let shift = 0; shift < 28 && i < end; shift += 7) {
    const b = scratch[i++] as number
    v |= (b & 0x7f) << shift
    if (b < 0x80) { varintEnd = i; return v }
  }
  return -1
}
