/**
 * A CID from its text in any multibase multiformats knows (base32, base58btc
 * `Qm…` and `z…`, base36, base16 `f…` …), picked by its prefix: what the
 * gateway's paths and denylist rules may be written in.
 */
import { bases } from 'multiformats/basics'
import type { MultibaseDecoder } from 'multiformats/bases/interface'
import { CID } from 'multiformats/cid'

const BASES = new Map<string, { decode(text: string): Uint8Array<ArrayBuffer>, encode(bytes: Uint8Array): string }>(Object.values(bases).map(b => [b.prefix as string, b]))
const decoder: MultibaseDecoder<string> = {
  decode (text: string): Uint8Array<ArrayBuffer> {
    const base = BASES.get(text.charAt(0))
    if (base == null) throw new Error('unknown multibase prefix')
    return base.decode(text)
  }
}

/** Throws when `text` is not a CID. */
export function decodeCid (text: string): CID {
  return CID.parse(text, decoder)
}

/**
 * Throws when `text` is not a CID as its multibase writes it. multiformats also decodes texts no
 * encoder writes, base32 in mixed case or with `=` padding among them, and keeps such a text as
 * the CID's string: one CID would then have many names (a gateway path, a cache key, a log line).
 * The gateway takes only the one its base writes (CIDv0 is base58btc, which has one already).
 */
export function decodeCanonicalCid (text: string): CID {
  const cid = decodeCid(text)
  const base = cid.version === 0 ? undefined : BASES.get(text.charAt(0))
  if (base != null && base.encode(cid.bytes) !== text) throw new Error('not written as its multibase writes it')
  return cid
}
