/**
 * Generators of malformed input for the bad-input suite: CIDs of every broken
 * kind, forged wallet tokens, broken JSON bodies, broken multipart bodies and
 * broken x402 payment payloads. Random cases come from a seeded PRNG, so a
 * failing case can be reproduced from the seed the suite prints.
 */
import { createHmac, createPublicKey, generateKeyPairSync, sign } from 'node:crypto'
import { base32 } from 'multiformats/bases/base32'
import { base36 } from 'multiformats/bases/base36'
import { base58btc } from 'multiformats/bases/base58'
import { base64, base64url } from 'multiformats/bases/base64'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { identity } from 'multiformats/hashes/identity'

/** mulberry32: small, fast, seeded */
export function prng (seed: number): { next(): number, int(n: number): number, bytes(n: number): Uint8Array, pick<T>(xs: readonly T[]): T } {
  let a = seed >>> 0
  const next = (): number => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number): number => Math.floor(next() * n)
  return {
    next,
    int,
    bytes: (n) => Uint8Array.from({ length: n }, () => int(256)),
    pick: (xs) => xs[int(xs.length)] as (typeof xs)[number]
  }
}

export type Rng = ReturnType<typeof prng>

export const b64url = (v: unknown): string => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url')

// ---- CIDs -------------------------------------------------------------------

export interface CidCase {
  label: string
  text: string
  /** CID.parse (base32/base58btc/base36) accepts it: a filter on it is well-formed */
  parses: boolean
  /** a raw-codec identity CID: the gateway serves its inline bytes (200) by design */
  inlineRaw?: boolean
}

function parses (text: string): boolean {
  try { CID.parse(text); return true } catch { return false }
}

