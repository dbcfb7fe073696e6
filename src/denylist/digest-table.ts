/**
 * A set of fixed-length digests, each with a 32-bit value, held in three
 * flat typed arrays instead of one JS object per entry: a list the size of
 * Bad Bits (hundreds of thousands of sha2-256 double-hashes) costs 32 bytes
 * of digest and 4 of value an entry, plus 8-16 of index (arrays grow by
 * doubling), where a Set of hex strings costs several times that and
 * burdens the GC (scripts/bench-denylist.mjs measures both).
 *
 * Open addressing with linear probing; the slot comes from the digest's
 * first four bytes, which are uniform (every key is a cryptographic digest).
 * Lookups are O(1) on average and allocate nothing.
 */
const EMPTY = -1
const MIN_CAPACITY = 16

export class DigestTable {
  /** entry i's digest is keys[i*length .. (i+1)*length) */
  private keys: Uint8Array
  private values: Uint32Array
  /** power of two, at most half full: an entry's index, or EMPTY */
  private slots: Int32Array
  private mask: number
  private count = 0

  constructor (readonly length: number, expected = MIN_CAPACITY) {
    if (length < 4) throw new RangeError('digests of at least 4 bytes')
    const entries = Math.max(MIN_CAPACITY, expected)
    this.keys = new Uint8Array(entries * length)
    this.values = new Uint32Array(entries)
    const capacity = pow2AtLeast(entries * 2)
    this.slots = new Int32Array(capacity).fill(EMPTY)
    this.mask = capacity - 1
  }

  get size (): number {
    return this.count
  }

  /** bytes held by the arrays (what the table costs) */
  get byteSize (): number {
    return this.keys.byteLength + this.values.byteLength + this.slots.byteLength
  }

  /** Sets the value of `digest` (`digest[offset .. offset+length)`), replacing an earlier one. */
  set (digest: Uint8Array, value: number, offset = 0): void {
    if (digest.length - offset < this.length) throw new RangeError(`a digest of ${this.length} bytes`)
    // room first, so the empty slot the probe ends on is where the entry goes
    if ((this.count + 1) * 2 > this.slots.length) this.growSlots()
    let s = this.slotOf(digest, offset)
    for (let i = this.slots[s] as number; i !== EMPTY; s = (s + 1) & this.mask, i = this.slots[s] as number) {
      if (this.equalAt(i, digest, offset)) {
        this.values[i] = value
        return
      }
    }
    if (this.count === this.values.length) this.growEntries()
    const i = this.count++
    const base = i * this.length
    for (let k = 0; k < this.length; k++) this.keys[base + k] = digest[offset + k] as number
    this.values[i] = value
    this.slots[s] = i
  }

  /** Frees what growing by doubling left unused (once a list is read whole). */
  trim (): void {
    if (this.values.length === this.count) return
    this.keys = this.keys.slice(0, Math.max(1, this.count) * this.length)
    this.values = this.values.slice(0, Math.max(1, this.count))
  }

  get (digest: Uint8Array, offset = 0): number | undefined {
    const at = this.find(digest, offset)
    return at >= 0 ? this.values[at] : undefined
  }

  private find (digest: Uint8Array, offset: number): number {
    if (digest.length - offset < this.length) return EMPTY
    for (let s = this.slotOf(digest, offset); ; s = (s + 1) & this.mask) {
      const i = this.slots[s] as number
      if (i === EMPTY) return EMPTY
      if (this.equalAt(i, digest, offset)) return i
    }
  }

  private equalAt (i: number, digest: Uint8Array, offset: number): boolean {
    const base = i * this.length
    for (let k = 0; k < this.length; k++) {
      if (this.keys[base + k] !== digest[offset + k]) return false
    }
    return true
  }

  private slotOf (digest: Uint8Array, offset: number): number {
    return (((digest[offset] as number) << 24) | ((digest[offset + 1] as number) << 16) | ((digest[offset + 2] as number) << 8) | (digest[offset + 3] as number)) & this.mask
  }

  private place (i: number): void {
    let s = this.slotOf(this.keys, i * this.length)
    while (this.slots[s] !== EMPTY) s = (s + 1) & this.mask
    this.slots[s] = i
  }

  private growEntries (): void {
    const entries = Math.max(MIN_CAPACITY, this.values.length * 2)
    const keys = new Uint8Array(entries * this.length)
    keys.set(this.keys)
    const values = new Uint32Array(entries)
    values.set(this.values)
    this.keys = keys
    this.values = values
  }

  private growSlots (): void {
    const capacity = this.slots.length * 2
    this.slots = new Int32Array(capacity).fill(EMPTY)
    this.mask = capacity - 1
    for (let i = 0; i < this.count; i++) this.place(i)
  }
}

function pow2AtLeast (n: number): number {
  let p = MIN_CAPACITY
  while (p < n) p *= 2
  return p
}
