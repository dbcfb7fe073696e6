/**
 * A listing's filters (GET /pins, `pind pins ls`), and what matching one
 * means: the semantics every ledger's `list` keeps, whatever it runs the
 * query on. Removed pins never match; a pin past its pinned_until (plus the
 * expiry grace) matches only if it failed.
 */
import type { ListedSummary, LiveSummary, PinState } from './records.js'

export type PinMatch = 'exact' | 'iexact' | 'partial' | 'ipartial'

/** the filters; `cids` are CIDv1 strings; before/after: creation times in microseconds */
export interface PinQuery {
  cids?: Set<string>
  name?: string
  match: PinMatch
  statuses: Set<PinState>
  beforeUs?: number
  afterUs?: number
  limit: number
  meta?: Record<string, string>
}

/** Does a pin (its owner-index summary) match every filter? Removed and expired pins never do. */
export function matches (pin: ListedSummary, q: PinQuery, now: number, graceMs = 0): boolean {
  return matcher(q, now, graceMs)(pin)
}

/**
 * matches for one query, what it asks worked out once: a listing tests every
 * summary of its owner against it. The cheap tests first: status and
 * pinned_until, CID, name, then meta.
 */
export function matcher (q: PinQuery, now: number, graceMs = 0): (pin: ListedSummary) => boolean {
  const ci = q.match === 'iexact' || q.match === 'ipartial'
  const exact = q.match === 'exact' || q.match === 'iexact'
  const name = q.name == null ? undefined : ci ? q.name.toLowerCase() : q.name
  const meta = q.meta == null ? undefined : Object.entries(q.meta)
  return (pin) => {
    if (pin.removed) return false
    if (!stateMatches(pin, q, now, graceMs)) return false
    if (q.cids != null && (pin.cid == null || !q.cids.has(pin.cid))) return false
    if (name != null) {
      const have = ci ? (pin.name ?? '').toLowerCase() : pin.name ?? ''
      if (exact ? have !== name : !have.includes(name)) return false
    }
    if (meta != null) {
      for (const [k, v] of meta) if (!Object.hasOwn(pin.meta, k) || pin.meta[k] !== v) return false
    }
    return true
  }
}

/** A pin not removed: is it live (or failed), with a status asked for? */
export function stateMatches (pin: Pick<LiveSummary, 'status' | 'until'>, q: PinQuery, now: number, graceMs: number): boolean {
  if (pin.status !== 'failed' && pin.until + graceMs <= now) return false
  return q.statuses.has(pin.status)
}
