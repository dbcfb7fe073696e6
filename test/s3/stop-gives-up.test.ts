/**
 * A stop that hangs in one of its steps is given up on (cli/serve.ts): the
 * S3 endpoint stops answering (a radosgw of the run's Ceph cluster that only
 * this file uses is SIGSTOPped: its sockets stay open, nothing is answered)
 * while a pin by CID commits its fetched blocks to the bucket. On SIGTERM
 * the `pin fetcher` step waits for that commit, which the deadline of an S3
 * request (--s3-timeout, 60 s here: the default 10 s would end the commit,
 * and the step, within the stop's bound) ends only after a minute; serve
 * waits --shutdown-timeout + 15 s, logs the step it hangs in and exits 1, as a crash would. A restart on
 * the same data dir, once the endpoint answers again, serves /health and
 * fetches the pin the stop left unfinished.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { frozenS3Fetch, type FrozenS3Fetch } from '../helpers/frozen-s3-fetch.js'
import { tempDir } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

/** --shutdown-timeout, seconds */
const SHUTDOWN_TIMEOUT_S = 1
/** src/app/lifecycle.ts STOP_STEPS_MS */
const STOP_STEPS_S = 15
/** --s3-timeout: longer than the stop's bound, so that the commit is still waiting when it is given up on */
const S3_ARGS = ['--s3-timeout', '60']

let setup: FrozenS3Fetch

beforeAll(async () => { setup = await frozenS3Fetch(`g${process.pid}`) })
afterAll(async () => { await setup?.stop() })

it('gives up on a stop whose pin fetcher waits on an S3 endpoint that stopped answering, exits 1, and recovers at the next start', async () => {
  const dataDir = tempDir()
  const pind = await setup.start(dataDir, SHUTDOWN_TIMEOUT_S, S3_ARGS)
  // one raw block: the fetch checks the bucket for it (S3 answers), asks the origin, then commits it
  const { token, requestid, asked } = await setup.pin(pind, dataDir, `0x${'a1'.repeat(20)}`, 200_000)

  // the origin reads the block (slowly): the endpoint stops answering before the commit sends it
  await waitFor(() => asked() ? true : undefined, 'the fetch to ask the origin for the block')
  setup.gateway.pause()
  await waitFor(() => setup.gateway.unreadRequest() ? true : undefined, 'the commit to send its block to the stopped endpoint')

  const t0 = Date.now()
  const code = await pind.stop('SIGTERM')
  const seconds = (Date.now() - t0) / 1000
  expect(code).toBe(1)
  expect(seconds).toBeGreaterThanOrEqual(SHUTDOWN_TIMEOUT_S + STOP_STEPS_S - 1)
  expect(seconds).toBeLessThan(SHUTDOWN_TIMEOUT_S + STOP_STEPS_S + 10)
  const lines = pind.stderr().split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as Record<string, unknown>)
  expect(lines).toContainEqual(expect.objectContaining({ level: 'error', msg: 'stopping took too long: exiting without finishing it', step: 'pin fetcher', waitedSeconds: SHUTDOWN_TIMEOUT_S + STOP_STEPS_S }))
  expect(lines.some(l => l.msg === 'stopped')).toBe(false)

  // the endpoint answers again: the same data dir starts, serves /health, and the pin's fetch resumes
  setup.gateway.resume()
  const again = await setup.start(dataDir, SHUTDOWN_TIMEOUT_S)
  expect((await fetch(`${again.url}/health`)).status).toBe(200)
  expect((await setup.pinned(again.url, token, requestid)).status).toBe('pinned')
  expect(await again.stop()).toBe(0)
})
