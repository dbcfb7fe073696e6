import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { createHmac } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT, base64url, createLocalJWKSet, decodeJwt, decodeProtectedHeader, generateKeyPair, jwtVerify } from 'jose'
import { KeyStore } from '../../../src/auth/keystore.js'
import { TokenService, type TokenServiceOptions } from '../../../src/auth/tokens.js'

const OWNER = '0xAbCdEf0123456789aBcDeF0123456789AbCdEf01'
const owner = OWNER.toLowerCase()
const T0 = new Date('2030-06-01T12:00:00.000Z')

let root: string
let dir: string
let store: KeyStore
let now: Date

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'pind-tokens-'))
  dir = join(root, 'keys')
  store = await KeyStore.open(dir)
  now = T0
})
afterEach(async () => {
  await rm(root, { recursive: true, force: true })
})

function service (extra: Partial<TokenServiceOptions> = {}): TokenService {
  return new TokenService({ keystore: store, issuer: 'https://pind.test', audience: 'pind', ttlSeconds: 3600, clock: () => now, ...extra })
}

async function expectInvalid (p: Promise<unknown>, message: string): Promise<void> {
  await expect(p).rejects.toMatchObject({ name: 'InvalidTokenError', message })
}

const b64json = (v: unknown): string => base64url.encode(JSON.stringify(v))

describe('issue', () => {
  it('signs a JWT with the documented header and claims', async () => {
    const { token, expiresAt, jti } = await service().issue(OWNER, { permissions: ['pin', 'unpin'] })
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'EdDSA', kid: store.active().kid, typ: 'JWT' })
    const iat = T0.getTime() / 1000
    expect(decodeJwt(token)).toEqual({
      sub: owner, iss: 'https://pind.test', aud: 'pind', iat, nbf: iat, exp: iat + 3600, jti, perm: ['pin', 'unpin']
    })
    expect(expiresAt.toISOString()).toBe('2030-06-01T13:00:00.000Z')
  })

  it('omits perm when there are no permissions and honours a per-token ttl', async () => {
    const { token, expiresAt } = await service().issue(OWNER, { ttlSeconds: 60 })
    expect('perm' in decodeJwt(token)).toBe(false)
    expect(expiresAt.getTime() - T0.getTime()).toBe(60_000)
  })

  it('gives every token a fresh jti', async () => {
    const svc = service()
    const a = await svc.issue(OWNER)
    const b = await svc.issue(OWNER)
    expect(a.jti).not.toBe(b.jti)
    expect(a.jti.length).toBeGreaterThanOrEqual(16)
  })

  it('refuses an owner that is not a 0x address', async () => {
    for (const bad of ['0x123', 'abcdef0123456789abcdef0123456789abcdef01', `${OWNER}00`, '0xZZcdef0123456789abcdef0123456789abcdef01']) {
      await expect(service().issue(bad)).rejects.toMatchObject({
        name: 'InvalidOwnerError', message: 'token owner must be a 0x-prefixed 40-hex-digit address'
      })
    }
  })
})

