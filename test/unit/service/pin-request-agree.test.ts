/**
 * POST /pins checks the common body by hand (pin-request.ts commonPin) and
 * everything else with the zod schema. Random bodies, near the edges of both:
 * whatever the hand check takes, the schema takes too, as the same PinRequest;
 * whatever the schema refuses, parsePinRequest refuses with the schema's message.
 */
import { describe, expect, it } from 'vitest'
import { parsePinRequest, schemaPin, type PinRequest } from '../../../src/service/pins/pin-request.js'
import { random } from '../../helpers/random.js'


const CIDS = [
  'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', // raw, sha2-256
  'QmdfTbBqBPQ7VNxZEYEj14VmRuZBkqFbiwReogJgS1zR1n', // CIDv0
  'bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi', // dag-pb v1
  'bagaaierasords4njcts6vs7qvdjfcvgnume4hqohf65zsfguprqphs3icwea', // dag-json
  'bafkr4ihkr4ld3m4gqkjf4reryxsy2s5tkbxprqkow6fin2iiyvreuzzab4', // blake3: not pinned here
  'baeaaaiag', ' bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy ', '\tQmdfTbBqBPQ7VNxZEYEj14VmRuZBkqFbiwReogJgS1zR1n\n',
  'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52z', '', ' ', 'not a cid', 'b'.repeat(600), 'Qm', '0x12',
  42, null, undefined, true, [], {}, ['bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy']
]
const NAMES = ['', 'photo.jpg', 'x'.repeat(255), 'x'.repeat(256), '😀'.repeat(127), '😀'.repeat(128), 'é'.repeat(255), 'a\u0000b', null, undefined, 7, [], {}]
const ORIGINS = [[], null, undefined, ['/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWEyoppNCUx8Yx66oV9fJnriXwCcXwDDUA2kj6vnc6iDEp'], ['not a multiaddr'], 'x', {}, [1]]
const METAS = [{}, null, undefined, { a: 'b' }, [], { a: 1 }, 'x', Object.create(null)]
const EXTRA = [undefined, ['provider', 'x'], ['status', 'pinned'], ['__proto__', {}], ['constructor', 'x']]

function pick<T> (r: () => number, from: readonly T[]): T {
  return from[Math.floor(r() * from.length)] as T
}

function body (r: () => number): unknown {
  if (r() < 0.03) return pick(r, [null, 'cid', 42, [], ['cid']])
  const b: Record<string, unknown> = {}
  const fields: Array<[string, readonly unknown[]]> = [['cid', CIDS], ['name', NAMES], ['origins', ORIGINS], ['meta', METAS]]
  // random key order; a field left out or set to a value (undefined: present but undefined)
  for (const [k, values] of fields.sort(() => r() - 0.5)) if (r() < (k === 'cid' ? 0.95 : 0.6)) b[k] = pick(r, values)
  const extra = pick(r, EXTRA)
  if (extra != null) Object.defineProperty(b, extra[0] as string, { value: extra[1], enumerable: true, configurable: true, writable: true })
  return b
}

function outcome (f: () => PinRequest): { ok: true, cid: string, cidText: string, name?: string, origins: string[], meta: Record<string, string> } | { ok: false, message: string } {
  try {
    const p = f()
    return { ok: true, cid: p.cid.toString(), cidText: p.cidText, ...(p.name != null ? { name: p.name } : {}), origins: p.origins, meta: { ...p.meta } }
  } catch (err) {
    return { ok: false, message: (err as Error).message }
  }
}

describe('POST /pins bodies: the hand check and the schema agree', () => {
  it('gives the schema\'s answer for 5,000 random bodies', () => {
    const r = random(34)
    let taken = 0
    for (let i = 0; i < 5_000; i++) {
      const b = body(r)
      // JSON bodies only: what readJson hands over (undefined fields dropped)
      const json = JSON.parse(JSON.stringify(b) ?? 'null') as unknown
      const bySchema = outcome(() => schemaPin(json))
      const byRoute = outcome(() => parsePinRequest(json))
      expect(byRoute, JSON.stringify(json)).toEqual(bySchema)
      if (bySchema.ok) taken++
    }
    // the generator reaches both sides
    expect(taken).toBeGreaterThan(500)
    expect(taken).toBeLessThan(4_500)
  })
})
