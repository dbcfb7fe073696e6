/**
 * The ledger contract (./ledger-contract.ts) on the PostgreSQL ledger: one
 * throwaway cluster for the file, a fresh database for each test; reopen
 * closes the pool and opens the same database again.
 */
import { MemoryDatastore } from 'datastore-core'
import { afterAll, beforeAll } from 'vitest'
import { openPostgresLedger, type PostgresLedger } from '../../src/ledger/postgres/ledger.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'
import { describeLedgerContract } from './ledger-contract.js'

let server: TestPostgres
beforeAll(async () => { server = await startTestPostgres() })
afterAll(async () => { await server?.stop() })

describeLedgerContract('PostgreSQL', async () => {
  const db = await server.freshDatabase()
  const datastore = new MemoryDatastore()
  const open = async (): Promise<PostgresLedger> => await openPostgresLedger({ connectionString: db.url, graceMs: () => 0, datastore })
  let current = await open()
  return {
    ledger: current,
    reopen: async () => {
      await current.close()
      current = await open()
      return current
    },
    close: async () => {
      await current.close()
      await db.drop()
    }
  }
})
