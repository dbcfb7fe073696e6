/** (a file of its own: checks' outcomes are kept per check name in the module, which other tests leave behind) */
import { describe, expect, it } from 'vitest'
import { checkHealth } from '../../../src/service/health/health.js'

describe('health checks, reused', () => {
  it('reuses a passed ledger read for ledgerCheckCacheMs, and never a failed one', async () => {
    let reads = 0
    const deps = { probeBlockstore: async () => {}, libp2pStatus: () => 'started', startedAt: Date.now(), ledgerCheckCacheMs: 60_000 }
    const failing = { ...deps, readLedger: async () => { reads++; throw new Error('MDB_CORRUPTED') } }
    expect((await checkHealth(failing)).checks.ledger).toEqual({ ok: false, error: 'the ledger could not be read' })
    expect((await checkHealth(failing)).checks.ledger?.ok).toBe(false)
    expect(reads).toBe(2)
    const passing = { ...deps, readLedger: async () => { reads++; return 1 } }
    expect((await checkHealth(passing)).checks.ledger).toEqual({ ok: true })
    expect((await checkHealth(passing)).checks.ledger).toEqual({ ok: true })
    expect(reads).toBe(3)
  })
})
