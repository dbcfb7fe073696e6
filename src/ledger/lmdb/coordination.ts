/**
 * The front ends and leases of ../coordination.ts on LMDB. One serve holds
 * the data dir (its lock), so a lease is contended only by the processes that
 * open the ledger in turn; the records still say who held what until when,
 * as a shared ledger's do.
 */
import type { FrontEndRecord, FrontEnds, LeaseRecord, Leases } from '../coordination.js'
import type { LedgerEnv } from './open.js'

export function lmdbFrontEnds (env: LedgerEnv): FrontEnds {
  const db = env.db<FrontEndRecord>('frontends')
  return {
    beat: async (fe) => { await db.put(fe.id, { ...fe, seenAt: new Date().toISOString() }) },
    leave: async (id) => { await db.remove(id) },
    list: async (withinMs) => {
      const since = withinMs != null ? Date.now() - withinMs : -Infinity
      const all: FrontEndRecord[] = []
      for (const { value } of db.getRange()) if (Date.parse(value.seenAt) >= since) all.push(value)
      return all.sort((a, b) => b.seenAt.localeCompare(a.seenAt))
    }
  }
}

export function lmdbLeases (env: LedgerEnv): Leases {
  const db = env.db<LeaseRecord>('leases')
  return {
    take: async (name, holder, ttlMs) => await env.transaction(() => {
      const now = Date.now()
      const current = db.get(name)
      if (current != null && current.holder !== holder && Date.parse(current.until) > now) return false
      void db.put(name, { name, holder, until: new Date(now + ttlMs).toISOString() })
      return true
    }),
    release: async (name, holder) => {
      await env.transaction(() => {
        if (db.get(name)?.holder === holder) void db.remove(name)
      })
    },
    held: async () => {
      const now = Date.now()
      const out: LeaseRecord[] = []
      for (const { value } of db.getRange()) if (Date.parse(value.until) > now) out.push(value)
      return out
    }
  }
}
