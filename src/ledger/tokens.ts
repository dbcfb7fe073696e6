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
  /**
   * Marks a Sign-In-With-X nonce used until `until` (one write, on every
   * front end sharing the ledger): true when it was not in use, false when it
   * is already (a replay). A nonce past its `until` counts as unused again;
   * a few such are forgotten by each call, so the table stays as large as
   * the sign-ins of the last minutes. Not carried by a ledger move.
   */
  useNonce(nonce: string, until: Date, now?: Date): Promise<boolean>
}
