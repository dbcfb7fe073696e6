/**
 * Fetch claims on PostgreSQL (PinLedger.claimFetches): a claim is the
 * holder and lease_until on the pin's fetch_queue row, judged by the
 * database's now(), so front ends whose clocks differ agree on when a lease
 * lapses. The row goes when the pin leaves the queue, and its claim with it.
 */
import type { PinLedger } from '../pins.js'
import type { Db } from './pin-store.js'

export function fetchClaims (db: Db): Pick<PinLedger, 'claimFetches' | 'renewFetches' | 'releaseFetches'> {
  return {
    claimFetches: async (holder, limit, leaseMs, dueBy = new Date()) => {
      if (limit <= 0) return []
      // SKIP LOCKED: a row another claim is taking is passed over, not waited for; one it took
      // meanwhile is read again as committed (held, so left out): no pin goes to two holders
      const r = await db.query<{ requestid: string, created_us: string }>(`
        UPDATE fetch_queue SET holder = $1, lease_until = now() + $3::float8 * interval '1 millisecond'
        WHERE requestid IN (
          SELECT q.requestid FROM fetch_queue q JOIN pins p USING (requestid)
          WHERE (q.holder IS NULL OR q.lease_until <= now())
            AND coalesce(p.record->'fetch'->>'nextAttemptAt', '') COLLATE "C" <= $4
          ORDER BY q.created_us, q.requestid
          LIMIT $2
          FOR UPDATE OF q SKIP LOCKED)
        RETURNING requestid, created_us`, [holder, limit, leaseMs, dueBy.toISOString()])
      return r.rows
        .sort((a, b) => Number(BigInt(a.created_us) - BigInt(b.created_us)) || (a.requestid < b.requestid ? -1 : a.requestid > b.requestid ? 1 : 0))
        .map(row => row.requestid)
    },
    renewFetches: async (holder, requestids, leaseMs) => {
      if (requestids.length === 0) return []
      const r = await db.query<{ requestid: string }>(`
        UPDATE fetch_queue SET lease_until = now() + $3::float8 * interval '1 millisecond'
        WHERE requestid = ANY($2::text[]) AND holder = $1
        RETURNING requestid`, [holder, requestids, leaseMs])
      const kept = new Set(r.rows.map(row => row.requestid))
      return [...new Set(requestids)].filter(id => kept.has(id))
    },
    releaseFetches: async (holder, requestids) => {
      if (requestids == null) await db.query('UPDATE fetch_queue SET holder = NULL, lease_until = NULL WHERE holder = $1', [holder])
      else if (requestids.length > 0) await db.query('UPDATE fetch_queue SET holder = NULL, lease_until = NULL WHERE holder = $1 AND requestid = ANY($2::text[])', [holder, requestids])
    }
  }
}
