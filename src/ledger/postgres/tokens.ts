/**
 * Operator-issued tokens and revocations (../tokens.ts): tokens_issued,
 * tokens_revoked (jti → when), owners_revoked (owner → every token issued at
 * or before this iat is revoked; only ever moves forward), siwx_nonces
 * (version 4: Sign-In-With-X nonces used, until when).
 */
import type { IssuedTokenRecord, TokenLedger } from '../tokens.js'
import { json, type Db } from './pin-store.js'

export function tokenLedger (db: Db): TokenLedger {
  const isRevoked = async (claims: { jti: string, sub: string, iat: number }): Promise<boolean> => {
    const r = await db.query<{ yes: boolean }>(`SELECT EXISTS (SELECT 1 FROM tokens_revoked WHERE jti = $1)
      OR EXISTS (SELECT 1 FROM owners_revoked WHERE owner = $2 AND $3 <= iat) AS yes`, [claims.jti, claims.sub, claims.iat])
    return r.rows[0]?.yes === true
  }
  return {
    recordIssued: async (rec) => {
      await db.query('INSERT INTO tokens_issued (jti, record) VALUES ($1, $2) ON CONFLICT (jti) DO UPDATE SET record = excluded.record', [rec.jti, json(rec)])
    },
    revokeToken: async (jti, at = new Date()) => {
      await db.query('INSERT INTO tokens_revoked (jti, at) VALUES ($1, $2) ON CONFLICT (jti) DO UPDATE SET at = excluded.at', [jti, at.toISOString()])
    },
    revokeOwner: async (owner, at = new Date()) => {
      await db.query(`INSERT INTO owners_revoked (owner, iat) VALUES ($1, $2)
        ON CONFLICT (owner) DO UPDATE SET iat = GREATEST(owners_revoked.iat, excluded.iat)`, [owner.toLowerCase(), Math.floor(at.getTime() / 1000)])
    },
    isRevoked,
    wasIssued: async (jti) => (await db.query('SELECT 1 FROM tokens_issued WHERE jti = $1', [jti])).rows.length > 0,
    revokedAt: async (jti) => (await db.query<{ at: string }>('SELECT at FROM tokens_revoked WHERE jti = $1', [jti])).rows[0]?.at,
    revocations: async () => ({
      tokens: (await db.query<{ jti: string, at: string }>('SELECT jti, at FROM tokens_revoked ORDER BY jti')).rows.map(r => ({ jti: r.jti, at: r.at })),
      owners: (await db.query<{ owner: string, iat: string }>('SELECT owner, iat FROM owners_revoked ORDER BY owner')).rows.map(r => ({ owner: r.owner, iat: Number(r.iat) }))
    }),
    useNonce: async (nonce, until, now = new Date()) => {
      // one statement: a few expired nonces forgotten (never this one: a row is changed once per
      // statement; none another call is forgetting: no waits between callers), then this one
      // taken unless it is held still; the primary key decides a race
      const r = await db.query(`WITH forgotten AS (
          DELETE FROM siwx_nonces WHERE nonce IN (SELECT nonce FROM siwx_nonces WHERE until < $3 AND nonce <> $1 ORDER BY until LIMIT 16 FOR UPDATE SKIP LOCKED))
        INSERT INTO siwx_nonces (nonce, until) VALUES ($1, $2)
        ON CONFLICT (nonce) DO UPDATE SET until = excluded.until WHERE siwx_nonces.until < $3
        RETURNING 1`, [nonce, until.toISOString(), now.toISOString()])
      return r.rows.length === 1
    },
    listIssued: async () => {
      const r = await db.query<{ record: IssuedTokenRecord, at: string | null, by_owner: boolean }>(`SELECT t.record, r.at,
        EXISTS (SELECT 1 FROM owners_revoked o WHERE o.owner = (t.record->>'owner') COLLATE "C" AND floor(extract(epoch FROM (t.record->>'issuedAt')::timestamptz)) <= o.iat) AS by_owner
        FROM tokens_issued t LEFT JOIN tokens_revoked r ON r.jti = t.jti ORDER BY t.jti`)
      return r.rows.map(row => {
        const revoked = row.at ?? (row.by_owner ? 'by owner' : undefined)
        return revoked != null ? { ...row.record, revoked } : row.record
      })
    }
  }
}
