/**
 * The ledger's schema version (src/ledger/lmdb/open.ts) on real LMDB: this pind
 * writes compact records (src/ledger/lmdb/stored.ts) that a pind knowing only
 * version 1 would misread, and keeps x402 payments where a pind knowing only
 * version 2 would not look, so it marks every ledger it opens version 3, and
 * it refuses a version it does not know without touching it.
 */
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { LEDGER_SCHEMA_VERSION, LedgerSchemaError, openLedgerEnv, type LedgerEnv } from '../../../src/ledger/lmdb/open.js'
import { tempDir } from '../../helpers/pind.js'

const open: LedgerEnv[] = []
afterEach(async () => { for (const e of open.splice(0)) await e.close() })

async function openAt (path: string): Promise<LedgerEnv> {
  const env = await openLedgerEnv(path)
  open.push(env)
  return env
}

async function closeAll (): Promise<void> { for (const e of open.splice(0)) await e.close() }

describe('ledger schema version', () => {
  it('is 5 for a new ledger', async () => {
    expect(LEDGER_SCHEMA_VERSION).toBe(5)
    const env = await openAt(join(tempDir(), 'ledger.mdb'))
    expect(env.fact('schemaVersion')).toBe(5)
  })

  it.each([1, 2, 3, 4])('marks a version %i ledger version 5 when it opens it, so an earlier pind refuses it instead of misreading compact records or missing payments, archived pins and the marks of moved payments', async (old) => {
    const path = join(tempDir(), 'ledger.mdb')
    const first = await openAt(path)
    await first.setFact('schemaVersion', old)
    await closeAll()
    const env = await openAt(path)
    expect(env.fact('schemaVersion')).toBe(5)
    await closeAll()
    // and it stays so across opens
    expect((await openAt(path)).fact('schemaVersion')).toBe(5)
  })

  it('refuses a version it does not know, and leaves it as it is', async () => {
    const path = join(tempDir(), 'ledger.mdb')
    await (await openAt(path)).setFact('schemaVersion', 6)
    await closeAll()
    await expect(openLedgerEnv(path)).rejects.toThrow(LedgerSchemaError)
    await expect(openLedgerEnv(path)).rejects.toThrow(/has schema version 6; this pind understands 1, 2, 3, 4 and 5/)
    // the refusal wrote nothing: a pind that knows version 6 would still find it
    const first = await openAt(path).catch(() => undefined)
    expect(first).toBeUndefined()
  })
})
