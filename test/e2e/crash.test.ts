/**
 * The crash test (scripts/crash-test.mjs) at a small size against the packaged
 * binary: concurrent paid uploads and pins by CID, kill -9 at a random moment,
 * restart; every acknowledged write hash-checks, no pin is unpaid, gc frees
 * exactly the orphans. Blocks on disk, or (vitest project s3) in a bucket of a
 * real Ceph RADOS Gateway. The full size runs from the script.
 */
import { describe, expect, it } from 'vitest'
import { runCrashTest } from '../../scripts/crash-test.mjs'
import { blockstoreUnderTest } from '../helpers/backend.js'

describe('crash safety', () => {
  it('survives kill -9 during concurrent paid writes, repeatedly', async () => {
    const lines: string[] = []
    const r = await runCrashTest({ rounds: 3, concurrency: 8, log: (l) => { lines.push(l) }, blockstore: await blockstoreUnderTest() })
    expect(r.rounds).toBe(3)
    expect(lines.length).toBe(3)
    for (const l of lines) expect(l).toMatch(/all paid.*all referenced/)
  }, 300_000)
})
