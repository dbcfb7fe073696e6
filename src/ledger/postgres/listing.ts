/**
 * GET /pins on PostgreSQL: the query's filters (../query.ts) as one
 * statement over the pins not removed, newest first, with the count of every
 * match. The owner's listings use pins_owner_created, every owner's
 * pins_created, meta filters the GIN index on meta.
 *
 * Matching as ../query.ts defines it: a pin past its pinned_until plus the
 * grace matches only if it failed; names compare as JavaScript's
 * toLowerCase() makes them (name_lower is written from it, so the database's
 * locale plays no part); a partial match is a substring, LIKE's wildcards in
 * it escaped.
 */
import type { PinQuery } from '../query.js'
import type { PinRecord } from '../records.js'
import { json, textual, type Db } from './pin-store.js'

/** `s` as a LIKE pattern matching itself only (escape character: backslash) */
export function likeLiteral (s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`)
}

export async function listPins (db: Db, owner: string | undefined, q: PinQuery, now: number, graceMs: number): Promise<{ count: number, results: PinRecord[] }> {
  const params: unknown[] = []
  const p = (v: unknown): string => { params.push(v); return `$${params.length}` }
  const where = ['NOT removed', `(status = 'failed' OR until_ms + ${p(graceMs)} > ${p(now)})`, `status = ANY(${p([...q.statuses])}::text[])`]
  if (owner != null) where.push(`owner = ${p(owner)}`)
  if (q.beforeUs != null) where.push(`created_us < ${p(q.beforeUs)}`)
  if (q.afterUs != null) where.push(`created_us > ${p(q.afterUs)}`)
  if (q.cids != null) where.push(`cid = ANY(${p([...q.cids])}::text[])`)
  if (q.name != null) {
    const ci = q.match === 'iexact' || q.match === 'ipartial'
    const exact = q.match === 'exact' || q.match === 'iexact'
    const column = ci ? 'name_lower' : 'coalesce(name, \'\')'
    const name = textual(ci ? q.name.toLowerCase() : q.name)
    where.push(exact ? `${column} = ${p(name)}` : `${column} LIKE ${p(`%${likeLiteral(name)}%`)} ESCAPE '\\'`)
  }
  if (q.meta != null) where.push(`meta @> ${p(json(textual(q.meta)))}::jsonb`)
  // the count and the page each read the matches themselves: a shared CTE would be materialized with every match's record
  const matches = `FROM pins WHERE ${where.join(' AND ')}`
  const r = await db.query<{ total: string, page: PinRecord[] }>(`SELECT (SELECT count(*) ${matches}) AS total,
      (SELECT coalesce(json_agg(record ORDER BY created_us DESC), '[]'::json) FROM (SELECT created_us, record ${matches} ORDER BY created_us DESC LIMIT ${p(q.limit)}) l) AS page`, params)
  const row = r.rows[0]
  return { count: Number(row?.total ?? 0), results: row?.page ?? [] }
}
