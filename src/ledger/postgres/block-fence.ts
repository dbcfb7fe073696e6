/**
 * The block fence of ../coordination.ts on PostgreSQL: marks are rows of
 * `block_marks`; the fence is one advisory lock. A mark is inserted by one
 * statement that takes the lock shared for its transaction; a sweep batch
 * takes it exclusively for its own, reads the batch's marks, then deletes.
 * So a mark's transaction ends either before the batch takes the lock (the
 * batch's read, a statement after it, sees the mark) or after the batch has
 * committed (the front end that marked writes its block afterwards, finding
 * it gone if the batch deleted it). Lapsed marks (a front end that died while
 * writing) are ignored and cleared by the next closed fence; a front end
 * that starts again takes away the marks of its last run at once (their
 * tickets begin with its id: unmarkOwner), rather than leave its blocks to
 * gc only once the marks lapse.
 */
import { randomUUID } from 'node:crypto'
import type pg from 'pg'
import type { BlockFence } from '../coordination.js'

/** the fence's advisory lock: 'pind' 'fnce' as one 64-bit constant, apart from the migrations' lock */
const FENCE_LOCK = '8100812094735983461'

export function blockFence (pool: pg.Pool, mapError: (err: unknown) => unknown): BlockFence {
  return {
    mark: async (names, ttlMs, owner) => {
      // the owner's marks share the prefix of their tickets (unmarkOwner)
      const ticket = owner != null ? `${owner} ${randomUUID()}` : randomUUID()
      if (names.length === 0) return ticket
      await pool.query(`WITH fence AS (SELECT pg_advisory_xact_lock_shared($1::bigint))
        INSERT INTO block_marks (ticket, name, until) SELECT $2, n, now() + $3 * interval '1 millisecond'
        FROM fence, unnest($4::text[]) AS n ON CONFLICT DO NOTHING`, [FENCE_LOCK, ticket, ttlMs, [...new Set(names)]])
        .catch((err: unknown) => { throw mapError(err) })
      return ticket
    },
    unmark: async (ticket) => {
      await pool.query('DELETE FROM block_marks WHERE ticket = $1', [ticket]).catch((err: unknown) => { throw mapError(err) })
    },
    unmarkOwner: async (owner) => {
      // the primary key's order (collation C) makes the prefix a range of it
      const r = await pool.query('DELETE FROM block_marks WHERE ticket >= $1 AND ticket < $2', [`${owner} `, `${owner}!`]).catch((err: unknown) => { throw mapError(err) })
      return r.rowCount ?? 0
    },
    closed: async (names, fn) => {
      let client: pg.PoolClient
      try {
        client = await pool.connect()
      } catch (err) {
        throw mapError(err)
      }
      let broken: Error | undefined
      try {
        let marked: Set<string>
        try {
          await client.query('BEGIN')
          await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [FENCE_LOCK])
          await client.query('DELETE FROM block_marks WHERE until <= now()')
          const r = await client.query<{ name: string }>('SELECT DISTINCT name FROM block_marks WHERE name = ANY($1::text[])', [[...names]])
          marked = new Set(r.rows.map(row => row.name))
        } catch (err) {
          throw mapError(err)
        }
        const out = await fn(marked)
        await client.query('COMMIT').catch((err: unknown) => { throw mapError(err) })
        return out
      } catch (err) {
        await client.query('ROLLBACK').catch((e: unknown) => { broken = e as Error })
        throw err
      } finally {
        client.release(broken)
      }
    }
  }
}
