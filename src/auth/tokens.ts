/**
 * Wallet auth tokens: a JWT whose subject is the payer's lowercase EVM address,
 * presented as `Authorization: Bearer <token>` on owner endpoints. Verification
 * accepts only the key store's algorithm (so `alg: none` and HS256 keyed with a
 * public key fail), only non-retired keys, this service's issuer and audience,
 * and asks the revocation callback last. Every failure is an InvalidTokenError
 * with a short client-safe message; the token itself never appears in one.
 */
import { randomBytes } from 'node:crypto'
import { SignJWT, decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose'
import { InvalidOwnerError, InvalidTokenError } from './errors.js'
import { KEY_ALG, type KeyStore } from './keystore.js'

/** What the revocation check gets to decide on. */
export interface RevocationClaims {
  jti: string
  sub: string
  iat: number
}

export interface TokenServiceOptions {
  keystore: KeyStore
  issuer: string
  audience: string
  ttlSeconds: number
  isRevoked?: (claims: RevocationClaims) => boolean | Promise<boolean>
  /** default `new Date()`; injectable for tests */
  clock?: () => Date
  /** allowed skew for nbf/exp; default 30 s */
  clockToleranceSeconds?: number
}

export interface IssuedToken {
  token: string
  expiresAt: Date
  jti: string
}

export interface VerifiedToken {
  owner: string
  jti: string
  permissions: string[]
  issuedAt: Date
  expiresAt: Date
  kid: string
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const LOWER_ADDRESS = /^0x[0-9a-f]{40}$/
/** far above any token we issue; bounds the work an attacker can cause */
const MAX_TOKEN_LENGTH = 8192
/** tokens whose signature was verified, kept (the most recently verified) */
const VERIFIED_KEPT = 256

export class TokenService {
  private readonly clock: () => Date
  private readonly tolerance: number
  /**
   * Tokens whose signature and claims were verified, with the key that
   * verified them: an owner's next request skips the signature check (jose,
   * WebCrypto) while that very key is still the store's. Everything that can
   * change is checked on every request all the same: the key's status, the
   * times (exp, nbf), revocation.
   */
  private readonly verified = new Map<string, { payload: JWTPayload, key: unknown }>()

  constructor (private readonly opts: TokenServiceOptions) {
    assertTtl(opts.ttlSeconds)
    this.clock = opts.clock ?? (() => new Date())
    this.tolerance = opts.clockToleranceSeconds ?? 30
  }

  async issue (owner: string, opts: { permissions?: string[], ttlSeconds?: number } = {}): Promise<IssuedToken> {
    if (typeof owner !== 'string' || !ADDRESS.test(owner)) {
      throw new InvalidOwnerError('token owner must be a 0x-prefixed 40-hex-digit address')
    }
    const ttl = opts.ttlSeconds ?? this.opts.ttlSeconds
    assertTtl(ttl)
    const permissions = normalizePermissions(opts.permissions ?? [])
    await this.opts.keystore.refresh()
    const key = this.opts.keystore.active()
    const iat = Math.floor(this.clock().getTime() / 1000)
    const jti = randomBytes(16).toString('base64url')
    const token = await new SignJWT(permissions.length > 0 ? { perm: permissions } : {})
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setSubject(owner.toLowerCase())
      .setIssuer(this.opts.issuer)
      .setAudience(this.opts.audience)
      .setIssuedAt(iat)
      .setNotBefore(iat)
      .setExpirationTime(iat + ttl)
      .setJti(jti)
      .sign(key.privateKey)
    return { token, expiresAt: new Date((iat + ttl) * 1000), jti }
  }

  async verify (token: string): Promise<VerifiedToken> {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) throw invalid('malformed token')
    // canonical compact JWS only (unpadded base64url): no malleable variants of a valid token
    if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token)) throw invalid('malformed token')
    const store = this.opts.keystore
    await store.refresh() // a broken key folder is a server error, not the client's: let it through
    let header
    try {
      header = decodeProtectedHeader(token)
    } catch {
      throw invalid('malformed token')
    }
    if (header.alg !== KEY_ALG) throw invalid('token algorithm not accepted')
    if (typeof header.kid !== 'string') throw invalid('token has no key id')
    const info = store.info(header.kid)
    if (info === undefined) throw invalid('token signed by an unknown key')
    const key = store.verificationKey(header.kid)
    if (info.status === 'retired' || key === undefined) throw invalid('token signed by a retired key')

    let payload: JWTPayload
    const known = this.verified.get(token)
    if (known != null && known.key === key) {
      payload = known.payload
      // jose's time checks, as it makes them (seconds, with the tolerance)
      const now = Math.floor(this.clock().getTime() / 1000)
      if ((payload.nbf as number) > now + this.tolerance) throw invalid('token not yet valid')
      if ((payload.exp as number) <= now - this.tolerance) throw invalid('token expired')
    } else {
      try {
        ({ payload } = await jwtVerify(token, key, {
          algorithms: [KEY_ALG],
          issuer: this.opts.issuer,
          audience: this.opts.audience,
          typ: 'JWT',
          clockTolerance: this.tolerance,
          currentDate: this.clock(),
          requiredClaims: ['sub', 'jti', 'iat', 'nbf', 'exp']
        }))
      } catch (err) {
        throw translate(err)
      }
    }

    const { sub, jti, iat, exp, perm } = payload
    if (typeof sub !== 'string' || !LOWER_ADDRESS.test(sub)) throw invalid('token subject is not an address')
    if (typeof jti !== 'string' || jti.length === 0) throw invalid('token has no id')
    if (typeof iat !== 'number' || typeof exp !== 'number') throw invalid('malformed token')
    if (perm !== undefined && (!Array.isArray(perm) || !perm.every(p => typeof p === 'string'))) {
      throw invalid('token permissions invalid')
    }
    if (known == null || known.key !== key) {
      this.verified.delete(token)
      if (this.verified.size >= VERIFIED_KEPT) this.verified.delete(this.verified.keys().next().value as string)
      this.verified.set(token, { payload, key })
    }
    if (this.opts.isRevoked !== undefined && await this.opts.isRevoked({ jti, sub, iat })) throw invalid('token revoked')
    return {
      owner: sub,
      jti,
      permissions: (perm as string[] | undefined) ?? [],
      issuedAt: new Date(iat * 1000),
      expiresAt: new Date(exp * 1000),
      kid: info.kid
    }
  }
}

