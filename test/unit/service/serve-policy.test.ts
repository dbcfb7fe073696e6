/**
 * The one "may this block be served" answer the gateway and bitswap share:
 * denials first (on every channel), then small self-contained identity CIDs,
 * then the scope (the ledger's live pins, or anything held), and the
 * gateway's network read-through for the gateway only.
 */
import { CID } from 'multiformats/cid'
import { identity } from 'multiformats/hashes/identity'
import { describe, expect, it } from 'vitest'
import { ServePolicy } from '../../../src/service/serving/serve-policy.js'

const PINNED = CID.parse('bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy')
const ROOT = CID.parse('bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku')
const OTHER = CID.parse('bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba')
const INLINE = CID.createV1(0x55, identity.digest(Uint8Array.from([1, 2, 3])))
const INLINE_CBOR = CID.createV1(0x71, identity.digest(Uint8Array.from([0xa0])))

const pins = {
  isPinnedBlock: (cid: CID) => cid.equals(PINNED),
  hasLivePin: (cid: CID) => cid.equals(ROOT)
}

describe('ServePolicy', () => {
  it('pinned: the ledger decides, the same for the gateway and bitswap', () => {
    const p = new ServePolicy({ pins, scope: 'pinned' })
    for (const via of ['gateway', 'bitswap'] as const) {
      expect([PINNED, ROOT, OTHER, INLINE, INLINE_CBOR].map(c => p.mayServe(c, via)), via).toEqual([true, true, false, true, false])
    }
  })

  it('blockstore: anything held; read-through: the gateway asks for anything, bitswap still only what is pinned', () => {
    expect(new ServePolicy({ pins, scope: 'blockstore' }).mayServe(OTHER, 'bitswap')).toBe(true)
    const readThrough = new ServePolicy({ pins, scope: 'pinned', gatewayReadThrough: true })
    expect(readThrough.mayServe(OTHER, 'gateway')).toBe(true)
    expect(readThrough.mayServe(OTHER, 'bitswap')).toBe(false)
  })

  it('a denial beats every scope, on every channel', () => {
    for (const opts of [{ scope: 'pinned' as const }, { scope: 'blockstore' as const, gatewayReadThrough: true }]) {
      const p = new ServePolicy({ pins, ...opts, denied: cid => cid.equals(PINNED) || cid.equals(INLINE) })
      for (const via of ['gateway', 'bitswap'] as const) {
        expect(p.mayServe(PINNED, via)).toBe(false)
        expect(p.mayServe(INLINE, via)).toBe(false)
        expect(p.mayServe(ROOT, via)).toBe(true)
      }
    }
  })
})
