/**
 * The front ends and leases of ../coordination.ts for LMDB, in this process's
 * memory: one serve holds the data dir (its lock), so no other process beats
 * or contends, and writing a beat and four lease renewals to the file every
 * few seconds would only cost an idle serve its commits. `pind status`
 * through the running serve reads them here; on a stopped data dir there is
 * no front end to list.
 */
import type { FrontEndRecord, FrontEnds, LeaseRecord, Leases } from '../coordination.js'

export function memoryFrontEnds (): FrontEnds {
  const all = new Map<string, FrontEndRecord>()
  return {
    beat: async (fe) => { all.set(fe.id, { ...fe, seenAt: new Date().toISOString() }) },
    leave: async (id) => {
      const fe = all.get(id)
      if (fe != null) all.set(id, { ...fe, leftAt: new Date().toISOString() })
    },
    forget: async (id) => { all.delete(id) },
    list: async (withinMs) => {
      const since = withinMs != null ? Date.now() - withinMs : -Infinity
      return [...all.values()].filter(f => Date.parse(f.seenAt) >= since).sort((a, b) => b.seenAt.localeCompare(a.seenAt))
    }
  }
}

export function memoryLeases (): Leases {
  const all = new Map<string, LeaseRecord>()
  return {
    take: async (name, holder, ttlMs) => {
      const now = Date.now()
      const current = all.get(name)
      if (current != null && current.holder !== holder && Date.parse(current.until) > now) return false
      all.set(name, { name, holder, until: new Date(now + ttlMs).toISOString() })
      return true
    },
    release: async (name, holder) => { if (all.get(name)?.holder === holder) all.delete(name) },
    held: async () => {
      const now = Date.now()
      return [...all.values()].filter(l => Date.parse(l.until) > now).sort((a, b) => a.name.localeCompare(b.name))
    }
  }
}
