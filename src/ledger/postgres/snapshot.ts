/**
 * Ledger snapshots (export-ledger) on PostgreSQL: a client of its own in a
 * REPEATABLE READ READ ONLY transaction, so every read sees the database as
 * of its first statement whatever is written meanwhile; walks go in keyset
 * pages. release() ends the transaction and returns the client.
 */
import type pg from 'pg'
import type { LedgerSnapshot } from '../ledger.js'
import type { PaymentRecord, PinRecord } from '../records.js'
import type { UploadTicket } from '../tickets.js'
import { blocksOf } from './block-refs.js'

const PAGE = 500

/** every row of `table`, `record` column, in key order, PAGE at a time */
async function * pages<T> (client: pg.ClientBase, table: string, key: string): AsyncGenerator<T> {
  let after: string | undefined
  for (;;) {
    const r = after == null
      ? await client.query<{ k: string, record: T }>(`SELECT ${key} AS k, record FROM ${table} ORDER BY ${key} LIMIT ${PAGE}`)
      : await client.query<{ k: string, record: T }>(`SELECT ${key} AS k, record FROM ${table} WHERE ${key} > $1 ORDER BY ${key} LIMIT ${PAGE}`, [after])
    for (const row of r.rows) yield row.record
    if (r.rows.length < PAGE) return
    after = r.rows[r.rows.length - 1]?.k
  }
}

export async function openSnapshot (pool: pg.Pool): Promise<LedgerSnapshot> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    // the snapshot is taken at the first statement, not at BEGIN: now
    await client.query('SELECT 1')
  } catch (err) {
    client.release(err as Error)
    throw err
  }
  let released = false
  return {
    // archived pins and payments too: an export carries every record
    pins: () => pages<PinRecord>(client, 'pins', 'requestid'),
    payments: () => pages<PaymentRecord>(client, 'payments', 'id'),
    tickets: () => pages<UploadTicket>(client, 'tickets', 'id'),
    pin: async (requestid) => (await client.query<{ record: PinRecord }>('SELECT record FROM pins WHERE requestid = $1', [requestid])).rows[0]?.record,
    ticket: async (id) => (await client.query<{ record: UploadTicket }>('SELECT record FROM tickets WHERE id = $1', [id])).rows[0]?.record,
    blocksOf: async (requestid) => await blocksOf(client, requestid),
    release: async () => {
      if (released) return
      released = true
      try {
        await client.query('ROLLBACK')
        client.release()
      } catch (err) {
        client.release(err as Error)
      }
    }
  }
}
