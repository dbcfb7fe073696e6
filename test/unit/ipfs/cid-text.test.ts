/**
 * The gateway takes a CID only as its multibase writes it (decodeCanonicalCid): multiformats also
 * decodes base32 in mixed case or with padding, which would give one CID many names.
 */
import { base16 } from 'multiformats/bases/base16'
import { base32, base32upper } from 'multiformats/bases/base32'
import { base36 } from 'multiformats/bases/base36'
import { base58btc } from 'multiformats/bases/base58'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { describe, expect, it } from 'vitest'
import { decodeCanonicalCid, decodeCid } from '../../../src/ipfs/cid-text.js'

describe('decodeCanonicalCid', () => {
  it('takes a CID in each base as that base writes it, CIDv0 included', async () => {
    const v1 = CID.createV1(0x70, await sha256.digest(new TextEncoder().encode('cid text')))
    const texts = [v1.toString(), v1.toString(base32upper), v1.toString(base36), v1.toString(base58btc), v1.toString(base16), v1.toV0().toString()]
    for (const t of texts) expect(decodeCanonicalCid(t).equals(t.startsWith('Qm') ? v1.toV0() : v1), t).toBe(true)
  })

  it('refuses base32 in mixed case or with padding, which decodeCid takes', async () => {
    const cid = CID.createV1(0x55, await sha256.digest(new TextEncoder().encode('cid text')))
    const real = cid.toString(base32)
    for (const t of [real.slice(0, 10) + real.slice(10, 20).toUpperCase() + real.slice(20), `${real}====`, `B${real.slice(1)}`]) {
      // the same CID's bytes, the text kept as its string
      expect(decodeCid(t).equals(cid), t).toBe(true)
      expect(() => decodeCanonicalCid(t), t).toThrow(/multibase/)
    }
  })
})