/** Every kind of broken CID, plus well-formed CIDs this service must refuse to pin (unknown codec/hash, identity). */
export function badCids (real: string, rng: Rng, randomCount: number): CidCase[] {
  const out: Array<Omit<CidCase, 'parses'>> = []
  const add = (label: string, text: string, extra: Partial<CidCase> = {}): void => { out.push({ label, text, ...extra }) }
  const digest32 = (): Uint8Array => rng.bytes(32)

  // empty, tiny, and prefixes alone
  for (const t of ['', 'x', '0', '1', 'b', 'z', 'k', 'Q', 'Qm', 'f', 'm', 'u', 'bafy', 'bafk', 'baf', 'ba', '-', '_', '.', '~', 'null', 'undefined', 'NaN', '0x1220']) add(`short ${JSON.stringify(t)}`, t)
  // too long
  add('base32 of 600 chars', 'b' + 'a'.repeat(600))
  add('Qm + 1000 base58 chars', 'Qm' + '1'.repeat(1000))
  add('the real CID twice', real + real)
  add('the real CID with 4000 extra chars', real + 'a'.repeat(4000))
  // bad multibase prefixes on a valid body
  const body = real.slice(1)
  for (const p of ['!', '#', '$', '&', '*', '+', 'q', 'y', 'Z', '7', 'a', 'B1', ' b']) add(`multibase prefix ${JSON.stringify(p)}`, p + body)
  // the right prefix with the wrong alphabet
  const bytes = CID.parse(real).bytes
  add('base32 prefix, base58 body', 'b' + base58btc.baseEncode(bytes))
  add('base58 prefix, base32 body with l and 0', 'z' + base32.baseEncode(bytes).replace(/a/g, 'l').replace(/b/g, '0'))
  add('base36 prefix, base64 body', 'k' + base64.baseEncode(bytes))
  add('mixed case base32', real.slice(0, 10) + real.slice(10, 20).toUpperCase() + real.slice(20))
  add('base32 with padding', real + '====')
  // CIDv0 broken
  const v0 = CID.createV0(Digest.create(0x12, digest32())).toString()
  add('CIDv0 with 0 (not base58)', v0.slice(0, 10) + '0' + v0.slice(11))
  add('CIDv0 with O (not base58)', v0.slice(0, 10) + 'O' + v0.slice(11))
  add('CIDv0 with I and l (not base58)', v0.slice(0, 10) + 'Il' + v0.slice(12))
  add('CIDv0 one char short', v0.slice(0, -1))
  add('CIDv0 one char long', v0 + 'a')
  add('CIDv0 of a 20-byte digest', base58btc.baseEncode(Uint8Array.from([0x12, 20, ...rng.bytes(20)])))
  add('CIDv0 of sha2-512 tag', base58btc.baseEncode(Uint8Array.from([0x13, 0x40, ...rng.bytes(64)])))
  add('CIDv0 with a multibase prefix', 'z' + v0)
  // truncated / extended multihash
  for (const n of [1, 2, 5, 10, 20]) add(`real CID minus ${n} chars`, real.slice(0, -n))
  add('real CID truncated to 10 chars', real.slice(0, 10))
  add('real CID plus one char', real + 'a')
  add('real CID plus 7 chars', real + 'aaaaaaa')
  add('multihash length says 64, digest is 32', 'b' + base32.baseEncode(Uint8Array.from([1, 0x55, 0x12, 64, ...digest32()])))
  add('multihash length says 0, digest follows', 'b' + base32.baseEncode(Uint8Array.from([1, 0x55, 0x12, 0, ...digest32()])))
  add('varint codec never ends', 'b' + base32.baseEncode(Uint8Array.from([1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])))
  add('version 2', 'b' + base32.baseEncode(Uint8Array.from([2, 0x55, 0x12, 32, ...digest32()])))
  add('version 0 tag inside a v1 string', 'b' + base32.baseEncode(Uint8Array.from([0, 0x70, 0x12, 32, ...digest32()])))
  add('version 1, CIDv0 codec 0x12 position', 'b' + base32.baseEncode(Uint8Array.from([0x12, 32, ...digest32()])))
  add('a lone varint 1', 'b' + base32.baseEncode(Uint8Array.from([1])))
  // well-formed, but refused for pinning: unknown codec / hash, identity
  add('unknown codec 0x9999', CID.create(1, 0x9999, Digest.create(0x12, digest32())).toString())
  add('codec 0x00 (identity as codec)', CID.create(1, 0x00, Digest.create(0x12, digest32())).toString())
  add('git-raw codec', CID.create(1, 0x78, Digest.create(0x12, digest32())).toString())
  add('unknown hash 0x9999', CID.create(1, 0x55, Digest.create(0x9999, digest32())).toString())
  add('md5 hash', CID.create(1, 0x55, Digest.create(0xd5, rng.bytes(16))).toString())
  add('blake3 hash', CID.create(1, 0x55, Digest.create(0x1e, digest32())).toString())
  add('identity raw CID (bafkqaaa)', 'bafkqaaa', { inlineRaw: true })
  add('identity raw CID of 64 bytes', CID.create(1, 0x55, identity.digest(rng.bytes(64))).toString(), { inlineRaw: true })
  add('identity dag-pb CID', CID.create(1, 0x70, identity.digest(rng.bytes(16))).toString())
  add('identity dag-cbor CID', CID.create(1, 0x71, identity.digest(Uint8Array.from([0xa0]))).toString())
  add('identity CID of 6000 bytes', CID.create(1, 0x55, identity.digest(rng.bytes(6000))).toString(), { inlineRaw: true })
  // other bases the gateway knows, with broken bytes
  add('base64 CID with a bad version', 'm' + base64.baseEncode(Uint8Array.from([7, 0x55, 0x12, 32, ...digest32()])))
  add('base64url CID with a bad version', 'u' + base64url.baseEncode(Uint8Array.from([9, 0x55, 0x12, 32, ...digest32()])))
  add('base16 CID with odd length', 'f01551220' + 'a'.repeat(63))
  add('base16 with non-hex', 'f0155122' + 'g'.repeat(64))
  add('base36 CID with a bad version', 'k' + base36.baseEncode(Uint8Array.from([3, 0x55, 0x12, 32, ...digest32()])))
  add('emoji multibase', '🚀' + '😀'.repeat(10))
  // characters that do not belong in a CID
  for (const [name, ch] of [['NUL', '\u0000'], ['newline', '\n'], ['tab', '\t'], ['space', ' '], ['quote', '"'], ['backslash', '\\'], ['percent', '%'], ['unicode', 'é'], ['RTL override', '\u202e'], ['zero-width space', '\u200b']] as const) {
    add(`real CID with ${name} inside`, real.slice(0, 20) + ch + real.slice(20))
  }
  // random bytes in every base, with a version byte no CID has
  const encoders: Array<[string, (b: Uint8Array) => string]> = [
    ['base32', b => 'b' + base32.baseEncode(b)],
    ['base58btc', b => 'z' + base58btc.baseEncode(b)],
    ['base36', b => 'k' + base36.baseEncode(b)],
    ['base64', b => 'm' + base64.baseEncode(b)],
    ['base64url', b => 'u' + base64url.baseEncode(b)],
    ['base16', b => 'f' + Buffer.from(b).toString('hex')]
  ]
  for (let i = 0; i < randomCount; i++) {
    const len = 1 + rng.int(70)
    const b = rng.bytes(len)
    b[0] = 2 + rng.int(15) // 2..16: never a CID version (0x12 would be a CIDv0 multihash)
    const [name, enc] = rng.pick(encoders)
    add(`random ${len} bytes in ${name} #${i}`, enc(b))
  }
  return out.map(c => ({ ...c, parses: parses(c.text) }))
}

