/**
 * A denylist's rules, compiled for O(1) lookups per request, and the keys a
 * request is looked up by.
 *
 * Every rule that names one exact thing becomes a digest in a DigestTable,
 * one table per hash function:
 *   - `/ipfs/CID[/PATH]` → sha2-256 of `b58(multihash)[/PATH]`: the modern
 *     double hash of the same thing, so a plain rule and its double-hashed
 *     form are one key;
 *   - `//<multihash>` → its digest, in the table of its hash function;
 *   - `//<hex>` (legacy) → its sha2-256 digest; a request's legacy key
 *     `CIDv1-base32/PATH` is looked up in the same sha2-256 table.
 * Prefix rules (`/ipfs/CID/PATH*`) are kept apart by multihash: a request
 * checks only those of its own CID. `/ipns/` rules are counted, never
 * matched (pind serves no IPNS).
 *
 * Each entry's value is its line number (×2, +1 for an exception): of all
 * rules matching a request the one on the latest line wins (`!` exceptions
 * must follow what they except), and a later rule for the same key replaces
 * the earlier one.
 */
import { base32 } from 'multiformats/bases/base32'
import { base58btc } from 'multiformats/bases/base58'
import { CID } from 'multiformats/cid'
import { DigestTable } from './digest-table.js'
import { hasherFor, SHA2_256, type DoubleHasher } from './hashes.js'
import type { Rule } from './rule.js'

export interface Match {
  /** the rule's line (or position, for lists not read from a file) */
  line: number
  /** an exception (`!`): the request is allowed */
  allow: boolean
}

const sha256 = hasherFor(SHA2_256) as DoubleHasher

/** ASCII code → hex digit value, -1 for anything else */
const HEX = new Int8Array(256).fill(-1)
for (let c = 0; c < 10; c++) HEX[48 + c] = c
for (let c = 0; c < 6; c++) { HEX[97 + c] = 10 + c; HEX[65 + c] = 10 + c }

/**
 * What one CID (and a path under it) is looked up by, computed at most once
 * per request whatever the number of lists: base58 of its multihash, its
 * CIDv1 in base32, and their digests per hash function.
 */
export class Probe {
  private b58?: string
  private v1?: string
  private readonly digests = new Map<string, Uint8Array>()

  constructor (readonly cid: CID) {}

  get multihashB58 (): string {
    this.b58 ??= base58btc.baseEncode(this.cid.multihash.bytes)
    return this.b58
  }

  /** `b58(multihash)[/path]`, hashed with `code` */
  modern (code: number, hasher: DoubleHasher, path: string): Uint8Array {
    return this.hashed(`${code}:${path}`, hasher, () => path === '' ? this.multihashB58 : `${this.multihashB58}/${path}`)
  }

  /** sha2-256 of `CIDv1-base32/path` (the trailing slash stays when the path is empty) */
  legacy (path: string): Uint8Array {
    return this.hashed(`legacy:${path}`, sha256, () => {
      this.v1 ??= (this.cid.version === 1 ? this.cid : CID.createV1(this.cid.code, this.cid.multihash)).toString(base32)
      return `${this.v1}/${path}`
    })
  }

  private hashed (key: string, hasher: DoubleHasher, preimage: () => string): Uint8Array {
    let d = this.digests.get(key)
    if (d == null) {
      d = hasher.digest(preimage())
      this.digests.set(key, d)
    }
    return d
  }
}

interface PrefixRule { path: string, value: number }

export interface ListCounts {
  /** rules that can match (exact, double-hashed, prefix) */
  rules: number
  /** /ipns/ rules: read, never matched */
  ipns: number
  /** rules naming the empty block or directory: never blocked */
  harmless: number
}

export class CompiledList {
  /** `modern`/`legacy`: which kind of key the table holds, so a request computes only those */
  private readonly tables = new Map<number, { table: DigestTable, hasher: DoubleHasher, modern: boolean, legacy: boolean }>()
  private readonly prefixes = new Map<string, PrefixRule[]>()
  readonly counts: ListCounts = { rules: 0, ipns: 0, harmless: 0 }

