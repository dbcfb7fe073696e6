/**
 * The front ends, leases and shared signing keys of ../coordination.ts and
 * ../signing-keys.ts on PostgreSQL. Times are the database's (now()), so the
 * front ends' clocks need not agree. A lease is taken or renewed by one
 * INSERT … ON CONFLICT whose update applies only to its holder or a lapsed
 * lease: of front ends taking it at once, one row comes back.
 */
import type { FrontEndRecord, FrontEnds, LeaseRecord, Leases } from '../coordination.js'
import type { SigningKeyRecords } from '../signing-keys.js'
import { json, type Db } from './pin-store.js'

export function frontEnds (db: Db): FrontEnds {
  return {
    beat: async (fe) => {
      await db.query(`INSERT INTO front_ends (id, record, seen_at) VALUES ($1, $2, now())
        ON CONFLICT (id) DO UPDATE SET record = excluded.record, seen_at = excluded.seen_at`, [fe.id, json(fe)])
    },
    leave: async (id) => {
      await db.query('UPDATE front_ends SET record = (record::jsonb || jsonb_build_object(\'leftAt\', $2::text))::json WHERE id = $1', [id, new Date().toISOString()])
    },
    forget: async (id) => { await db.query('DELETE FROM front_ends WHERE id = $1', [id]) },
    list: async (withinMs) => {
      const r = await db.query<{ record: Omit<FrontEndRecord, 'seenAt'>, seen_at: Date }>(
        `SELECT record, seen_at FROM front_ends ${withinMs != null ? "WHERE seen_at >= now() - $1 * interval '1 millisecond'" : ''} ORDER BY seen_at DESC, id`,
        withinMs != null ? [withinMs] : [])
      return r.rows.map(row => ({ ...row.record, seenAt: row.seen_at.toISOString() }))
    }
  }
}

export function leases (db: Db): Leases {
  return {
    take: async (name, holder, ttlMs) => {
      const r = await db.query(`INSERT INTO leases (name, holder, until) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
        ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until
        WHERE leases.holder = excluded.holder OR leases.until <= now()
        RETURNING holder`, [name, holder, ttlMs])
      return r.rowCount === 1
    },
    release: async (name, holder) => { await db.query('DELETE FROM leases WHERE name = $1 AND holder = $2', [name, holder]) },
    held: async () => {
      const r = await db.query<{ name: string, holder: string, until: Date }>('SELECT name, holder, until FROM leases WHERE until > now() ORDER BY name')
      return r.rows.map((row): LeaseRecord => ({ name: row.name, holder: row.holder, until: row.until.toISOString() }))
    }
  }
}

export function signingKeys (db: Db): SigningKeyRecords {
  return {
    all: async () => (await db.query<{ kid: string, key: string }>('SELECT kid, key::text AS key FROM signing_keys ORDER BY kid')).rows.map(r => ({ kid: r.kid, json: r.key })),
    put: async (kid, text) => {
      await db.query(`INSERT INTO signing_keys (kid, key, version) VALUES ($1, $2, nextval('signing_keys_version'))
        ON CONFLICT (kid) DO UPDATE SET key = excluded.key, version = excluded.version`, [kid, text])
    },
    version: async () => {
      const r = await db.query<{ v: string }>("SELECT coalesce(max(version), 0)::text || '/' || count(*)::text AS v FROM signing_keys")
      return r.rows[0]?.v ?? '0/0'
    }
  }
}
