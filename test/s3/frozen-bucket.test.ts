/**
 * The S3 endpoint stops answering without going away: a radosgw of the run's
 * Ceph cluster that only this file uses is SIGSTOPped (its sockets stay open
 * and take requests; nothing is answered) and SIGCONTed later. Every request
 * to the bucket has a deadline (--s3-timeout), and /health and /ready answer
 * from the last known state of their checks, so meanwhile:
 * - a paid upload whose body was streaming when the bucket froze answers 503
 *   with Retry-After, and its payment is not used; once the bucket is known
 *   down, the next one answers 503 before its payment is looked at;
 * - a read of a block that is not cached answers 503/504 with Retry-After;
 * - /health and /ready answer within seconds (they took 20 s and more when
 *   they waited on the bucket), then name the failing check;
 * - an upload whose payment settled just as the bucket froze: its blocks went
 *   to the bucket as its body arrived, so it is pinned at once (201); staged
 *   (--upload-writes staged), it answers 503 that says so (not a dropped
 *   connection), and is pinned once the bucket answers.
 * After SIGCONT pind recovers by itself, and every payment moved has its pin.
 * Run with each --upload-writes mode S3 offers: auto (direct) and staged.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { newBucket, s3 } from '../helpers/backend.js'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { startRpcProxy, type RpcProxy } from '../helpers/rpc-proxy.js'
import { stoppableGateway, type StoppableGateway } from '../helpers/stopped-gateway.js'

const MiB = 1024 * 1024
/** /health and /ready answer well within this while the bucket is frozen (waiting on it took > 20 s) */
const HEALTH_WITHIN_MS = 5_000

let chain: DevChain
let gateway: StoppableGateway
let rpc: RpcProxy
let pind: PindProcess
const env = (): Record<string, string> => ({ PIND_S3_ACCESS_KEY_ID: s3().accessKeyId, PIND_S3_SECRET_ACCESS_KEY: s3().secretAccessKey })

beforeAll(async () => {
  chain = await startDevChain({ payers: 6 })
  gateway = await stoppableGateway(`h${process.pid}`)
  rpc = await startRpcProxy(chain.rpcUrl)
})

afterAll(async () => {
  await pind?.stop('SIGKILL')
  await gateway?.stop() // SIGCONT first, then stopped by its pid
  await rpc?.close()
  await chain?.stop()
})

/** a serve on a fresh bucket of the stoppable gateway, paid uploads written as `writes` says */
async function serve (writes: 'auto' | 'staged'): Promise<PindProcess> {
  const bucket = await newBucket()
  const { args, env: chainEnv } = chainArgs(chain)
  const viaProxy = args.map(a => a === chain.rpcUrl ? rpc.url : a)
  return await startPind({
    args: [...viaProxy, '--blockstore', 's3', '--s3-endpoint', gateway.endpoint, '--s3-bucket', bucket, '--s3-force-path-style', '--rate-limit-unpaid', '0', '--upload-writes', writes],
    env: { ...chainEnv, ...env(), PIND_LOG_LEVEL: 'info' }
  })
}

/** GET `path`, which must answer within HEALTH_WITHIN_MS: its status and body */
async function quick (path: string): Promise<{ status: number, body: any }> {
  const t0 = Date.now()
  const r = await fetch(`${pind.url}${path}`, { signal: AbortSignal.timeout(HEALTH_WITHIN_MS) }).catch((err: Error) => {
    throw err.name === 'TimeoutError' ? new Error(`${path} did not answer within ${HEALTH_WITHIN_MS} ms`) : err
  })
  const body = await r.json()
  expect(Date.now() - t0, `${path} answered in ${Date.now() - t0} ms`).toBeLessThan(HEALTH_WITHIN_MS)
  return { status: r.status, body }
}

function expect503 (r: { status: number, headers: Headers }, body: any, what: string): void {
  expect(r.status, `${what}: ${JSON.stringify(body)}`).toBe(503)
  expect(Number(r.headers.get('retry-after')), what).toBeGreaterThan(0)
  expect(body.error.reason, what).toBe('SERVICE_UNAVAILABLE')
}

