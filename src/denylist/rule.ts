/**
 * One block item of a compact denylist (IPIP-383,
 * https://specs.ipfs.tech/compact-denylist-format/):
 *
 *   /ipfs/CID            the CID's multihash (any codec, v0 or v1)
 *   /ipfs/CID/PATH       exactly that path under it (`/PATH/` alike)
 *   /ipfs/CID/PATH*      every path starting with PATH (`/PATH/*` alike; `/*` = the CID and all paths)
 *   /ipns/NAME[/PATH]    parsed, never matched: pind serves no IPNS
 *   //B58-MULTIHASH      a double hash: the multihash of `b58(multihash of CID)[/PATH]`
 *   //SHA256-HEX         legacy double hash (Bad Bits): sha2-256 of `CIDv1-base32/PATH`
 *   !RULE                an exception (allow); the last matching rule wins
 *
 * `/ipld/` is read as `/ipfs/`. Paths are %-encoded (RFC 3986) and compared
 * decoded, without leading or trailing slashes. A double hash that reads both
 * as a base58 multihash and as hex is kept both ways, as the spec requires.
 * Rules naming the empty block or empty directory are ignored (blocking them
 * breaks applications), as boxo's nopfs does.
 */
import { PindError } from '../kernel/errors.js'
import { base58btc } from 'multiformats/bases/base58'
import * as Digest from 'multiformats/hashes/digest'
import { decodeCid } from '../ipfs/cid-text.js'
import { hasherFor, SHA2_256, SUPPORTED_HASHES } from './hashes.js'

export type Rule =
  | { kind: 'ipfs', allow: boolean, multihash: Uint8Array, path: string, prefix: boolean }
  | { kind: 'ipns', allow: boolean, name: string, path: string, prefix: boolean }
  /** `legacy`: a sha2-256 hex digest, of `CIDv1-base32/PATH` */
  | { kind: 'double-hash', allow: boolean, digests: Array<{ code: number, digest: Uint8Array, legacy?: true }> }
  /** a known empty block or directory: never blocked */
  | { kind: 'harmless', cid: string, what: string }

export class RuleError extends PindError {
  override name = 'RuleError'
}

/** the empty block and empty directory, by CIDv1 (what boxo's nopfs refuses to block) */
const HARMLESS = new Map<string, string>([
  ['bafybeiczsscdsbs7ffqz55asqdf3smv6klcw3gofszvwlyarci47bgf354', 'the empty UnixFS directory'],
  ['bafyaabakaieac', 'the empty UnixFS directory (inlined)'],
  ['bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku', 'the empty block'],
  ['bafkqaaa', 'the empty block (inlined)'],
  ['bafybeif7ztnhq65lumvvtr4ekcwd2ifwgm3awq4zfr3srh462rwyinlb4y', 'the empty dag-pb block'],
  ['bafyreigbtj4x7ip5legnfznufuopl4sg4knzc2cof6duas4b3q2fy6swua', 'the empty dag-cbor block'],
  ['baguqeeraiqjw7i2vwntyuekgvulpp2det2kpwt6cd7tx5ayqybqpmhfk76fa', 'the empty dag-json block']
])

const HEX_SHA256 = /^[0-9a-fA-F]{64}$/
const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/
/**
 * how long the base58 text of a multihash of each supported function is: a
 * double hash of another length cannot be one, and is not decoded (base58
 * decoding is slow, and Bad Bits' hex lines without a 0 would all try)
 */
const B58_LENGTHS = new Set(SUPPORTED_HASHES.flatMap(code => {
  const h = hasherFor(code) as NonNullable<ReturnType<typeof hasherFor>>
  const low = base58btc.baseEncode(Digest.create(code, new Uint8Array(h.length)).bytes).length
  const high = base58btc.baseEncode(Digest.create(code, new Uint8Array(h.length).fill(255)).bytes).length
  return Array.from({ length: high - low + 3 }, (_, i) => low - 1 + i)
}))

/**
 * A line of a .deny file: undefined for a blank line or a comment; hints
 * after the rule (space-separated) are read past, as the spec allows.
 */
