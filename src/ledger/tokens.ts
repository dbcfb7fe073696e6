/**
 * Operator-issued tokens and revocations. Wallet tokens from paid writes and
 * SIWE are not recorded (there are many, and they expire); they can still
 * be revoked by jti or by owner.
 */
export interface IssuedTokenRecord {
  jti: string
  owner: string
  permissions: string[]
  issuedAt: string
  expiresAt: string
  kid: string
  note?: string
}

export interface TokenLedger {
  recordIssued(rec: IssuedTokenRecord): Promise<void>
  revokeToken(jti: string, at?: Date): Promise<void>
  /** Revokes every token of `owner` issued at or before `at`. */
  revokeOwner(owner: string, at?: Date): Promise<void>
  isRevoked(claims: { jti: string, sub: string, iat: number }): Promise<boolean>
  /** Was an operator token with this id minted here? (wallet tokens are not recorded) */
  wasIssued(jti: string): Promise<boolean>
  revokedAt(jti: string): Promise<string | undefined>
  listIssued(): Promise<Array<IssuedTokenRecord & { revoked?: string }>>
  /** every revocation, of recorded tokens and wallet tokens alike (what a move to another ledger carries) */
  revocations(): Promise<{ tokens: Array<{ jti: string, at: string }>, owners: Array<{ owner: string, iat: number }> }>
}
