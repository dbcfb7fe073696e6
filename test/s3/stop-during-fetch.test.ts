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
import { startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { newBucket, s3 } from '../helpers/backend.js'
import { runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { stoppableGateway, type StoppableGateway } from '../helpers/stopped-gateway.js'

let origin: Peer
let gateway: StoppableGateway
let bucket: string
const running: PindProcess[] = []

beforeAll(async () => {
  gateway = await stoppableGateway(`f${process.pid}`)
  bucket = await newBucket()
  // every block read waits a while: the fetch is seen asking for the root before it arrives
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
      '--shutdown-timeout', '1', '--public-url', 'http://pind.test'],
    env: { PIND_S3_ACCESS_KEY_ID: s3().accessKeyId, PIND_S3_SECRET_ACCESS_KEY: s3().secretAccessKey, PIND_LOG_LEVEL: 'info' }
  })
  running.push(p)
  return p
}

it('aborts a fetch waiting on an S3 endpoint that stopped answering, and exits 0 at once', async () => {
  const dataDir = tempDir()
  const pind = await start(dataDir)
  const minted = await runPind(['keys', 'mint', '--owner', `0x${'b2'.repeat(20)}`, '--unpaid-pins', '--json', '--data-dir', dataDir])
  expect(minted.code, minted.err).toBe(0)
  const token = JSON.parse(minted.out).token as string

  // a root and its leaves: the root is checked for in the bucket (S3 answers) and asked of the origin;
  // each leaf is checked for in the bucket once the root has arrived
  const { cid } = await origin.addRandom(2_500_000)
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

  // the origin reads the root (slowly): the endpoint stops answering before the leaves are checked for
  await waitFor(() => asked ? true : undefined, 'the fetch to ask the origin for the root')
  gateway.pause()
  await waitFor(() => gateway.unreadRequest() ? true : undefined, 'the fetch to check the stopped endpoint for a leaf')

  const t0 = Date.now()
  const code = await pind.stop('SIGTERM')
  const seconds = (Date.now() - t0) / 1000
  expect(code, pind.stderr().slice(-3000)).toBe(0)
  expect(seconds).toBeLessThan(5)
  const lines = pind.stderr().split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as Record<string, unknown>)
  expect(lines.filter(l => l.level === 'error')).toEqual([])
  expect(lines.some(l => l.msg === 'stopped')).toBe(true)

  // the endpoint answers again: the next start fetches the pin
  gateway.resume()
  const again = await start(dataDir)
  const pinned = await waitFor(async () => {
    const s = await (await fetch(`${again.url}/pins/${requestid}`, { headers: { authorization: `Bearer ${token}` } })).json() as { status: string }
    return s.status === 'pinned' ? s : undefined
  }, 'the pin to be fetched after the restart', 60_000)
  expect(pinned.status).toBe('pinned')
  expect(await again.stop()).toBe(0)
})