/** A path segment that carries `text` as it is where URL syntax allows, percent-encoded elsewhere. */
export function pathSegment (text: string): string {
  return /^[A-Za-z0-9._~!$&'()*+,;=:@-]*$/.test(text) ? text : encodeURIComponent(text)
}

// ---- tokens -----------------------------------------------------------------

export interface Jwk { kid?: string, kty?: string, crv?: string, x?: string, alg?: string }

export interface TokenCase { label: string, authorization: string }

/**
 * Authorization headers that must never authenticate: malformed, `alg: none`,
 * HS256 keyed with the public key, tampered claims (signature no longer
 * matches: the only way to "expire" or re-own a real token from outside),
 * foreign keys and random strings.
 */
export function forgedTokens (real: string, otherOwner: string, jwks: Jwk[], rng: Rng, randomCount: number): TokenCase[] {
  const out: TokenCase[] = []
  const add = (label: string, authorization: string): void => { out.push({ label, authorization }) }
  const [h, p, s] = real.split('.') as [string, string, string]
  const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as Record<string, unknown>
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>
  const now = Math.floor(Date.now() / 1000)

  // the header itself
  for (const a of ['', 'Bearer', 'Bearer ', 'bearer', 'Basic dXNlcjpwYXNz', 'Digest username="x"', 'Token ' + real, 'Bearer' + real, `Bearer ${real} ${real}`, `Bearer ${real},${real}`, `Bearer\t${real}`, `Bearer "${real}"`, `Bearer <${real}>`, `Bearer ${real}.`, `Bearer .${real}`, `Bearer ${h}.${p}`, `Bearer ${h}.${p}.`, `Bearer ${h}..${s}`, `Bearer ..`, `Bearer ...`, `Bearer ${'a'.repeat(9000)}`, `Bearer ${real}${'A'.repeat(8200)}`, `Bearer ${real}=`, 'Bearer null', 'Bearer undefined', 'Bearer {}', 'Bearer [object Object]', 'NTLM TlRMTVNTUAABAAAA']) {
    add(`authorization ${JSON.stringify(a.length > 60 ? `${a.slice(0, 40)}…(${a.length})` : a)}`, a)
  }
  // alg none and friends
  for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
    add(`alg ${alg}, real claims, no signature`, `Bearer ${b64url({ ...header, alg })}.${p}.`)
    add(`alg ${alg}, real claims, real signature`, `Bearer ${b64url({ ...header, alg })}.${p}.${s}`)
  }
  add('alg none, claims for another owner', `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ ...claims, sub: otherOwner })}.`)
  add('alg none, operator permission', `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ ...claims, perm: ['pins:create-unpaid'] })}.`)
  // HS256 keyed with the public key, in every form a confused verifier might use
  for (const jwk of jwks) {
    const secrets: Array<[string, Buffer | string]> = [
      ['raw public key bytes', Buffer.from(jwk.x ?? '', 'base64url')],
      ['public key as base64url text', jwk.x ?? ''],
      ['JWK JSON', JSON.stringify(jwk)]
    ]
    try {
      secrets.push(['SPKI PEM', createPublicKey({ key: jwk as any, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString()])
    } catch {}
    for (const alg of ['HS256', 'HS384', 'HS512'] as const) {
      for (const [what, secret] of secrets) {
        const head = b64url({ alg, kid: jwk.kid, typ: 'JWT' })
        const sig = createHmac(`sha${alg.slice(2)}`, secret).update(`${head}.${p}`).digest('base64url')
        add(`${alg} keyed with the ${what} (kid ${jwk.kid ?? '?'})`, `Bearer ${head}.${p}.${sig}`)
      }
    }
  }
  // tampered claims, original signature
  const tampered: Array<[string, Record<string, unknown>]> = [
    ['sub = another owner', { ...claims, sub: otherOwner }],
    ['sub uppercase', { ...claims, sub: String(claims.sub).toUpperCase().replace('0X', '0x') }],
    ['exp + 10 years', { ...claims, exp: now + 10 * 365 * 86400 }],
    ['exp in the past (expired)', { ...claims, exp: now - 3600 }],
    ['exp removed', Object.fromEntries(Object.entries(claims).filter(([k]) => k !== 'exp'))],
    ['nbf in the future', { ...claims, nbf: now + 3600 }],
    ['iat in the future', { ...claims, iat: now + 86400 }],
    ['aud another service', { ...claims, aud: 'https://evil.example' }],
    ['iss another service', { ...claims, iss: 'https://evil.example' }],
    ['operator permission added', { ...claims, perm: ['pins:create-unpaid'] }],
    ['jti changed', { ...claims, jti: 'forged' }],
    ['claims empty', {}],
    ['claims an array', [] as unknown as Record<string, unknown>]
  ]
  for (const [what, c] of tampered) add(`tampered payload: ${what}`, `Bearer ${h}.${b64url(c)}.${s}`)
  // tampered header, original signature
  for (const [what, hh] of [
    ['kid of a key that does not exist', { ...header, kid: 'no-such-key' }],
    ['kid path traversal', { ...header, kid: '../../../../etc/passwd' }],
    ['kid 2000 chars', { ...header, kid: 'k'.repeat(2000) }],
    ['kid a number', { ...header, kid: 12345 }],
    ['kid an object', { ...header, kid: { toString: 'x' } }],
    ['kid __proto__', { ...header, kid: '__proto__' }],
    ['kid constructor', { ...header, kid: 'constructor' }],
    ['kid removed', Object.fromEntries(Object.entries(header).filter(([k]) => k !== 'kid'))],
    ['typ other', { ...header, typ: 'at+jwt' }],
    ['alg ES256', { ...header, alg: 'ES256' }],
    ['alg RS256', { ...header, alg: 'RS256' }],
    ['alg Ed25519 (not EdDSA)', { ...header, alg: 'Ed25519' }],
    ['jku to a foreign key set', { ...header, jku: 'https://evil.example/jwks.json' }],
    ['embedded jwk', { ...header, jwk: { kty: 'OKP', crv: 'Ed25519', x: Buffer.alloc(32).toString('base64url') } }],
    ['crit unknown', { ...header, crit: ['exp'] }],
    ['b64 false', { ...header, b64: false, crit: ['b64'] }]
  ] as Array<[string, Record<string, unknown>]>) add(`tampered header: ${what}`, `Bearer ${b64url(hh)}.${p}.${s}`)
  // signature tampering
  const sigBytes = Buffer.from(s, 'base64url')
  const flipped = Buffer.from(sigBytes)
  flipped[0] = (flipped[0] ?? 0) ^ 1
  add('signature with one bit flipped', `Bearer ${h}.${p}.${flipped.toString('base64url')}`)
  add('signature truncated', `Bearer ${h}.${p}.${s.slice(0, 20)}`)
  add('signature all zeros', `Bearer ${h}.${p}.${Buffer.alloc(64).toString('base64url')}`)
  add('signature 128 bytes', `Bearer ${h}.${p}.${Buffer.alloc(128, 7).toString('base64url')}`)
  add('signature in standard base64 with padding', `Bearer ${h}.${p}.${sigBytes.toString('base64')}`)
  // properly signed, by a key this service never had (same kid)
  const { privateKey } = generateKeyPairSync('ed25519')
  for (const [what, c] of [['the real claims', claims], ['another owner', { ...claims, sub: otherOwner }], ['operator permission', { ...claims, perm: ['pins:create-unpaid'] }]] as const) {
    const head = b64url(header)
    const body = b64url(c)
    add(`EdDSA signed by a foreign key, ${what}`, `Bearer ${head}.${body}.${sign(null, Buffer.from(`${head}.${body}`), privateKey).toString('base64url')}`)
  }
  // JWS JSON serialization and JWE shape
  add('JWS JSON serialization', `Bearer ${b64url({ protected: h, payload: p, signature: s })}`)
  add('five parts (JWE shape)', `Bearer ${h}.${p}.${s}.${s}.${s}`)
  // random strings
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~+/='
  for (let i = 0; i < randomCount; i++) {
    const len = 1 + rng.int(400)
    let t = ''
    for (let j = 0; j < len; j++) t += alphabet[rng.int(alphabet.length)]
    add(`random token #${i} (${len} chars)`, `Bearer ${t}`)
  }
  return out
}

// ---- JSON bodies ----------------------------------------------------------------

/** Bodies that are not JSON at all. */
export function invalidJson (rng: Rng, fuzzFrom: string, fuzzCount: number): Array<{ label: string, body: string | Buffer, fuzzed?: boolean }> {
  const out: Array<{ label: string, body: string | Buffer, fuzzed?: boolean }> = []
  for (const b of ['', ' ', '\n', '{', '}', '[', ']', '{"cid":', '{"cid":"x"', "{'cid':'x'}", '{cid:"x"}', '{"cid":"x",}', '[1,]', 'NaN', 'Infinity', '-Infinity', 'undefined', 'nul', 'tru', 'fals', '"unterminated', '{"cid":"\\x41"}', '{"cid":"\\u12"}', '{"cid":"\\uD800\\"}', '{"a":1}{"b":2}', '{"a":1} x', '// comment\n{}', '/* c */{}', '{"cid":01}', '{"cid":1.}', '{"cid":.5}', '{"cid":+1}', '{"cid":0x10}', '{"cid":1e}', '\u0000', '{"cid":"a\u0000b"', '\uFEFF{}']) {
    out.push({ label: `not JSON: ${JSON.stringify(b).slice(0, 40)}`, body: b })
  }
  // decoded leniently (U+FFFD): JSON after all, so any 4xx
  out.push({ label: 'invalid UTF-8 bytes in a key', body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), fuzzed: true })
  out.push({ label: 'not JSON: UTF-16LE', body: Buffer.from('{"cid":"x"}', 'utf16le') })
  out.push({ label: 'not JSON: gzip magic', body: Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0]) })
  out.push({ label: 'not JSON: 30000 unclosed [', body: '['.repeat(30000) })
  out.push({ label: 'not JSON: 60000 random bytes', body: Buffer.from(rng.bytes(60000)) })
  for (let i = 0; i < fuzzCount; i++) {
    // a valid body with a few random byte edits: almost always broken, sometimes still JSON (then well-formed but unpaid: a 4xx either way)
    const b = Buffer.from(fuzzFrom)
    const edits = 1 + rng.int(4)
    for (let e = 0; e < edits; e++) {
      const at = rng.int(b.length)
      b[at] = rng.pick([0x22, 0x7b, 0x7d, 0x5b, 0x5d, 0x3a, 0x2c, 0x5c, 0x00, 0x20, rng.int(256)])
    }
    out.push({ label: `fuzzed body #${i}`, body: b, fuzzed: true })
  }
  return out
}