it.each([['auto', 0], ['staged', 3]] as const)('answers 503/504 with Retry-After while the bucket is frozen, /health and /ready at once, charges nobody without a pin, and recovers after SIGCONT (--upload-writes %s)', async (writes, offset) => {
  await pind?.stop('SIGKILL')
  pind = await serve(writes)
  const [a, b, c] = chain.payers.slice(offset, offset + 3) as [DevChain['payers'][0], DevChain['payers'][0], DevChain['payers'][0]]
  const before = await Promise.all([a, b, c].map(async p => await usdcBalance(chain, p.address)))

  // before the freeze: an upload is pinned and read back from the bucket (no read cache)
  const first = await payingFetch(chain, a.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(300_000)) })
  const pinned = await first.json() as any
  expect(first.status, JSON.stringify(pinned)).toBe(201)
  expect((await fetch(`${pind.url}/ipfs/${pinned.cid as string}`)).status).toBe(200)
  expect((await quick('/health')).status).toBe(200)

  // the bucket freezes as a paid upload's body starts streaming (its payment is verified by then)
  const pausing: typeof fetch = async (input, init) => {
    const headers = input instanceof Request ? input.headers : new Headers(init?.headers)
    if (headers.get('payment-signature') != null) gateway.pause()
    return await fetch(input, init)
  }
  const frozenUpload = payingFetch(chain, b.privateKey, pausing)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(4 * MiB)) })
  frozenUpload.catch(() => {}) // awaited below; a failure before that must not be an unhandled rejection
  await waitFor(() => gateway.unreadRequest() ? true : undefined, 'a request to the frozen bucket')
  // meanwhile, with the bucket silent and not known down yet: /health and /ready answer at once (past the
  // second for which a passed blockstore check is reused: they check again), a read 503/504
  await new Promise(resolve => setTimeout(resolve, 1100))
  const [health, ready] = await Promise.all([quick('/health'), quick('/ready')])
  expect([200, 503]).toContain(health.status)
  expect([200, 503]).toContain(ready.status)
  const read = await fetch(`${pind.url}/ipfs/${pinned.cid as string}`)
  expect([503, 504], JSON.stringify(await read.clone().text())).toContain(read.status)
  expect(Number(read.headers.get('retry-after'))).toBeGreaterThan(0)
  await read.arrayBuffer()
  // the paid upload answers 503, not a dropped connection, and its payment was not used
  const frozen = await frozenUpload
  const frozenBody = await frozen.json() as any
  expect503(frozen, frozenBody, 'the upload the bucket froze under')
  expect(frozenBody.error.details).toMatch(/payment was not used/)

  // the bucket is known down now: /health and /ready name it, paid writes answer 503 before any payment
  const down = await quick('/health')
  expect(down.status).toBe(503)
  expect(down.body.checks.blockstore).toEqual({ ok: false, error: 'the S3 bucket does not take writes' })
  expect(down.body.checks.ledger.ok).toBe(true)
  const notReady = await quick('/ready')
  expect(notReady.status).toBe(503)
  expect(notReady.body.checks.blockstore.ok).toBe(false)
  const refused = await payingFetch(chain, b.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(100_000)) })
  expect503(refused, await refused.json(), 'an upload while the bucket is known down')
  const again = await fetch(`${pind.url}/ipfs/${pinned.cid as string}`)
  expect([503, 504]).toContain(again.status)
  expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(0)
  await again.arrayBuffer()
  expect(await usdcBalance(chain, b.address)).toBe(before[1]) // never charged
  expect(pind.stderr()).toMatch(/S3 bucket unreachable/)

  // SIGCONT: pind finds the bucket again by itself
  gateway.resume()
  await waitFor(async () => (await quick('/health')).status === 200 ? true : undefined, '/health 200 after SIGCONT', 30_000)
  expect((await quick('/ready')).status).toBe(200)
  expect(pind.stderr()).toMatch(/S3 bucket reachable again/)

  // the bucket freezes the moment a payment settles. Staged, the commit meets it, and the answer says so;
  // written as its body arrived, every block is in the bucket already: the pin is recorded at once
  const settling = rpc.onSend(() => { gateway.pause() })
  const late = await payingFetch(chain, c.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(2 * MiB + 5000)) })
  await settling
  const lateBody = await late.json() as any
  if (writes === 'staged') {
    expect503(late, lateBody, 'the upload whose payment settled as the bucket froze')
    expect(lateBody.error.details).toMatch(/payment was settled/)
  } else {
    expect(late.status, JSON.stringify(lateBody)).toBe(201)
    expect(lateBody.status).toBe('pinned')
  }
  gateway.resume()

  // after SIGCONT: uploads and reads work, the settled upload is pinned, every payment moved has its pin
  await waitFor(async () => (await quick('/health')).status === 200 ? true : undefined, '/health 200 after the second SIGCONT', 30_000)
  const after = await payingFetch(chain, b.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(200_000)) })
  expect(after.status, JSON.stringify(await after.clone().json())).toBe(201)
  expect((await fetch(`${pind.url}/ipfs/${pinned.cid as string}`)).status).toBe(200)
  await waitFor(async () => {
    const r = await runPind(['settlements', 'list', '--json', '--data-dir', pind.dataDir], { env: env() })
    return r.code === 0 && JSON.parse(r.out).notes.length === 0 ? true : undefined
  }, 'the settled upload to be recorded', 60_000)
  const exported = await runPind(['export-ledger', '--records', 'pins', '--data-dir', pind.dataDir], { env: env() })
  expect(exported.code, exported.err).toBe(0)
  const pins = exported.out.trim().split('\n').map(l => JSON.parse(l)).filter(l => l.type === 'pin')
  for (const [i, p] of [a, b, c].entries()) {
    const paid = before[i]! - await usdcBalance(chain, p.address)
    const recorded = pins.filter(x => x.payer === p.address.toLowerCase()).reduce((sum, x) => sum + BigInt(x.amount), 0n)
    expect(recorded, `payer ${i}`).toBe(paid)
    expect(paid > 0n, `payer ${i} paid for what was pinned`).toBe(true)
  }
}, 300_000)
