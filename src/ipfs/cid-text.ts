/**
 * A CID from its text in any multibase multiformats knows (base32, base58btc
 * `Qm…` and `z…`, base36, base16 `f…` …), picked by its prefix: what the
 * gateway's paths and denylist rules may be written in.
 */
import { bases } from 'multiformats/basics'
import type { MultibaseDecoder } from 'multiformats/bases/interface'
import { CID } from 'multiformats/cid'

const BASES = new Map<string, { decode(text: string): Uint8Array<ArrayBuffer> }>(Object.values(bases).map(b => [b.prefix as string, b]))
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