/** JSON that parses but is not the Pin object the spec defines. */
export function wrongPinBodies (cid: string): Array<{ label: string, body: unknown }> {
  const big = (n: number): string => 'x'.repeat(n)
  const deep = (n: number): unknown => { let v: unknown = 'x'; for (let i = 0; i < n; i++) v = { a: v }; return v }
  const out: Array<[string, unknown]> = [
    ['null', null], ['true', true], ['a number', 1], ['a string', 'str'], ['an empty array', []], ['an array of the pin', [{ cid }]], ['an empty object', {}],
    ['cid null', { cid: null }], ['cid 1', { cid: 1 }], ['cid -0', { cid: -0 }], ['cid true', { cid: true }], ['cid an array', { cid: [cid] }],
    ['cid a DAG-JSON link', { cid: { '/': cid } }], ['cid empty', { cid: '' }], ['cid spaces', { cid: '   ' }], ['cid 513 chars', { cid: big(513) }],
    ['cid 60000 chars', { cid: big(60000) }], ['CID key uppercase', { CID: cid }], ['cid under __proto__', JSON.parse(`{"__proto__":{"cid":"${cid}"}}`)],
    ['name a number', { cid, name: 1 }], ['name an array', { cid, name: ['a'] }], ['name an object', { cid, name: {} }], ['name 256 chars', { cid, name: big(256) }],
    ['name 300 emoji', { cid, name: '😀'.repeat(300) }], ['name true', { cid, name: true }],
    ['origins a string', { cid, origins: '/ip4/127.0.0.1/tcp/1' }], ['origins an object', { cid, origins: {} }], ['origins [1]', { cid, origins: [1] }],
    ['origins [null]', { cid, origins: [null] }], ['origins not a multiaddr', { cid, origins: ['not-a-multiaddr'] }], ['origins relative', { cid, origins: ['ip4/127.0.0.1'] }],
    ['origins bad ip4', { cid, origins: ['/ip4/999.0.0.1/tcp/1'] }], ['origins bad port', { cid, origins: ['/ip4/127.0.0.1/tcp/99999'] }],
    ['origins unknown protocol', { cid, origins: ['/nope/1'] }],
    ['origins 21', { cid, origins: Array.from({ length: 21 }, (_, i) => `/ip4/127.0.0.1/tcp/${i + 1}`) }],
    ['origins duplicated', { cid, origins: ['/ip4/127.0.0.1/tcp/1', '/ip4/127.0.0.1/tcp/1'] }], ['origins 2000 chars', { cid, origins: ['/' + big(2000)] }],
    ['meta an array', { cid, meta: ['a'] }], ['meta a string', { cid, meta: 'x' }], ['meta a number value', { cid, meta: { a: 1 } }],
    ['meta a null value', { cid, meta: { a: null } }], ['meta an object value', { cid, meta: { a: {} } }], ['meta an array value', { cid, meta: { a: [] } }],
    ['meta 1001 entries', { cid, meta: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, 'v'])) }],
    ['meta __proto__ an object', JSON.parse(`{"cid":"${cid}","meta":{"__proto__":{"polluted":"yes"}}}`)],
    ['meta deeply nested', { cid, meta: deep(2000) }], ['cid with a deeply nested sibling', { cid: 1, x: deep(3000) }],
    ['cid 1e400', JSON.parse('{"cid":1e400}')], ['cid -1e400', JSON.parse('{"cid":-1e400}')], ['cid 2^64', JSON.parse('{"cid":18446744073709551616}')]
  ]
  return out.map(([label, body]) => ({ label, body }))
}