describe('verify', () => {
  it('returns the owner, permissions, times and kid of a good token', async () => {
    const svc = service()
    const { token, jti } = await svc.issue(OWNER, { permissions: ['pin'] })
    now = new Date(T0.getTime() + 10_000)
    expect(await svc.verify(token)).toEqual({
      owner, jti, permissions: ['pin'], issuedAt: T0, expiresAt: new Date(T0.getTime() + 3_600_000), kid: store.active().kid
    })
  })

  it('rejects an expired token', async () => {
    const svc = service()
    const { token } = await svc.issue(OWNER, { ttlSeconds: 1 })
    now = new Date(T0.getTime() + 60_000)
    await expectInvalid(svc.verify(token), 'token expired')
  })

  it('rejects a token used before it is valid (beyond the clock tolerance)', async () => {
    const svc = service()
    const { token } = await svc.issue(OWNER)
    now = new Date(T0.getTime() - 10_000)
    await expect(svc.verify(token)).resolves.toMatchObject({ owner })
    now = new Date(T0.getTime() - 120_000)
    await expectInvalid(svc.verify(token), 'token not yet valid')
  })

  it('rejects a token for another audience or issuer', async () => {
    const { token } = await service().issue(OWNER)
    await expectInvalid(service({ audience: 'someone-else' }).verify(token), 'token audience mismatch')
    await expectInvalid(service({ issuer: 'https://evil.test' }).verify(token), 'token issuer mismatch')
  })

  it('rejects a tampered payload', async () => {
    const { token } = await service().issue(OWNER)
    const [h, p, s] = token.split('.')
    const claims = JSON.parse(new TextDecoder().decode(base64url.decode(p!)))
    const forged = `${h}.${b64json({ ...claims, sub: '0x' + '1'.repeat(40) })}.${s}`
    await expectInvalid(service().verify(forged), 'token signature invalid')
  })

  it('rejects an alg:none token crafted by hand', async () => {
    const { token } = await service().issue(OWNER)
    const claims = decodeJwt(token)
    const none = `${b64json({ alg: 'none', typ: 'JWT', kid: store.active().kid })}.${b64json(claims)}.`
    await expectInvalid(service().verify(none), 'token algorithm not accepted')
  })

  it('rejects HS256 keyed with the public key', async () => {
    const { token } = await service().issue(OWNER)
    const claims = decodeJwt(token)
    const pub = store.jwks().keys[0]!
    const signingInput = `${b64json({ alg: 'HS256', typ: 'JWT', kid: pub.kid })}.${b64json(claims)}`
    for (const secret of [JSON.stringify(pub), Buffer.from(pub.x!, 'base64url')]) {
      const mac = createHmac('sha256', secret).update(signingInput).digest('base64url')
      await expectInvalid(service().verify(`${signingInput}.${mac}`), 'token algorithm not accepted')
    }
  })

  it('rejects a token signed by a foreign key that claims a known kid', async () => {
    const { privateKey } = await generateKeyPair('EdDSA')
    const iat = Math.floor(T0.getTime() / 1000)
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'EdDSA', kid: store.active().kid, typ: 'JWT' })
      .setSubject(owner).setIssuer('https://pind.test').setAudience('pind')
      .setIssuedAt(iat).setNotBefore(iat).setExpirationTime(iat + 60).setJti('forged')
      .sign(privateKey)
    await expectInvalid(service().verify(forged), 'token signature invalid')
  })

  it('rejects a token whose kid is unknown', async () => {
    const { token } = await service().issue(OWNER)
    const [, p, s] = token.split('.')
    const other = `${b64json({ alg: 'EdDSA', typ: 'JWT', kid: 'no-such-key' })}.${p}.${s}`
    await expectInvalid(service().verify(other), 'token signed by an unknown key')
  })

  it('rejects garbage as malformed', async () => {
    await expectInvalid(service().verify('not-a-jwt'), 'malformed token')
    await expectInvalid(service().verify(''), 'malformed token')
    await expectInvalid(service().verify('a.b.c'), 'malformed token')
    await expectInvalid(service().verify('x'.repeat(10_000)), 'malformed token')
  })

  it('consults isRevoked last, with jti, sub and iat', async () => {
    const seen: unknown[] = []
    const revoked = new Set<string>()
    const svc = service({ isRevoked: (c) => { seen.push(c); return revoked.has(c.jti) } })
    const { token, jti } = await svc.issue(OWNER)
    await expect(svc.verify(token)).resolves.toMatchObject({ jti })
    revoked.add(jti)
    await expectInvalid(svc.verify(token), 'token revoked')
    expect(seen).toEqual([{ jti, sub: owner, iat: T0.getTime() / 1000 }, { jti, sub: owner, iat: T0.getTime() / 1000 }])
    now = new Date(T0.getTime() + 7_200_000)
    await expectInvalid(svc.verify(token), 'token expired')
    expect(seen).toHaveLength(2)
  })

  it('answers a token it verified before as jose does: at the edges of nbf and exp, and not for a token differing in its signature', async () => {
    const svc = service()
    const { token } = await svc.issue(OWNER, { ttlSeconds: 600 })
    const first = await svc.verify(token)
    // each instant with the service that verified it before, and with a fresh one (jose's checks)
    for (const offsetS of [-31, -30, 0, 569, 629, 630, 631]) {
      now = new Date(T0.getTime() + offsetS * 1000)
      const cached = await svc.verify(token).then(v => v, (e: Error) => e.message)
      const fresh = await service().verify(token).then(v => v, (e: Error) => e.message)
      expect(cached, `${offsetS} s`).toEqual(fresh)
      if (typeof cached !== 'string') expect(cached).toEqual(first)
    }
    now = T0
    const [h, p, sig] = token.split('.') as [string, string, string]
    const forged = `${h}.${p}.${(sig[0] === 'A' ? 'B' : 'A') + sig.slice(1)}`
    await expectInvalid(svc.verify(forged), 'token signature invalid')
  })

  it('never puts the token in an error', async () => {
    const { token } = await service().issue(OWNER)
    now = new Date(T0.getTime() + 7_200_000)
    const err = await service().verify(token).catch((e: unknown) => e) as Error
    expect(err.message).toBe('token expired')
    expect(JSON.stringify({ ...err, message: err.message, stack: err.stack })).not.toContain(token.split('.')[2])
  })
})

describe('key rotation', () => {
  it('tokens from an old key verify after rotate and stop after retire', async () => {
    const svc = service()
    const old = await svc.issue(OWNER)
    const oldKid = store.active().kid
    await store.rotate()
    const fresh = await svc.issue(OWNER)
    expect(decodeProtectedHeader(fresh.token).kid).toBe(store.active().kid)
    await expect(svc.verify(old.token)).resolves.toMatchObject({ kid: oldKid })
    await store.retire(oldKid)
    await expectInvalid(svc.verify(old.token), 'token signed by a retired key')
    await expect(svc.verify(fresh.token)).resolves.toMatchObject({ owner })
  })

  it('a server sees keys rotated and retired by another process', async () => {
    const server = await KeyStore.open(dir, { checkIntervalMs: 0 })
    const serverSvc = service({ keystore: server })
    const admin = store
    const oldKid = admin.active().kid
    const oldToken = (await serverSvc.issue(OWNER)).token
    await admin.rotate()
    const minted = await service({ keystore: admin }).issue(OWNER)
    await expect(serverSvc.verify(minted.token)).resolves.toMatchObject({ kid: admin.active().kid })
    expect(decodeProtectedHeader((await serverSvc.issue(OWNER)).token).kid).toBe(admin.active().kid)
    await admin.retire(oldKid)
    await expectInvalid(serverSvc.verify(oldToken), 'token signed by a retired key')
  })
})

describe('jwks', () => {
  it('verifies issued tokens with jose createLocalJWKSet', async () => {
    const { token } = await service().issue(OWNER)
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(store.jwks()), {
      issuer: 'https://pind.test', audience: 'pind', currentDate: T0
    })
    expect(payload.sub).toBe(owner)
    expect(protectedHeader.kid).toBe(store.active().kid)
  })

  it('no longer verifies tokens of a retired key', async () => {
    const { token } = await service().issue(OWNER)
    const oldKid = store.active().kid
    await store.rotate()
    await store.retire(oldKid)
    await expect(jwtVerify(token, createLocalJWKSet(store.jwks()), { currentDate: T0 }))
      .rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' })
  })
})
