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

/** the value of an ASCII hex digit (the caller checked it is one) */
function nibble (c: number): number {
  return c <= 57 ? c - 48 : (c | 32) - 87
}
const utf8 = new TextEncoder()

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
      this.v1 ??= CID.createV1(this.cid.code, this.cid.multihash).toString(base32)
      return `${this.v1}/${path}`
    })
  }

  private hashed (key: string, hasher: DoubleHasher, preimage: () => string): Uint8Array {
    let d = this.digests.get(key)
    if (d == null) {
      d = hasher.digest(utf8.encode(preimage()))
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
    this.tableOf(SHA2_256).set(sha256.digest(utf8.encode(rule.path === '' ? b58 : `${b58}/${rule.path}`)), value)
  }

  /**
   * `//<64 hex digits>` read straight from a file's bytes (`hex` at
   * `offset`): a legacy double hash, the bulk of Bad Bits. The caller
   * checked that the digits hold a `0`, so they cannot also read as base58
   * (every other hex digit is one): the one reading the spec asks for.
   */
  addLegacyHex (bytes: Uint8Array, offset: number, line: number): void {
    for (let i = 0; i < 32; i++) this.scratch[i] = (nibble(bytes[offset + 2 * i] as number) << 4) | nibble(bytes[offset + 2 * i + 1] as number)
    this.tableOf(SHA2_256, true).set(this.scratch, line * 2)
    this.counts.rules++
  }

  private readonly scratch = new Uint8Array(32)

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
      t = { table: new DigestTable(hasher.length), hasher, modern: false, legacy: false }
      this.tables.set(code, t)
    }
    if (legacy) t.legacy = true
    else t.modern = true
    return t.table
  }
}