const invalid = (message: string): InvalidTokenError => new InvalidTokenError(message)

/** jose's error → a client-safe reason. jose's own messages are not passed on. */
function translate (err: unknown): Error {
  if (err instanceof errors.JWTExpired) return invalid('token expired')
  if (err instanceof errors.JWSSignatureVerificationFailed) return invalid('token signature invalid')
  if (err instanceof errors.JOSEAlgNotAllowed) return invalid('token algorithm not accepted')
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'aud': return invalid('token audience mismatch')
      case 'iss': return invalid('token issuer mismatch')
      case 'nbf': return invalid('token not yet valid')
      case 'typ': return invalid('token type not accepted')
      default: return invalid(err.reason === 'missing' ? `token lacks the ${err.claim} claim` : `token ${err.claim} claim invalid`)
    }
  }
  if (err instanceof errors.JOSEError) return invalid('malformed token')
  return err instanceof Error ? err : new Error(String(err))
}

function assertTtl (ttl: number): void {
  if (!Number.isSafeInteger(ttl) || ttl <= 0) throw new RangeError(`token ttl must be a positive whole number of seconds, got ${ttl}`)
}

function normalizePermissions (perms: string[]): string[] {
  for (const p of perms) {
    if (typeof p !== 'string' || p.length === 0) throw new TypeError('token permissions must be non-empty strings')
  }
  return [...new Set(perms)]
}

/** The `jti` of a token, read without verifying it (revocation by token); undefined if it is not a JWT. */
export function tokenIdOf (token: string): string | undefined {
  try {
    const jti = decodeJwt(token).jti
    return typeof jti === 'string' && jti !== '' ? jti : undefined
  } catch {
    return undefined
  }
}
