/**
 * The S3 endpoint goes away in the middle of paid uploads and comes back: a
 * radosgw of the run's Ceph cluster that only this file uses is killed while
 * three payers upload, then started again. Meanwhile uploads, pins by CID and
 * reads answer 503 (with Retry-After, before any payment is used) and /health
 * names the failing check; afterwards the service recovers by itself, no
 * acknowledged pin is lost, every payment moved has its pin, and the bucket
 * holds no block that no paid pin references. Metrics count the S3 requests
 * and their failures by operation. The read cache serves hot blocks while
 * the bucket is away.
 */
import { createHash, randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid } from '../../scripts/peer/index.mjs'
import { extraGateway, type Gateway } from '../../scripts/s3/index.mjs'
import { bucketKeys, newBucket, s3, S3_PREFIX } from '../helpers/backend.js'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

let chain: DevChain
let gateway: Gateway
let bucket: string
let pind: PindProcess
let metricsUrl: string
const env = (): Record<string, string> => ({ PIND_S3_ACCESS_KEY_ID: s3().accessKeyId, PIND_S3_SECRET_ACCESS_KEY: s3().secretAccessKey })
const s3Args = (b: string): string[] => ['--blockstore', 's3', '--s3-endpoint', gateway.endpoint, '--s3-bucket', b, '--s3-force-path-style']

