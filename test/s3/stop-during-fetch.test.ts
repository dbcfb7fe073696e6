/**
 * A pin fetch that is checking the node's own block store for a block when
 * serve stops is aborted with the rest of the fetch: the S3 endpoint stopped
 * answering (a radosgw of the run's Ceph cluster that only this file uses is
 * SIGSTOPped) while a pin by CID was being fetched, and the check of the
 * bucket for its next block waits on it. SIGTERM aborts that check, so the
 * `pin fetcher` step ends at once and serve exits 0 well within the stop's
 * bound, instead of waiting out S3's timeouts and retries (about a minute)
 * and being given up on (exit 1). The next start fetches the pin.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { frozenS3Fetch, type FrozenS3Fetch } from '../helpers/frozen-s3-fetch.js'
import { tempDir } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

let setup: FrozenS3Fetch

beforeAll(async () => { setup = await frozenS3Fetch(`f${process.pid}`) })
afterAll(async () => { await setup?.stop() })

it('aborts a fetch waiting on an S3 endpoint that stopped answering, and exits 0 at once', async () => {
  const dataDir = tempDir()
  const pind = await setup.start(dataDir, 1)
  // a root and its leaves: the root is checked for in the bucket (S3 answers) and asked of the origin;
  // each leaf is checked for in the bucket once the root has arrived
  const { token, requestid, asked } = await setup.pin(pind, dataDir, `0x${'b2'.repeat(20)}`, 2_500_000)

  // the origin reads the root (slowly): the endpoint stops answering before the leaves are checked for
  await waitFor(() => asked() ? true : undefined, 'the fetch to ask the origin for the root')
  setup.gateway.pause()
  await waitFor(() => setup.gateway.unreadRequest() ? true : undefined, 'the fetch to check the stopped endpoint for a leaf')

  const t0 = Date.now()
  const code = await pind.stop('SIGTERM')
  const seconds = (Date.now() - t0) / 1000
  expect(code, pind.stderr().slice(-3000)).toBe(0)
  expect(seconds).toBeLessThan(5)
  const lines = pind.stderr().split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as Record<string, unknown>)
  expect(lines.filter(l => l.level === 'error')).toEqual([])
  expect(lines.some(l => l.msg === 'stopped')).toBe(true)

  // the endpoint answers again: the next start fetches the pin
  setup.gateway.resume()
  const again = await setup.start(dataDir, 1)
  expect((await setup.pinned(again.url, token, requestid)).status).toBe('pinned')
  expect(await again.stop()).toBe(0)
})
