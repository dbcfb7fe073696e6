/**
 * The soak (scripts/soak.mjs) with two front ends sharing a PostgreSQL ledger
 * and a bucket of the run's Ceph RADOS Gateway, at a small size against the
 * bundle: 2 paying clients (one on each front end) and 1 asking for
 * quotes for 30 s, the first front end stopped (SIGTERM) and started again
 * midway while the second serves on. Every acknowledged write reads back byte
 * for byte through each front end (or is gone, if its client deleted it), every
 * payer's balance change equals what the ledger charged, no request failed.
 */
import { describe, expect, it } from 'vitest'
import { runSoak } from '../../scripts/soak.mjs'
import { blockstoreUnderTest } from '../helpers/backend.js'
import { startTestPostgres } from '../helpers/postgres.js'

describe('soak, two front ends', () => {
  it('keeps every acknowledged write and every payment straight through a restart of one under mixed paid load spread over both', async () => {
    const db = await startTestPostgres()
    const lines: string[] = []
    try {
      const blockstore = await blockstoreUnderTest('s3')
      const s = await runSoak({ minutes: 0.5, clients: 2, quoteClients: 1, restartAt: 0.5, sampleMs: 2000, idleSeconds: 2, gcEverySeconds: 10, bundle: true, frontEnds: 2, database: (await db.freshDatabase()).url, blockstore, log: (l) => { lines.push(l) } })
        .catch((err: Error) => { throw new Error(`${err.message}\n${lines.join('\n')}`, { cause: err }) })
      const report = lines.join('\n')
      expect(s.restart?.exit, report).toBe(0)
      expect(s.paidWrites, report).toBeGreaterThan(0)
      for (const op of ['upload', 'read', 'list', 'quote']) expect(s.ops[op]?.n ?? 0, `${op}\n${report}`).toBeGreaterThan(0)
      expect(s.errors, s.errorSamples.join('\n')).toBe(0)
      expect(s.http5xx).toBe(0)
      expect(s.writes.ok, s.writes.failures.join('\n')).toBe(true)
      expect(s.writes.verified).toBe(s.writes.live)
      expect(s.writes.deletedGone).toBe(s.writes.deleted)
      expect(s.money.ok, s.money.mismatches.join('\n')).toBe(true)
      expect(s.money.reconciled).toBe(2)
      expect(s.money.chainDelta).toBe(s.money.charged)
      expect(await blockstore.count('')).toBeGreaterThan(0)
    } finally {
      await db.stop()
    }
  }, 300_000)
})
