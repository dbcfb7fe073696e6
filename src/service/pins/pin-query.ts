/**
 * GET /pins filters, exactly as the Pinning Service API defines them:
 * cid (1–10, comma-separated), name + match, status (comma-separated; default
 * `pinned` as the spec says), before/after (RFC 3339), limit (1–1000, default
 * 10), meta (URL-encoded JSON, and the `meta[key]=value` form JS clients send).
 * Results are newest first; `count` counts every match of all filters
 * (before/after included), so paging with `before` terminates.
 */
import { CID } from 'multiformats/cid'
import { InvalidInputError } from '../../kernel/errors.js'
import { parseMicros } from '../../ledger/clock.js'
import type { PinQuery } from '../../ledger/query.js'
import type { PinState } from '../../ledger/records.js'
import { z } from 'zod/v4'
import { setOwn } from './own-property.js'
import { PinMeta } from './pin-request.js'

export type { PinQuery } from '../../ledger/query.js'

/** a pin's status (the Pinning Service API's Status): the `status` filter takes a comma-separated list of them */
export const Status = z.enum(['queued', 'pinning', 'pinned', 'failed'] satisfies PinState[]).meta({
  description: 'Status a pin object can have at a pinning service: queued (waiting), pinning (being fetched), pinned, failed (see info.status_details)'
})
/** how `name` is matched (the Pinning Service API's TextMatchingStrategy) */
export const TextMatchingStrategy = z.enum(['exact', 'iexact', 'partial', 'ipartial']).meta({ description: 'Alternative text matching strategy', default: 'exact' })
const STATES = Status.options
const MATCHES = TextMatchingStrategy.options

const CID_COUNT = 'cid takes 1 to 10 comma-separated CIDs'
const timestamp = (key: string, description: string) => z.string()
  .refine(v => parseMicros(v) != null, `${key} must be an RFC 3339 timestamp such as 2026-11-22T03:20:38.955Z`)
  .meta({ description, format: 'date-time' })

/**
 * The GET /pins query parameters as the Pinning Service API defines them,
 * decoded from the query string (a comma-separated list as an array, `meta`
 * as its JSON object, `limit` as a number). parsePinQuery validates the
 * filters with these, and the OpenAPI document's parameters are derived from
 * them (src/http/openapi.ts): the schema of each, its description, and
 * (`style`, `explode`, `example`) how it is written in the query string.
 */
export const PinQueryParams = z.object({
  cid: z.array(z.string()).min(1, CID_COUNT).max(10, CID_COUNT)
    .superRefine((list, ctx) => {
      for (const c of list) {
        try { CID.parse(c) } catch {
          ctx.addIssue({ code: 'custom', message: `not a valid CID: "${c.slice(0, 100)}"` })
          return
        }
      }
    })
    .meta({
      description: 'Return pin objects pinning any of these CIDs (1–10, comma-separated; CIDv0 and v1 match alike)',
      uniqueItems: true, style: 'form', explode: false, example: ['Qm1', 'bafy2']
    }),
  name: z.string().max(255, 'name is at most 255 characters')
    .meta({ description: 'Return pin objects with this name (by default a case-sensitive, exact match; see match)' }),
  match: TextMatchingStrategy.meta({ description: 'Text matching strategy for name: exact (default), iexact, partial, ipartial' }),
  status: z.array(Status).min(1).default(['pinned'])
    .meta({
      description: 'Return pin objects with any of these statuses (comma-separated); default: pinned only',
      uniqueItems: true, style: 'form', explode: false, example: ['queued', 'pinning']
    }),
  before: timestamp('before', 'Return pin objects created before this RFC 3339 timestamp (paging: the created of the oldest result)'),
  after: timestamp('after', 'Return pin objects created after this RFC 3339 timestamp'),
  limit: z.int().min(1).max(1000).default(10).meta({ description: 'Max records to return' }),
  meta: PinMeta.meta({
    description: 'Return pin objects whose meta holds all these key/value pairs, as URL-encoded JSON (`meta={"app":"x"}`); the form `meta[app]=x` (what JS clients send) is accepted too'
  })
})

type Params = z.infer<typeof PinQueryParams>

/** what a malformed value of a filter is told, where its schema does not say (an enum, a number) */
const REFUSALS: Partial<Record<keyof Params, string>> = {
  match: `match must be one of ${MATCHES.join(', ')}`,
  status: `status takes comma-separated values from ${STATES.join(', ')}`,
  limit: 'limit must be a whole number from 1 to 1000'
}

export function parsePinQuery (params: URLSearchParams): PinQuery {
  const one = (key: string): string | undefined => {
    const all = params.getAll(key)
    if (all.length > 1) throw new InvalidInputError(`query parameter "${key}" given more than once`)
    return all[0]
  }
  const list = (key: string): string[] | undefined => one(key)?.split(',').filter(s => s !== '')
  /** a filter, decoded from the query string, validated with its schema (in the order the spec lists them) */
  const valid = <K extends keyof Params>(key: K, value: unknown): Params[K] | undefined => {
    if (value === undefined) return undefined
    const r = PinQueryParams.shape[key].safeParse(value, { error: () => REFUSALS[key] })
    if (!r.success) throw new InvalidInputError(r.error.issues[0]?.message ?? `${key} is malformed`)
    return r.data as Params[K]
  }
  const q: PinQuery = { match: 'exact', statuses: new Set(['pinned']), limit: 10 }
  const cids = valid('cid', list('cid'))
  if (cids != null) q.cids = new Set(cids.map(c => CID.parse(c).toV1().toString()))
  const name = valid('name', one('name'))
  if (name != null) q.name = name
  q.match = valid('match', one('match')) ?? q.match
  const statuses = valid('status', list('status'))
  if (statuses != null) q.statuses = new Set(statuses)
  const before = valid('before', one('before'))
  if (before != null) q.beforeUs = parseMicros(before)
  const after = valid('after', one('after'))
  if (after != null) q.afterUs = parseMicros(after)
  const limit = one('limit')
  q.limit = valid('limit', limit == null ? undefined : /^\d{1,4}$/.test(limit) ? Number(limit) : Number.NaN) ?? q.limit
  // the decoded object is kept, own properties whatever the keys (zod's record output passes over "__proto__")
  const meta = parseMeta(params, one('meta'))
  if (valid('meta', meta) != null) q.meta = meta
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
