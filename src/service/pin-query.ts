/**
 * GET /pins filters, exactly as the Pinning Service API defines them:
 * cid (1–10, comma-separated), name + match, status (comma-separated; default
 * `pinned` as the spec says), before/after (RFC 3339), limit (1–1000, default
 * 10), meta (URL-encoded JSON, and the `meta[key]=value` form JS clients send).
 * Results are newest first; `count` counts every match of all filters
 * (before/after included), so paging with `before` terminates.
 */
import { CID } from 'multiformats/cid'
import { InvalidInputError } from '../errors.js'
import { parseMicros } from '../ledger/clock.js'
import type { PinLedger, PinSummary } from '../ledger/pins.js'
import type { PinRecord, PinState } from '../ledger/records.js'
import { z } from 'zod/v4'
import { setOwn } from './own-property.js'

/** a pin's status (the Pinning Service API's Status): the `status` filter takes a comma-separated list of them */
export const Status = z.enum(['queued', 'pinning', 'pinned', 'failed'] satisfies PinState[]).meta({
  description: 'Status a pin object can have at a pinning service: queued (waiting), pinning (being fetched), pinned, failed (see info.status_details)'
})
/** how `name` is matched (the Pinning Service API's TextMatchingStrategy) */
export const TextMatchingStrategy = z.enum(['exact', 'iexact', 'partial', 'ipartial']).meta({ description: 'Alternative text matching strategy', default: 'exact' })
const STATES = Status.options
const MATCHES = TextMatchingStrategy.options

export interface PinQuery {
  cids?: Set<string>
  name?: string
  match: typeof MATCHES[number]
  statuses: Set<PinState>
  beforeUs?: number
  afterUs?: number
  limit: number
  meta?: Record<string, string>
}

export function parsePinQuery (params: URLSearchParams): PinQuery {
  const one = (key: string): string | undefined => {
    const all = params.getAll(key)
    if (all.length > 1) throw new InvalidInputError(`query parameter "${key}" given more than once`)
    return all[0]
  }
  const q: PinQuery = { match: 'exact', statuses: new Set(['pinned']), limit: 10 }
  const cid = one('cid')
  if (cid != null) {
    const list = cid.split(',').filter(s => s !== '')
    if (list.length < 1 || list.length > 10) throw new InvalidInputError('cid takes 1 to 10 comma-separated CIDs')
    q.cids = new Set(list.map(c => {
      try { return CID.parse(c).toV1().toString() } catch { throw new InvalidInputError(`not a valid CID: "${c.slice(0, 100)}"`) }
    }))
  }
  const name = one('name')
  if (name != null) {
    if (name.length > 255) throw new InvalidInputError('name is at most 255 characters')
    q.name = name
  }
  const match = one('match')
  if (match != null) {
    const strategy = TextMatchingStrategy.safeParse(match)
    if (!strategy.success) throw new InvalidInputError(`match must be one of ${MATCHES.join(', ')}`)
    q.match = strategy.data
  }
  const status = one('status')
  if (status != null) {
    const list = status.split(',').filter(s => s !== '')
    if (list.length === 0 || list.some(s => !Status.safeParse(s).success)) throw new InvalidInputError(`status takes comma-separated values from ${STATES.join(', ')}`)
    q.statuses = new Set(list as PinState[])
  }
  for (const key of ['before', 'after'] as const) {
    const v = one(key)
    if (v == null) continue
    const us = parseMicros(v)
    if (us == null) throw new InvalidInputError(`${key} must be an RFC 3339 timestamp such as 2026-11-22T03:20:38.955Z`)
    if (key === 'before') q.beforeUs = us
    else q.afterUs = us
  }
  const limit = one('limit')
  if (limit != null) {
    if (!/^\d{1,4}$/.test(limit) || Number(limit) < 1 || Number(limit) > 1000) throw new InvalidInputError('limit must be a whole number from 1 to 1000')
    q.limit = Number(limit)
  }
  q.meta = parseMeta(params, one('meta'))
  return q
}

function parseMeta (params: URLSearchParams, json: string | undefined): Record<string, string> | undefined {
  const meta: Record<string, string> = {}
  if (json != null) {
    let parsed: unknown
    try { parsed = JSON.parse(json) } catch { throw new InvalidInputError('meta must be a URL-encoded JSON object of string values') }
    if (parsed == null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new InvalidInputError('meta must be a JSON object of string values')
    for (const [k, v] of Object.entries(parsed)) {
      if (typeof v !== 'string') throw new InvalidInputError(`meta value for "${k}" must be a string`)
      setOwn(meta, k, v)
    }
  }
  for (const [key, value] of params) {
    const m = /^meta\[(.+)\]$/.exec(key)
    if (m != null) setOwn(meta, m[1] as string, value)
  }
  return Object.keys(meta).length > 0 ? meta : undefined
}

/** Does a pin (its owner-index summary) match every filter? Removed and expired pins never do. */
export function matches (pin: PinSummary, q: PinQuery, now: number, graceMs = 0): boolean {
  if (pin.removed) return false
  if (pin.status !== 'failed' && pin.until + graceMs <= now) return false
  if (!q.statuses.has(pin.status)) return false
  if (q.cids != null && !q.cids.has(pin.cid)) return false
  if (q.name != null) {
    const have = pin.name ?? ''
    const ci = q.match === 'iexact' || q.match === 'ipartial'
    const a = ci ? have.toLowerCase() : have
    const b = ci ? q.name.toLowerCase() : q.name
    if (q.match === 'exact' || q.match === 'iexact' ? a !== b : !a.includes(b)) return false
  }
  if (q.meta != null) {
    for (const [k, v] of Object.entries(q.meta)) if (!Object.hasOwn(pin.meta, k) || pin.meta[k] !== v) return false
  }
  return true
}

/**
 * Filters and counts on the owner index's summaries (no record is read for
 * that); only the page's pins are read in full.
 */
export function listPins (ledger: PinLedger, owner: string, q: PinQuery, now: Date = new Date()): { count: number, results: PinRecord[] } {
  const results: PinRecord[] = []
  let count = 0
  const t = now.getTime()
  for (const s of ledger.summariesByOwner(owner, q.beforeUs, q.afterUs)) {
    if (!matches(s, q, t, ledger.graceMs)) continue
    count++
    if (results.length < q.limit) {
      const pin = ledger.get(s.id)
      if (pin != null) results.push(pin)
    }
  }
  return { count, results }
}