export function parseLine (line: string): Rule | undefined {
  const text = line.trim()
  if (text === '' || text.startsWith('#')) return undefined
  const end = text.search(/\s/)
  return parseRule(end < 0 ? text : text.slice(0, end))
}

/** One rule (no hints). Throws RuleError with what is wrong. */
export function parseRule (text: string): Rule {
  let rule = text
  let allow = false
  // `!` is the spec's; nopfs also reads `+` and `-` as exceptions
  if (rule.startsWith('!') || rule.startsWith('+') || rule.startsWith('-')) {
    allow = true
    rule = rule.slice(1)
  }
  if (rule.startsWith('//')) return { kind: 'double-hash', allow, digests: doubleHash(rule.slice(2)) }
  for (const ns of ['/ipfs/', '/ipld/']) {
    if (rule.startsWith(ns)) return ipfsRule(rule.slice(ns.length), allow)
  }
  if (rule.startsWith('/ipns/')) {
    const [name = '', rest] = cut(rule.slice('/ipns/'.length))
    if (name === '') throw new RuleError('an /ipns/ rule needs a name')
    return { kind: 'ipns', allow, name, ...blockedPath(rest) }
  }
  throw new RuleError('a rule starts with /ipfs/, /ipns/ or // (a double hash)')
}

function ipfsRule (rest: string, allow: boolean): Rule {
  const [cidText = '', sub] = cut(rest)
  let cid
  try {
    cid = decodeCid(cidText)
  } catch {
    throw new RuleError(`not a CID: ${cidText.slice(0, 100)}`)
  }
  const harmless = HARMLESS.get(cid.toV1().toString())
  if (harmless != null) return { kind: 'harmless', cid: cidText, what: harmless }
  return { kind: 'ipfs', allow, multihash: cid.multihash.bytes, ...blockedPath(sub) }
}

/** `a/b*` → {path: 'a/b', prefix: true}; %-decoded, slashes trimmed */
function blockedPath (raw: string | undefined): { path: string, prefix: boolean } {
  let text = raw ?? ''
  let prefix = false
  if (text.endsWith('*')) {
    prefix = true
    text = text.slice(0, -1)
  }
  let path: string
  try {
    path = decodeURIComponent(text)
  } catch {
    throw new RuleError(`malformed %-encoding in the path ${text.slice(0, 100)}`)
  }
  return { path: trimSlashes(path), prefix }
}

export function trimSlashes (path: string): string {
  let start = 0
  let end = path.length
  while (start < end && path.charCodeAt(start) === 47) start++
  while (end > start && path.charCodeAt(end - 1) === 47) end--
  return path.slice(start, end)
}

function cut (s: string): [string, string | undefined] {
  const i = s.indexOf('/')
  return i < 0 ? [s, undefined] : [s.slice(0, i), s.slice(i + 1)]
}

function doubleHash (text: string): Array<{ code: number, digest: Uint8Array, legacy?: true }> {
  const out: Array<{ code: number, digest: Uint8Array, legacy?: true }> = []
  let why58 = 'not a base58btc multihash of a supported hash function'
  if (B58_LENGTHS.has(text.length) && BASE58.test(text)) {
    try {
      const mh = Digest.decode(base58btc.baseDecode(text))
      const hasher = hasherFor(mh.code)
      if (mh.code === 0) why58 = 'an identity multihash is no double hash'
      else if (hasher == null) why58 = `hash function 0x${mh.code.toString(16)} is not supported`
      else if (mh.size !== hasher.length) why58 = `a ${hasher.name} digest of ${mh.size} bytes (truncated digests are not supported)`
      else out.push({ code: mh.code, digest: mh.digest })
    } catch (err) {
      why58 = `not a multihash (${(err as Error).message})`
    }
  }
  if (HEX_SHA256.test(text)) out.push({ code: SHA2_256, digest: Buffer.from(text, 'hex'), legacy: true })
  if (out.length === 0) throw new RuleError(`a double hash is a base58btc multihash or 64 hex digits of sha2-256: ${text.slice(0, 100)} is neither (${why58})`)
  return out
}
