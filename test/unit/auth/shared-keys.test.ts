/**
 * The signing keys in a ledger several front ends share (src/auth/key-source.ts
 * over a real PostgreSQL ledger): a token one front end issues verifies on
 * another, and a rotation or retirement on one reaches the other at its next
 * check.
 */
import { MemoryDatastore } from 'datastore-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KeyStore } from '../../../src/auth/keystore.js'
import { ledgerKeySource } from '../../../src/auth/key-source.js'
import { TokenService } from '../../../src/auth/tokens.js'
import { openPostgresLedger, type PostgresLedger } from '../../../src/ledger/postgres/ledger.js'
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js'

let server: TestPostgres
beforeAll(async () => { server = await startTestPostgres() })
afterAll(async () => { await server?.stop() })

const OWNER = '0x' + 'a1'.repeat(20)

describe('signing keys shared through the ledger', () => {
  it('a token issued by one front end verifies on another; rotation and retirement reach the other at its next check', async () => {
    const db = await server.freshDatabase()
    const open = async (): Promise<PostgresLedger> => await openPostgresLedger({ connectionString: db.url, graceMs: () => 0, datastore: new MemoryDatastore() })
    const [a, b] = await Promise.all([open(), open()])
    try {
      // checked at every refresh: what the interval bounds in serve (1 s) is not what this test is about
      const ksA = await KeyStore.open(ledgerKeySource(a.signingKeys, 'the ledger'), { checkIntervalMs: 0 })
      const ksB = await KeyStore.open(ledgerKeySource(b.signingKeys, 'the ledger'), { checkIntervalMs: 0 })
      // the second found the key the first created: one key, not one per front end
      expect(ksB.list().map(k => k.kid)).toEqual(ksA.list().map(k => k.kid))
      expect(ksA.list()).toHaveLength(1)
      const tokens = (ks: KeyStore): TokenService => new TokenService({ keystore: ks, issuer: 'pind', audience: 'pind', ttlSeconds: 3600, isRevoked: async () => false })
      const issued = await tokens(ksA).issue(OWNER)
      expect(await tokens(ksB).verify(issued.token)).toMatchObject({ owner: OWNER, kid: ksA.list()[0]!.kid })

      const first = ksA.list()[0]!.kid
      const rotated = await ksA.rotate()
      await ksB.refresh()
      expect(ksB.list().map(k => k.kid)).toEqual([first, rotated.kid])
      // the other front end now signs with the new key, and the first verifies it
      const second = await tokens(ksB).issue(OWNER)
      expect(await tokens(ksA).verify(second.token)).toMatchObject({ owner: OWNER, kid: rotated.kid })

      // retired on one: the other refuses its tokens too
      await ksA.retire(first)
      await ksB.refresh()
      expect(ksB.info(first)?.status).toBe('retired')
      await expect(tokens(ksB).verify(issued.token)).rejects.toThrow()
    } finally {
      await a.close()
      await b.close()
      await db.drop()
    }
  })
})