/** Bodies of POST /auth/challenge that are not {"address":"0x…40 hex"} */
export function badChallengeBodies (): Array<{ label: string, body: unknown }> {
  const hex40 = '1'.repeat(40)
  const addrs: unknown[] = [null, 1, true, [], {}, '', '0x', '0x' + 'g'.repeat(40), '0x' + '1'.repeat(39), '0x' + '1'.repeat(41), hex40, '0X' + hex40,
    ` 0x${hex40}`, `0x${hex40} `, `0x${hex40}\n`, '0x' + '1'.repeat(4000), [`0x${hex40}`], { address: `0x${hex40}` }, `0x${hex40.slice(0, 20)}\u0000${hex40.slice(21)}`,
    '0x' + 'é'.repeat(40), 'vitalik.eth', '-1', 0x1111111111111111111111111111111111111111]
  const out = addrs.map((a, i) => ({ label: `address #${i} ${JSON.stringify(a)?.slice(0, 40) ?? String(a)}`, body: { address: a } }))
  out.push({ label: 'body null', body: null as unknown as { address: unknown } })
  out.push({ label: 'body an array', body: [] as unknown as { address: unknown } })
  out.push({ label: 'Address capitalised', body: { Address: `0x${hex40}` } as unknown as { address: unknown } })
  out.push({ label: 'address under __proto__', body: JSON.parse(`{"__proto__":{"address":"0x${hex40}"}}`) })
  return out
}

