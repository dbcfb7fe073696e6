/**
 * The ledger's PostgreSQL pool (src/ledger/postgres/connection.ts) when the
 * server drops a connection that is lent out between two statements (a
 * transaction awaiting its caller, a snapshot being read): pg-pool listens
 * for errors only on idle connections, so without a listener of its own the
 * error was uncaught and stopped serve (seen with two front ends when
 * PostgreSQL went down under load). Now the next statement on it fails, and
 * the pool goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPool } from '../../../src/ledger/postgres/connection.js'
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js'
import { waitFor } from '../../helpers/ports.js'

let db: TestPostgres
beforeAll(async () => { db = await startTestPostgres() })
afterAll(async () => { await db?.stop() })

describe('the ledger pool', () => {
  it('survives the server dropping a connection lent out and idle: its next statement fails, the pool serves on', async () => {
    const pool = createPool({ connectionString: db.url, poolSize: 2 })
    const uncaught: unknown[] = []
    const onUncaught = (err: unknown): void => { uncaught.push(err) }
    process.on('uncaughtException', onUncaught)
    try {
      const lent = await pool.connect()
      const pid = (await lent.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
      let ended = false
      lent.once('end', () => { ended = true })
      // the server ends it while no statement runs on it
      await pool.query('SELECT pg_terminate_backend($1)', [pid])
      await waitFor(() => ended ? true : undefined, 'the lent connection to end')
      await expect(lent.query('SELECT 1')).rejects.toThrow()
      lent.release(true)
      expect((await pool.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n).toBe(1)
      expect(uncaught).toEqual([])
    } finally {
      process.off('uncaughtException', onUncaught)
      await pool.end()
    }
  })
})