  get empty (): boolean {
    return this.tables.size === 0 && this.prefixes.size === 0
  }

  /** bytes held by the lookup tables */
  get byteSize (): number {
    let n = 0
    for (const { table } of this.tables.values()) n += table.byteSize
    return n
  }

  /** `line` ≥ 1 orders the rules: the latest matching one wins */
  add (rule: Rule, line: number): void {
    if (rule.kind === 'harmless') { this.counts.harmless++; return }
    if (rule.kind === 'ipns') { this.counts.ipns++; return }
    const value = line * 2 + (rule.allow ? 1 : 0)
    this.counts.rules++
    if (rule.kind === 'double-hash') {
      for (const { code, digest, legacy } of rule.digests) this.tableOf(code, legacy === true).set(digest, value)
      return
    }
    const b58 = base58btc.baseEncode(rule.multihash)
    if (rule.prefix) {
      const list = this.prefixes.get(b58)
      if (list == null) this.prefixes.set(b58, [{ path: rule.path, value }])
      else list.push({ path: rule.path, value })
      return
    }
    this.tableOf(SHA2_256).set(sha256.digest(rule.path === '' ? b58 : `${b58}/${rule.path}`), value)
  }

  /**
   * A line of a file, from its bytes (`bytes[start .. end)`, no newline),
   * when it is `//` and 64 hex digits at least one of which is `0` (a CR may
   * end it): a legacy double hash, the bulk of Bad Bits, which reads only as
   * hex (a `0` is no base58 digit), compiled without making a string.
   * False, and nothing added, for any other line.
   */
  addLegacyHexLine (bytes: Uint8Array, start: number, end: number, line: number): boolean {
    const len = end > start && bytes[end - 1] === 13 ? end - start - 1 : end - start
    if (len !== 66 || bytes[start] !== 47 || bytes[start + 1] !== 47) return false
    let zero = false
    for (let i = 0, at = start + 2; i < 32; i++, at += 2) {
      const c1 = bytes[at] as number
      const c2 = bytes[at + 1] as number
      const hi = HEX[c1] as number
      const lo = HEX[c2] as number
      if (hi < 0 || lo < 0) return false
      if (c1 === 48 || c2 === 48) zero = true
      this.scratch[i] = (hi << 4) | lo
    }
    if (!zero) return false
    this.tableOf(SHA2_256, true).set(this.scratch, line * 2)
    this.counts.rules++
    return true
  }

  private readonly scratch = new Uint8Array(32)

  /** `expected`: about how many sha2-256 keys will be added (sized once rather than grown) */
  constructor (private readonly expected = 0) {}

  /** Frees the room tables grew into and no rule took (the list is complete). */
  trim (): void {
    for (const { table } of this.tables.values()) table.trim()
  }

  /** The latest rule matching `path` ('' = the CID itself) under the probe's CID, if any. */
  match (probe: Probe, path: string): Match | undefined {
    let best = -1
    for (const [code, { table, hasher, modern, legacy }] of this.tables) {
      if (modern) best = Math.max(best, table.get(probe.modern(code, hasher, path)) ?? -1)
      if (legacy) best = Math.max(best, table.get(probe.legacy(path)) ?? -1)
    }
    if (this.prefixes.size > 0) {
      for (const p of this.prefixes.get(probe.multihashB58) ?? []) {
        if (path.startsWith(p.path)) best = Math.max(best, p.value)
      }
    }
    return best < 0 ? undefined : { line: Math.floor(best / 2), allow: (best & 1) === 1 }
  }

  /** the table of a hash function; `legacy`: for a legacy (sha2-256 hex) key, else a modern one */
  private tableOf (code: number, legacy = false): DigestTable {
    let t = this.tables.get(code)
    if (t == null) {
      const hasher = hasherFor(code)
      if (hasher == null) throw new RangeError(`no hasher for 0x${code.toString(16)}`)
      t = { table: new DigestTable(hasher.length, code === SHA2_256 ? this.expected : 0), hasher, modern: false, legacy: false }
      this.tables.set(code, t)
    }
    if (legacy) t.legacy = true
    else t.modern = true
    return t.table
  }
}