/** Bodies of POST /auth/token that carry no valid signed challenge. */
export function badTokenBodies (rng: Rng): Array<{ label: string, body: unknown }> {
  const msg = 'pind.example wants you to sign in with your Ethereum account:\n0x1111111111111111111111111111111111111111\n\nSign in.\n\nURI: http://127.0.0.1\nVersion: 1\nChain ID: 167000\nNonce: abcdefgh12345678\nIssued At: 2020-01-01T00:00:00Z'
  const out: Array<[string, unknown]> = [
    ['null', null], ['an array', []], ['an empty object', {}], ['message only', { message: msg }], ['signature only', { signature: '0x00' }],
    ['message a number', { message: 1, signature: '0x00' }], ['message an object', { message: {}, signature: '0x00' }], ['message an array', { message: [msg], signature: '0x00' }],
    ['signature a number', { message: msg, signature: 5 }], ['signature not hex', { message: msg, signature: 'zz' }], ['signature 0x', { message: msg, signature: '0x' }],
    ['signature 65 zero bytes', { message: msg, signature: '0x' + '00'.repeat(65) }], ['signature 10000 hex chars', { message: msg, signature: '0x' + 'ab'.repeat(5000) }],
    ['message empty', { message: '', signature: '0x00' }], ['message "hello"', { message: 'hello', signature: '0x00' }],
    ['message with chain id 1e400', { message: msg.replace('167000', '1' + '0'.repeat(400)), signature: '0x' + '00'.repeat(65) }],
    ['message with a nonce of 5000 chars', { message: msg.replace('abcdefgh12345678', 'n'.repeat(5000)), signature: '0x' + '00'.repeat(65) }],
    ['message with NUL bytes', { message: msg.replace(/\n/g, '\u0000'), signature: '0x' + '00'.repeat(65) }],
    ['message 15000 chars', { message: 'x'.repeat(15000), signature: '0x00' }],
    ['a real-looking message with an unknown nonce', { message: msg, signature: '0x' + '11'.repeat(65) }]
  ]
  for (let i = 0; i < 20; i++) {
    const lines = msg.split('\n')
    const j = rng.int(lines.length)
    lines[j] = Buffer.from(rng.bytes(1 + rng.int(60))).toString('latin1')
    out.push([`message with line ${j} replaced by random bytes #${i}`, { message: lines.join('\n'), signature: '0x' + Buffer.from(rng.bytes(65)).toString('hex') }])
  }
  return out.map(([label, body]) => ({ label, body }))
}

