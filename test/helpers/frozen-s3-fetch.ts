/**
 * What the tests of a pin fetch meeting an S3 endpoint that stops answering
 * share (test/s3/stop-*.test.ts): serve on blocks in a bucket behind a
 * gateway only that file uses (./stopped-gateway.ts), an origin peer whose
 * every block read waits a while (so the fetch is seen asking before its
 * block arrives), a pin by CID under an unpaid-pins token, and the wait for
 * that pin to be fetched after a restart.
 */
import { startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { newBucket, s3 } from './backend.js'
import { runPind, startPind, type PindProcess } from './pind.js'
import { waitFor } from './ports.js'
import { stoppableGateway, type StoppableGateway } from './stopped-gateway.js'

export interface FrozenS3Fetch {
  gateway: StoppableGateway
  origin: Peer
  /** serve on the bucket, stopping with --shutdown-timeout `shutdownTimeoutS`; `args`: more settings */
  start(dataDir: string, shutdownTimeoutS: number, args?: string[]): Promise<PindProcess>
  /**
   * Pins `bytes` of random content from the origin under a fresh unpaid-pins
   * token for `owner`; `asked()` is true once the origin was asked for the root.
   */
  pin(pind: PindProcess, dataDir: string, owner: string, bytes: number): Promise<{ token: string, requestid: string, asked: () => boolean }>
  /** waits until the pin is pinned (after a restart) */
  pinned(url: string, token: string, requestid: string): Promise<{ status: string }>
  /** every serve started, the origin and the gateway, by pid */
  stop(): Promise<void>
}

export async function frozenS3Fetch (name: string): Promise<FrozenS3Fetch> {
  const gateway = await stoppableGateway(name)
  let bucket: string
  let origin: Peer
  try {
    bucket = await newBucket()
    origin = await startPeer({ readDelayMs: 1500 })
  } catch (err) {
    await gateway.stop()
    throw err
  }
  const running: PindProcess[] = []
  return {
    gateway,
    origin,
    start: async (dataDir, shutdownTimeoutS, more = []) => {
      const p = await startPind({
        dataDir,
        args: ['--blockstore', 's3', '--s3-endpoint', gateway.endpoint, '--s3-bucket', bucket, '--s3-force-path-style',
          '--shutdown-timeout', String(shutdownTimeoutS), '--public-url', 'http://pind.test', ...more],
        env: { PIND_S3_ACCESS_KEY_ID: s3().accessKeyId, PIND_S3_SECRET_ACCESS_KEY: s3().secretAccessKey, PIND_LOG_LEVEL: 'info' }
      })
      running.push(p)
      return p
    },
    pin: async (pind, dataDir, owner, bytes) => {
      const minted = await runPind(['keys', 'mint', '--owner', owner, '--unpaid-pins', '--json', '--data-dir', dataDir])
      if (minted.code !== 0) throw new Error(`keys mint: ${minted.err}`)
      const token = JSON.parse(minted.out).token as string
      const { cid } = await origin.addRandom(bytes)
      let asked = false
      const store = origin.helia.blockstore
      const get = store.get.bind(store)
      store.get = (c, options) => { if (c.toString() === cid) asked = true; return get(c, options) }
      const created = await fetch(`${pind.url}/pins`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-pin-duration-months': '1' },
        body: JSON.stringify({ cid, origins: origin.multiaddrs() })
      })
      if (created.status !== 202) throw new Error(`POST /pins: ${created.status} ${await created.text()}`)
      const { requestid } = await created.json() as { requestid: string }
      return { token, requestid, asked: () => asked }
    },
    pinned: async (url, token, requestid) => await waitFor(async () => {
      const s = await (await fetch(`${url}/pins/${requestid}`, { headers: { authorization: `Bearer ${token}` } })).json() as { status: string }
      return s.status === 'pinned' ? s : undefined
    }, 'the pin to be fetched after the restart', 60_000),
    stop: async () => {
      gateway.resume()
      for (const p of running) await p.stop('SIGKILL').catch(() => {})
      await origin.stop().catch(() => {})
      await gateway.stop()
    }
  }
}
