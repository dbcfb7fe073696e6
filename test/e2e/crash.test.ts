/**
 * The crash test (scripts/crash-test.mjs) at a small size against the packaged
 * binary: concurrent paid uploads and pins by CID, kill -9 at a random moment,
 * restart; every acknowledged write hash-checks, no pin is unpaid, gc frees
 * exactly the orphans. Blocks on disk, or (vitest project s3) in a bucket of a
 * real Ceph RADOS Gateway; there also with two front ends (the bundle) sharing
 * a PostgreSQL ledger and the bucket, one of them killed each round, checked
 * through the other. The full size runs from the script.
 */
import { describe, expect, it } from 'vitest'
import { runCrashTest } from '../../scripts/crash-test.mjs'
import { BLOCKSTORE, blockstoreUnderTest } from '../helpers/backend.js'
import { startTestPostgres } from '../helpers/postgres.js'

describe('crash safety', () => {
  it('survives kill -9 during concurrent paid writes, repeatedly', async () => {
    const lines: string[] = []
    const r = await runCrashTest({ rounds: 3, concurrency: 8, log: (l) => { lines.push(l) }, blockstore: await blockstoreUnderTest() })
    expect(r.rounds).toBe(3)
    expect(lines.length).toBe(3)
    for (const l of lines) expect(l).toMatch(/all paid.*all referenced/)
  }, 300_000)

  it.runIf(BLOCKSTORE === 's3')('survives kill -9 of one of two front ends on PostgreSQL, each in turn, the other serving', async () => {
    const db = await startTestPostgres()
    try {
      const lines: string[] = []
      const r = await runCrashTest({ rounds: 2, concurrency: 8, bundle: true, frontEnds: 2, database: (await db.freshDatabase()).url, log: (l) => { lines.push(l) }, blockstore: await blockstoreUnderTest('s3') })
      expect(r.rounds).toBe(2)
      expect(lines.map(l => /killed front end (\d) of 2/.exec(l)?.[1])).toEqual(['1', '2'])
      for (const l of lines) expect(l).toMatch(/all paid.*all referenced/)
    } finally {
      await db.stop()
    }
  }, 300_000)
})