// ---- multipart ---------------------------------------------------------------

export interface MultipartCase { label: string, contentType: string, body: string | Buffer }

/** Multipart uploads that must never be pinned: no or several file parts, foreign fields, truncated, framed wrongly. */
export function badMultipart (rng: Rng, declaredFileBytes: number): MultipartCase[] {
  const ct = 'multipart/form-data; boundary=xyz'
  const part = (headers: string, content: string | Buffer = 'hello'): Buffer => Buffer.concat([Buffer.from(`--xyz\r\n${headers}\r\n\r\n`), Buffer.from(content), Buffer.from('\r\n')])
  const file = (name = 'file', filename = 'a.txt', content: string | Buffer = 'hello'): Buffer => part(`Content-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: application/octet-stream`, content)
  const end = Buffer.from('--xyz--\r\n')
  const cat = (...b: Array<Buffer | string>): Buffer => Buffer.concat(b.map(x => typeof x === 'string' ? Buffer.from(x) : x))
  const out: MultipartCase[] = [
    { label: 'no boundary parameter', contentType: 'multipart/form-data', body: cat(file(), end) },
    { label: 'empty boundary', contentType: 'multipart/form-data; boundary=', body: cat(file(), end) },
    { label: 'unterminated quoted boundary', contentType: 'multipart/form-data; boundary="xyz', body: cat(file(), end) },
    { label: 'text/plain', contentType: 'text/plain', body: 'hello' },
    { label: 'multipart/mixed', contentType: 'multipart/mixed; boundary=xyz', body: cat(file(), end) },
    { label: 'urlencoded form', contentType: 'application/x-www-form-urlencoded', body: 'file=hello' },
    { label: 'application/json', contentType: 'application/json', body: '{"file":"hello"}' },
    { label: 'empty body', contentType: ct, body: '' },
    { label: 'no parts at all', contentType: ct, body: end },
    { label: 'garbage without any boundary', contentType: ct, body: 'just some bytes\r\n\r\n' },
    { label: 'truncated after the first boundary', contentType: ct, body: '--xyz\r\n' },
    { label: 'truncated in the part headers', contentType: ct, body: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n' },
    { label: 'truncated in the file, no closing boundary', contentType: ct, body: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nhello wor' },
    { label: 'closing boundary misspelt', contentType: ct, body: cat(file(), '--xzy--\r\n') },
    { label: 'body uses another boundary', contentType: ct, body: '--abc\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nhello\r\n--abc--\r\n' },
    { label: 'a part named "document"', contentType: ct, body: cat(file('document'), end) },
    { label: 'a part named "FILE"', contentType: ct, body: cat(file('FILE'), end) },
    { label: 'a part with an empty name', contentType: ct, body: cat(file(''), end) },
    { label: 'a field before the file', contentType: ct, body: cat(part('Content-Disposition: form-data; name="note"', 'hi'), file(), end) },
    { label: 'a field after the file', contentType: ct, body: cat(file(), part('Content-Disposition: form-data; name="note"', 'hi'), end) },
    { label: 'the file part without a filename (a field)', contentType: ct, body: cat(part('Content-Disposition: form-data; name="file"'), end) },
    { label: 'two file parts', contentType: ct, body: cat(file('file', 'a'), file('file', 'b'), end) },
    { label: 'five file parts', contentType: ct, body: cat(file('file', 'a'), file('f2', 'b'), file('f3', 'c'), file('f4', 'd'), file('f5', 'e'), end) },
    { label: 'a part without Content-Disposition', contentType: ct, body: cat(part('Content-Type: text/plain'), end) },
    { label: 'Content-Disposition attachment', contentType: ct, body: cat(part('Content-Disposition: attachment; name="file"; filename="a"'), end) },
    { label: 'part headers without a blank line', contentType: ct, body: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\nhello\r\n--xyz--\r\n' },
    { label: '30 part header lines', contentType: ct, body: cat(part(['Content-Disposition: form-data; name="file"; filename="a"', ...Array.from({ length: 30 }, (_, i) => `X-H${i}: v`)].join('\r\n')), end) },
    { label: 'the file larger than the size declared and paid for', contentType: ct, body: cat(file('file', 'big.bin', Buffer.from(rng.bytes(declaredFileBytes + 1000))), end) },
    { label: 'a field of 5000 bytes', contentType: ct, body: cat(part('Content-Disposition: form-data; name="note"', 'n'.repeat(5000)), end) },
    { label: 'a 20 KB part header line', contentType: ct, body: cat(part(`Content-Disposition: form-data; name="file"; filename="${'a'.repeat(20000)}"`), end) }
  ]
  for (let i = 0; i < 10; i++) {
    // random bytes where the framing should be
    out.push({ label: `random framing #${i}`, contentType: ct, body: Buffer.concat([Buffer.from('--xyz\r\n'), Buffer.from(rng.bytes(50 + rng.int(500)))]) })
  }
  return out
}
