/**
 * A stop that hangs in one of its steps is given up on (cli/serve.ts): the
 * S3 endpoint stops answering (a radosgw of the run's Ceph cluster that only
 * this file uses is SIGSTOPped: its sockets stay open, nothing is answered)
 * while a pin by CID commits its fetched blocks to the bucket. On SIGTERM
 * the `pin fetcher` step waits for that commit, which S3's own timeouts and
 * retries bound only after about a minute; serve waits --shutdown-timeout +
 * 15 s, logs the step it hangs in and exits 1, as a crash would. A restart on
 * the same data dir, once the endpoint answers again, serves /health and
 * fetches the pin the stop left unfinished.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { newBucket, s3 } from '../helpers/backend.js'
import { runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { stoppableGateway, type StoppableGateway } from '../helpers/stopped-gateway.js'

/** --shutdown-timeout, seconds */
const SHUTDOWN_TIMEOUT_S = 1
/** src/stop-steps.ts STOP_STEPS_MS */
const STOP_STEPS_S = 15

let origin: Peer
let gateway: StoppableGateway
let bucket: string
const running: PindProcess[] = []

beforeAll(async () => {
  gateway = await stoppableGateway(`g${process.pid}`)
  bucket = await newBucket()
  // every block read waits a while: the fetch is seen asking before its block arrives
  origin = await startPeer({ readDelayMs: 1500 })
})

afterAll(async () => {
  gateway?.resume()
  for (const p of running) await p.stop('SIGKILL').catch(() => {})
  await origin?.stop().catch(() => {})
  await gateway?.stop()
})

const start = async (dataDir: string): Promise<PindProcess> => {
  const p = await startPind({
    dataDir,
    args: ['--blockstore', 's3', '--s3-endpoint', gateway.endpoint, '--s3-bucket', bucket, '--s3-force-path-style',
      '--shutdown-timeout', String(SHUTDOWN_TIMEOUT_S), '--public-url', 'http://pind.test'],
    env: { PIND_S3_ACCESS_KEY_ID: s3().accessKeyId, PIND_S3_SECRET_ACCESS_KEY: s3().secretAccessKey, PIND_LOG_LEVEL: 'info' }
  })
  running.push(p)
  return p
}

it('gives up on a stop whose pin fetcher waits on an S3 endpoint that stopped answering, exits 1, and recovers at the next start', async () => {
  const dataDir = tempDir()
  const pind = await start(dataDir)
  const minted = await runPind(['keys', 'mint', '--owner', `0x${'a1'.repeat(20)}`, '--unpaid-pins', '--json', '--data-dir', dataDir])
  expect(minted.code, minted.err).toBe(0)
  const token = JSON.parse(minted.out).token as string

  // one raw block: the fetch checks the bucket for it (S3 answers), asks the origin, then commits it
  const { cid } = await origin.addRandom(200_000)
  let asked = false
  const store = origin.helia.blockstore
  const get = store.get.bind(store)
  store.get = (c, options) => { if (c.toString() === cid) asked = true; return get(c, options) }

  const created = await fetch(`${pind.url}/pins`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-pin-duration-months': '1' },
    body: JSON.stringify({ cid, origins: origin.multiaddrs() })
  })
  expect(created.status, await created.clone().text()).toBe(202)
  const { requestid } = await created.json() as { requestid: string }

  // the origin reads the block (slowly): the endpoint stops answering before the commit sends it
  await waitFor(() => asked ? true : undefined, 'the fetch to ask the origin for the block')
  gateway.pause()
  await waitFor(() => gateway.unreadRequest() ? true : undefined, 'the commit to send its block to the stopped endpoint')

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
  gateway.resume()
  const again = await start(dataDir)
  expect((await fetch(`${again.url}/health`)).status).toBe(200)
  const pinned = await waitFor(async () => {
    const s = await (await fetch(`${again.url}/pins/${requestid}`, { headers: { authorization: `Bearer ${token}` } })).json() as { status: string }
    return s.status === 'pinned' ? s : undefined
  }, 'the pin to be fetched after the restart', 60_000)
  expect(pinned.status).toBe('pinned')
  expect(await again.stop()).toBe(0)
})
