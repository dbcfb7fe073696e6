/**
 * Operator-issued tokens and revocations in the ledger:
 *   tokens-issued   jti → IssuedTokenRecord   (operator tokens, for listing and audit)
 *   tokens-revoked  jti → RFC 3339 time of revocation
 *   owners-revoked  owner → iat (seconds): every token of that owner issued at or before it is revoked
 *   siwx-nonces     nonce → until (ms): Sign-In-With-X nonces used, until when (../tokens.ts useNonce)
 *   siwx-nonces-by-until  [until ms, nonce] → 1: the same, oldest first, to forget them
 * Wallet tokens from paid writes and SIWE are not recorded (there are many,
 * and they expire); they can still be revoked by jti or by owner.
 */
import type { Database } from 'lmdb'
import type { LedgerEnv } from './open.js'
import type { IssuedTokenRecord } from '../tokens.js'
export type { IssuedTokenRecord } from '../tokens.js'

/** expired nonces each useNonce forgets at most (so each call stays small) */
const NONCES_FORGOTTEN_PER_CALL = 16

export class TokenLedger {
  private readonly issued: Database<IssuedTokenRecord, string>
  private readonly revokedJti: Database<string, string>
  private readonly revokedOwners: Database<number, string>
  private readonly nonces: Database<number, string>
  private readonly noncesByUntil: Database<number, [number, string]>

  constructor (private readonly env: LedgerEnv) {
    this.issued = env.db<IssuedTokenRecord>('tokens-issued')
    this.revokedJti = env.db<string>('tokens-revoked')
    this.revokedOwners = env.db<number>('owners-revoked')
    this.nonces = env.db<number>('siwx-nonces')
    this.noncesByUntil = env.db<number>('siwx-nonces-by-until')
  }

  /** ../tokens.ts TokenLedger.useNonce */
  async useNonce (nonce: string, until: Date, now = new Date()): Promise<boolean> {
    const t = now.getTime()
    return await this.env.transaction(() => {
      for (const { key } of this.noncesByUntil.getRange({ end: [t, ''], limit: NONCES_FORGOTTEN_PER_CALL })) {
        const [ms, old] = key as [number, string]
        if (old === nonce) continue
        this.noncesByUntil.remove(key)
        if (this.nonces.get(old) === ms) this.nonces.remove(old)
      }
      const held = this.nonces.get(nonce)
      if (held != null && held >= t) return false
      if (held != null) this.noncesByUntil.remove([held, nonce])
      this.nonces.put(nonce, until.getTime())
      this.noncesByUntil.put([until.getTime(), nonce], 1)
      return true
    })
  }

  async recordIssued (rec: IssuedTokenRecord): Promise<void> {
    await this.env.transaction(() => { this.issued.put(rec.jti, rec) })
  }

  async revokeToken (jti: string, at = new Date()): Promise<void> {
    await this.env.transaction(() => { this.revokedJti.put(jti, at.toISOString()) })
  }

  /** Revokes every token of `owner` issued at or before `at`. */
  async revokeOwner (owner: string, at = new Date()): Promise<void> {
    const iat = Math.floor(at.getTime() / 1000)
    await this.env.transaction(() => {
      this.revokedOwners.put(owner.toLowerCase(), Math.max(iat, this.revokedOwners.get(owner.toLowerCase()) ?? 0))
    })
  }

  isRevoked (claims: { jti: string, sub: string, iat: number }): boolean {
    if (this.revokedJti.doesExist(claims.jti)) return true
    const before = this.revokedOwners.get(claims.sub)
    return before != null && claims.iat <= before
  }

  /** Was an operator token with this id minted here? (wallet tokens are not recorded) */
  wasIssued (jti: string): boolean {
    return this.issued.doesExist(jti)
  }

  revokedAt (jti: string): string | undefined {
    return this.revokedJti.get(jti)
  }

  revocations (): { tokens: Array<{ jti: string, at: string }>, owners: Array<{ owner: string, iat: number }> } {
    return {
      tokens: [...this.revokedJti.getRange()].map(({ key, value }) => ({ jti: key, at: value })),
      owners: [...this.revokedOwners.getRange()].map(({ key, value }) => ({ owner: key, iat: value }))
    }
  }

  * listIssued (): Generator<IssuedTokenRecord & { revoked?: string }> {
    for (const { value } of this.issued.getRange()) {
      const revoked = this.revokedJti.get(value.jti) ?? (this.isRevoked({ jti: value.jti, sub: value.owner, iat: Math.floor(Date.parse(value.issuedAt) / 1000) }) ? 'by owner' : undefined)
      yield revoked != null ? { ...value, revoked } : value
    }
  }
}
