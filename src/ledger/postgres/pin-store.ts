/**
 * Pin and payment rows: a record is kept whole as json, beside the columns
 * that listings, indexes and the archiver read (./schema.ts). Every write of
 * a pin goes through putPin, which derives those columns from the record and
 * notes the pin as the transaction left it (./tx.ts).
 */
import type pg from 'pg'
import { CID } from 'multiformats/cid'
import { PaymentReusedError } from '../errors.js'
import type { PaymentRecord, PinRecord } from '../records.js'
import { Tx } from './tx.js'

/** anything statements run on: the pool, or a transaction's or snapshot's client */
export type Db = Pick<pg.ClientBase, 'query'> | pg.Pool

/** a statement on the pool, a client, or in a write transaction (whose first failure fails it) */
export async function query<R extends pg.QueryResultRow = any> (db: Db | Tx, sql: string, params: unknown[] = []): Promise<pg.QueryResult<R>> {
  return db instanceof Tx ? await db.q<R>(sql, params) : await db.query<R>(sql, params)
}

/** CIDv0 and CIDv1 of the same content index alike. */
export function cidKey (cid: string | CID): string {
  return (typeof cid === 'string' ? CID.parse(cid) : cid).toV1().toString()
}

/** Queued or being fetched: a replacement in this state still holds what it replaces. */
export function unsettled (pin: PinRecord): boolean {
  return pin.status === 'queued' || pin.status === 'pinning'
}

/**
 * A string, or each key and value of a map, as a text column can hold it: a
 * NUL becomes U+FFFD (in the columns filtered on and in the filters alike;
 * the records themselves keep it).
 */
export function textual<T extends string | Record<string, string>> (v: T): T {
  const clean = (s: string): string => s.includes('\u0000') ? s.replaceAll('\u0000', '\ufffd') : s
  if (typeof v === 'string') return clean(v) as T
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [clean(k), clean(String(x))])) as T
}

/** whether a key can name a row at all (text cannot hold a NUL: no row has one) */
export function storableKey (s: string): boolean {
  return !s.includes('\u0000')
}

/** as JSON for a json parameter (node-postgres would send a JS array as a PostgreSQL array) */
export function json (v: unknown): string {
  return JSON.stringify(v)
}

/** a pin, not archived (archived ones are read by known() and snapshots only); `lock`: FOR UPDATE, in a write that decides on it */
export async function getPin (db: Db | Tx, requestid: string, lock = false): Promise<PinRecord | undefined> {
  if (!storableKey(requestid)) return undefined
  const sql = `SELECT record FROM pins WHERE requestid = $1 AND NOT archived${lock ? ' FOR UPDATE' : ''}`
  return (await query<{ record: PinRecord }>(db, sql, [requestid])).rows[0]?.record
}

const PIN_COLUMNS = 'requestid, owner, cid, created_us, status, until_ms, name, name_lower, meta, removed, removed_ms, record'

function pinParams (pin: PinRecord): unknown[] {
  const removedMs = pin.removed != null ? Date.parse(pin.removed.at) : null
  return [
    pin.requestid, pin.owner, cidKey(pin.cid), pin.createdUs, pin.status, Date.parse(pin.pinnedUntil), pin.name == null ? null : textual(pin.name),
    textual((pin.name ?? '').toLowerCase()), json(textual(pin.meta ?? {})), pin.removed != null, removedMs == null ? null : Number.isFinite(removedMs) ? removedMs : 0, json(pin)
  ]
}

/**
 * Writes a pin (`insert`: a new one; an existing requestid is refused) and
 * notes it as written.
 */
export async function putPin (tx: Tx, pin: PinRecord, insert = false): Promise<void> {
  if (insert) {
    await tx.q(`INSERT INTO pins (${PIN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, pinParams(pin),
      (c) => c === 'pins_pkey' ? new Error(`pin ${pin.requestid} exists already`) : undefined)
  } else {
    await tx.q(`UPDATE pins SET (${PIN_COLUMNS}) = ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) WHERE requestid = $1`, pinParams(pin))
  }
  tx.changes.pins.push({ root: cidKey(pin.cid), requestid: pin.requestid, status: pin.status, until: Date.parse(pin.pinnedUntil), removed: pin.removed != null })
}

/** Records a payment: PaymentReusedError when its id is recorded already (the table's primary key decides, also between front ends). */
export async function insertPayment (tx: Tx, p: PaymentRecord): Promise<void> {
  await tx.q('INSERT INTO payments (id, requestid, amount, record) VALUES ($1, $2, $3, $4)', [p.id, p.requestid, p.amount, json(p)],
    (c) => c === 'payments_pkey' ? new PaymentReusedError(p.id) : undefined)
  // the record the payment bought is written: its settlement note goes with it
  await tx.q('DELETE FROM settling WHERE payment_id = $1', [p.id])
}

export async function getPayment (db: Db, id: string): Promise<PaymentRecord | undefined> {
  if (!storableKey(id)) return undefined
  const r = await db.query<{ record: PaymentRecord }>('SELECT record FROM payments WHERE id = $1 AND NOT archived', [id])
  return r.rows[0]?.record
}

/** Adds a pin to the fetch queue (it waits for the fetcher). */
export async function enqueue (tx: Tx, pin: PinRecord): Promise<void> {
  await tx.q('INSERT INTO fetch_queue (requestid, created_us) VALUES ($1, $2) ON CONFLICT (requestid) DO NOTHING', [pin.requestid, pin.createdUs])
  tx.changes.queued = true
}

export async function dequeue (tx: Tx, requestid: string): Promise<boolean> {
  return (await tx.q('DELETE FROM fetch_queue WHERE requestid = $1', [requestid])).rowCount === 1
}