beforeAll(async () => {
  chain = await startDevChain({ payers: 4 })
  gateway = await extraGateway(s3().dir, `o${process.pid}`)
  bucket = await newBucket()
  const { args, env: chainEnv } = chainArgs(chain)
  const metricsPort = await freePort()
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`
  pind = await startPind({ args: [...args, ...s3Args(bucket), '--metrics-listen', `127.0.0.1:${metricsPort}`, '--rate-limit-unpaid', '0'], env: { ...chainEnv, ...env(), PIND_LOG_LEVEL: 'info' } })
})

afterAll(async () => {
  await pind?.stop()
  await gateway?.start().catch(() => {})
  await gateway?.stop()
  await chain?.stop()
})

interface Outcome { status: number, body: any, retryAfter: string | null, bytes: Uint8Array, at: number }

describe('the S3 endpoint stops in the middle of paid uploads and starts again', () => {
  it('answers 503 meanwhile, loses no acknowledged pin, keeps no unpaid block, and recovers by itself', async () => {
    const payers = chain.payers.slice(0, 3)
    const before = await Promise.all(payers.map(async p => await usdcBalance(chain, p.address)))
    const outcomes: Outcome[][] = payers.map(() => [])
    const tokens: Array<string | undefined> = payers.map(() => undefined)
    let phase: 'before' | 'down' | 'after' = 'before'
    let stopWorkers = false
    let acceptedAfter = 0
    const worker = async (i: number): Promise<void> => {
      const pay = payingFetch(chain, payers[i]!.privateKey)
      while (!stopWorkers) {
        const bytes = randomBytes(1024 * 1024 + 2000 + Math.floor(Math.random() * 100_000)) // two leaves and a root
        const r = await pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
        const body = await r.json() as any
        outcomes[i]!.push({ status: r.status, body, retryAfter: r.headers.get('retry-after'), bytes, at: Date.now() })
        if (r.status === 201) {
          tokens[i] = r.headers.get('x-wallet-auth-token') ?? tokens[i]
          if (phase === 'after') acceptedAfter++
        } else if (r.status === 503) {
          await new Promise(resolve => setTimeout(resolve, 100))
        }
      }
    }
    const workers = Promise.all(payers.map(async (_, i) => { await worker(i) }))
    const all = (): Outcome[] => outcomes.flat()

    // some uploads are acknowledged, then the endpoint goes away mid-stream
    await waitFor(() => all().filter(o => o.status === 201).length >= 3 ? true : undefined, 'three uploads before the outage', 60_000)
    const acknowledgedBefore = all().filter(o => o.status === 201)[0] as Outcome
    await gateway.stop()
    phase = 'down'
    const downAt = Date.now()

    // while it is down: paid writes 503 before any payment is used, reads 503, /health names the check
    await waitFor(() => all().some(o => o.at > downAt && o.status === 503) ? true : undefined, 'an upload answered 503 during the outage', 30_000)
    const health = await fetch(`${pind.url}/health`)
    expect(health.status).toBe(503)
    const report = await health.json() as any
    expect(report.checks.blockstore.ok).toBe(false)
    expect(report.checks.blockstore.error).toBe('the S3 bucket does not take writes')
    expect(report.checks.ledger.ok).toBe(true)
    const read = await fetch(`${pind.url}/ipfs/${acknowledgedBefore.body.cid as string}`)
    expect([503, 504]).toContain(read.status)
    expect(read.headers.get('retry-after')).toBeTruthy()
    expect((await read.json() as any).error.reason).toBe('SERVICE_UNAVAILABLE')
    const pinner = chain.payers[3]!
    const pinnerBefore = await usdcBalance(chain, pinner.address)
    const pin = await payingFetch(chain, pinner.privateKey)(`${pind.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid: acknowledgedBefore.body.cid }) })
    expect(pin.status).toBe(503)
    expect(pin.headers.get('retry-after')).toBeTruthy()
    expect(await usdcBalance(chain, pinner.address)).toBe(pinnerBefore) // never charged

    // it comes back: the service recovers by itself, uploads are acknowledged again
    await gateway.start()
    phase = 'after'
    await waitFor(() => acceptedAfter >= 2 ? true : undefined, 'uploads acknowledged after the endpoint came back', 60_000)
    stopWorkers = true
    await workers
    await waitFor(async () => (await fetch(`${pind.url}/health`)).status === 200 ? true : undefined, '/health 200 again')

    // every answer was 201 or 503; every 503 carries Retry-After and the spec's error shape
    for (const o of all()) {
      expect([201, 503], JSON.stringify(o.body)).toContain(o.status)
      if (o.status === 503) {
        expect(o.retryAfter).toBeTruthy()
        expect(o.body.error.reason).toBe('SERVICE_UNAVAILABLE')
      }
    }
    expect(all().filter(o => o.status === 503).length).toBeGreaterThan(0)

    // no acknowledged pin is lost: each hash-checks through the gateway
    for (const o of all().filter(o => o.status === 201)) {
      const got = Buffer.from(await (await fetch(`${pind.url}/ipfs/${o.body.cid as string}`)).arrayBuffer())
      expect(sha(got)).toBe(sha(o.bytes))
    }
    // an upload whose payment had settled when the store went away (a 503 that says so) is
    // committed and recorded once the store is back: no settlement note is left
    await waitFor(async () => {
      const r = await runPind(['settlements', 'list', '--json', '--data-dir', pind.dataDir], { env: env() })
      return r.code === 0 && JSON.parse(r.out).notes.length === 0 ? true : undefined
    }, 'every settled payment to be recorded', 60_000)

    // every payment moved has its pin: what each payer paid is exactly what the ledger's pins of that payer cost
    const exported = await runPind(['export-ledger', '--records', 'pins', '--data-dir', pind.dataDir], { env: env() })
    expect(exported.code, exported.err).toBe(0)
    const pins = exported.out.trim().split('\n').map(l => JSON.parse(l)).filter(l => l.type === 'pin')
    for (const [i, p] of payers.entries()) {
      const paid = before[i]! - await usdcBalance(chain, p.address)
      const recorded = pins.filter(x => x.payer === p.address.toLowerCase()).reduce((sum, x) => sum + BigInt(x.amount), 0n)
      expect(recorded, `payer ${i}`).toBe(paid)
    }
    for (const x of pins) expect(x.settlement_tx).toBeTruthy()

    // no unpaid block is kept: the bucket holds exactly the blocks the paid pins reference. An upload
    // the outage cut after some of its blocks reached the bucket deletes them once the bucket takes
    // deletes again (tried again with backoff, up to a minute apart)
    const g = await waitFor(async () => {
      const dry = await runPind(['gc', '--dry-run', '--json', '--data-dir', pind.dataDir], { env: env() })
      expect(dry.code, dry.err).toBe(0)
      const r = JSON.parse(dry.out)
      return r.removedBlocks === 0 ? r : undefined
    }, 'the blocks of uploads the outage cut to be deleted', 90_000, 2_000)
    expect(g.scannedBlocks).toBe(g.markedBlocks)
    expect((await bucketKeys(bucket, S3_PREFIX)).length).toBe(g.markedBlocks)

    // metrics: S3 requests by operation, the failures among them, and the bucket up again
    const metrics = await (await fetch(metricsUrl)).text()
    expect(metrics).toMatch(/pind_s3_requests_total\{operation="PutObject",outcome="ok"\} [1-9]/)
    expect(metrics).toMatch(/pind_s3_requests_total\{operation="[A-Za-z]+",outcome="unavailable"\} [1-9]/)
    expect(metrics).toMatch(/pind_s3_request_duration_seconds_count\{operation="GetObject"\} [1-9]/)
    expect(metrics).toMatch(/^pind_s3_up 1$/m)
    // the logs say what happened, and never hold the credentials
    expect(pind.stderr()).toMatch(/S3 bucket unreachable/)
    expect(pind.stderr()).toMatch(/S3 bucket reachable again/)
    expect(pind.stderr()).not.toContain(s3().secretAccessKey)
    expect(pind.stderr()).not.toContain(s3().accessKeyId)
  }, 300_000)

  it('serves hot blocks from the read cache while the bucket is away; others answer 503', async () => {
    const cacheBucket = await newBucket()
    const { args, env: chainEnv } = chainArgs(chain)
    // 4 MiB of cache: the cold file's blocks are evicted (least recently used) by the hot file's
    const cached = await startPind({ args: [...args, ...s3Args(cacheBucket), '--s3-cache-size', '4MiB'], env: { ...chainEnv, ...env() } })
    try {
      const pay = payingFetch(chain, chain.payers[3]!.privateKey)
      const cold = randomBytes(1024 * 1024 + 500_000)
      const hot = randomBytes(3 * 1024 * 1024)
      const cids: string[] = []
      for (const file of [cold, hot]) {
        const r = await pay(`${cached.url}/upload`, { method: 'POST', body: uploadForm(file) })
        expect(r.status).toBe(201)
        cids.push((await r.json() as any).cid)
      }
      const hotCid = cids[1] as string
      expect(sha(Buffer.from(await (await fetch(`${cached.url}/ipfs/${hotCid}`)).arrayBuffer()))).toBe(sha(hot))
      const coldLeaf = rawCid(cold.subarray(0, 1024 * 1024)).toString()
      await gateway.stop()
      try {
        const again = await fetch(`${cached.url}/ipfs/${hotCid}`)
        expect(again.status).toBe(200)
        expect(sha(Buffer.from(await again.arrayBuffer()))).toBe(sha(hot))
        const miss = await fetch(`${cached.url}/ipfs/${coldLeaf}?format=raw`)
        expect(miss.status).toBe(503)
        expect(miss.headers.get('retry-after')).toBeTruthy()
        expect((await pay(`${cached.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(1000)) })).status).toBe(503)
      } finally {
        await gateway.start()
      }
      // and the cold block comes from the bucket again once it answers
      await waitFor(async () => (await fetch(`${cached.url}/ipfs/${coldLeaf}?format=raw`)).status === 200 ? true : undefined, 'the bucket to answer again')
    } finally {
      await cached.stop()
    }
  })
})
