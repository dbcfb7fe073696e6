/**
 * The pin lifecycle on real data dirs: paid renewal with @x402/fetch, expiry
 * swept by serve, and `pind gc` (dry run, then for real, through the running
 * serve's admin socket and on a stopped data dir) after unpin, expiry and a
 * settle failure, with blocks shared between owners and orphaned block files.
 * Time passing is simulated by moving a pin's pinned_until into the past in
 * the ledger (LMDB is safe to write from a second process).
 */
import { createHash, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { FsBlockstore } from 'blockstore-fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, transferUsdc, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid } from '../../scripts/peer/index.mjs'
import { openLedgerEnv, type LedgerEnv } from '../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../src/ledger/lmdb/pins.js'
import { chainArgs, payingFetch, signChallenge, uploadChallenge, uploadForm } from '../helpers/paying-client.js'
import { runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'
import { Agent, request } from 'undici'

let chain: DevChain
let pind: PindProcess
let dataDir: string
let env: LedgerEnv
let ledger: PinLedger
let metricsPort = 0

interface Uploaded { requestid: string, cid: string, dag_size: number, token: string, bytes: Buffer, pinned_until: string }

async function upload (payer: number, bytes: Buffer): Promise<Uploaded> {
  const r = await payingFetch(chain, chain.payers[payer]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
  expect(r.status).toBe(201)
  const body = await r.json() as any
  return { ...body, token: r.headers.get('x-wallet-auth-token') as string, bytes }
}

const get = async (u: Uploaded, path = ''): Promise<Response> =>
  await fetch(`${pind.url}/pins/${u.requestid}${path}`, { headers: { authorization: `Bearer ${u.token}` } })
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

async function expire (requestid: string): Promise<void> {
  await ledger.renew(requestid, 0, undefined, () => new Date(Date.now() - 1000))
}

beforeAll(async () => {
  chain = await startDevChain({ payers: 3 })
  const { args, env: e } = chainArgs(chain)
  dataDir = tempDir()
  metricsPort = await freePort()
  pind = await startPind({ dataDir, args: [...args, '--expiry-grace', '0', '--expiry-sweep-interval', '1s', '--metrics-listen', `127.0.0.1:${metricsPort}`], env: { ...e, PIND_LOG_LEVEL: 'info' } })
  env = await openLedgerEnv(join(dataDir, 'ledger.mdb'))
  ledger = new PinLedger(env)
})

afterAll(async () => {
  await env?.close()
  await pind?.stop()
  await chain?.stop()
})

describe('renewal', () => {
  it('extends a pin when its owner pays again, within the 24-month limit', async () => {
    const u = await upload(0, randomBytes(3000))
    const renew = (months: number, t = u.token): RequestInit => ({ method: 'POST', headers: { authorization: `Bearer ${t}`, 'x-pin-duration-months': String(months) } })
    const unpaid = await fetch(`${pind.url}/pins/${u.requestid}/renew`, renew(2))
    expect(unpaid.status).toBe(402)
    expect((await unpaid.json() as any).price.amount).toBe('1000')

    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/pins/${u.requestid}/renew`, renew(2))
    expect(r.status).toBe(200)
    const s = await r.json() as any
    expect(r.headers.get('payment-response')).toBeTruthy()
    const before = new Date(u.pinned_until)
    const after = new Date(s.info.pinned_until)
    expect(after.getUTCMonth()).toBe((before.getUTCMonth() + 2) % 12)
    expect(s.info.months).toBe('3')

    const tooMany = await fetch(`${pind.url}/pins/${u.requestid}/renew`, renew(22))
    expect(tooMany.status).toBe(400)
    expect((await tooMany.json() as any).error.details).toMatch(/at most 24 months ahead/)
    const other = await upload(1, randomBytes(10))
    expect((await fetch(`${pind.url}/pins/${u.requestid}/renew`, renew(1, other.token))).status).toBe(404)
    expect((await fetch(`${pind.url}/pins/${u.requestid}/renew`, { method: 'POST' })).status).toBe(401)
  })

  it('prices a renewal on the bytes its creation was priced on, not on the deduplicated dag_size', async () => {
    // 20 MB of zeros: one 1 MiB block repeated, so dag_size is ~1 MiB while the file is 20 MB
    const bytes = Buffer.alloc(20_000_000)
    const created = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'x-upload-size': String(bytes.length), 'x-pin-duration-months': '1' } })
    expect(created.status).toBe(201)
    const u = await created.json() as any
    expect(u.dag_size).toBeLessThan(2 * 1024 * 1024)
    expect(u.price.amount).toBe('2000') // 20 MB × 0.10 USD per GB-month, above the 1000 minimum
    const quote = await fetch(`${pind.url}/pins/${u.requestid}/renew`, { method: 'POST', headers: { authorization: `Bearer ${created.headers.get('x-wallet-auth-token') as string}`, 'x-pin-duration-months': '1' } })
    expect(quote.status).toBe(402)
    expect((await quote.json() as any).price.amount).toBe(u.price.amount)
  })
})

describe('expiry and gc', () => {
  it('sweeps expired pins and removes exactly the unreachable blocks, keeping shared ones', async () => {
    const shared = randomBytes(2 * 1024 * 1024 + 7)
    const aShared = await upload(0, shared)
    const bShared = await upload(1, shared)
    expect(bShared.cid).toBe(aShared.cid)
    const aOnly = await upload(0, randomBytes(3 * 1024 * 1024 + 1))
    const bOnly = await upload(1, randomBytes(1024 * 1024 + 5))
    const kept = await upload(1, randomBytes(5000))

    // a settle failure: verified and imported, then the payer's balance is drained before settlement
    const payer = chain.payers[2]!
    const header = await signChallenge(chain, payer.privateKey, await uploadChallenge(pind.url, 1_000_000))
    const boundary = 'drain'
    let release!: () => void
    const gate = new Promise<void>(resolve => { release = resolve })
    const stream = new ReadableStream<Uint8Array>({
      async start (c) {
        c.enqueue(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="x"\r\n\r\n`))
        c.enqueue(randomBytes(500_000))
        await gate
        c.enqueue(randomBytes(400_000))
        c.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`))
        c.close()
      }
    })
    const pending = fetch(`${pind.url}/upload`, { method: 'POST', body: stream, duplex: 'half', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-upload-size': '1000000', 'payment-signature': header } } as RequestInit)
    await waitFor(() => pind.stderr().includes(`"payment":"${payer.address.toLowerCase()}:`) ? true : undefined, 'payment verified')
    await transferUsdc(chain, payer.privateKey, chain.payTo, await usdcBalance(chain, payer.address))
    release()
    const failed = await pending
    expect(failed.status).toBe(402)
    expect((await failed.json() as any).error.reason).toBe('INSUFFICIENT_FUNDS')

    // orphans: block files committed but never recorded (what a crash between the two would leave)
    const bs = new FsBlockstore(join(dataDir, 'blocks'))
    await bs.open()
    let orphanBytes = 0
    for (let i = 0; i < 3; i++) {
      const b = randomBytes(1000 + i)
      await bs.put(rawCid(b), b)
      orphanBytes += b.length
    }
    await bs.close()

    // A unpins the shared file (B still holds it) and its own file; B's own file expires
    expect((await fetch(`${pind.url}/pins/${aShared.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${aShared.token}` } })).status).toBe(202)
    expect((await fetch(`${pind.url}/pins/${aOnly.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${aOnly.token}` } })).status).toBe(202)
    await expire(bOnly.requestid)
    expect((await get(bOnly)).status).toBe(404) // grace 0: gone from the owner API at pinned_until
    await waitFor(() => ledger.get(bOnly.requestid)?.removed?.why === 'expired' ? true : undefined, 'the sweeper to mark the pin expired')
    expect((await fetch(`${pind.url}/ipfs/${bOnly.cid}`)).status).toBe(404)

    const unreachable = aOnly.dag_size + bOnly.dag_size + orphanBytes
    const dry = await runPind(['gc', '--dry-run', '--json', '--data-dir', dataDir])
    expect(dry.code, dry.err).toBe(0)
    expect(dry.err).toMatch(/via the running pind serve/)
    const planned = JSON.parse(dry.out)
    expect(planned).toMatchObject({ dryRun: true, freedBytes: unreachable })
    expect((await fetch(`${pind.url}/ipfs/${aOnly.cid}?format=raw`)).status).toBe(404) // hidden, yet still on disk:
    const stillThere = new FsBlockstore(join(dataDir, 'blocks'))
    await stillThere.open()
    expect(await stillThere.has(rawCid(aOnly.bytes.subarray(0, 1024 * 1024)))).toBe(true)

    const real = await runPind(['gc', '--json', '--data-dir', dataDir])
    expect(real.code, real.err).toBe(0)
    const done = JSON.parse(real.out)
    expect(done).toMatchObject({ dryRun: false, freedBytes: unreachable, removedBlocks: planned.removedBlocks, via: 'serve' })
    expect(await stillThere.has(rawCid(aOnly.bytes.subarray(0, 1024 * 1024)))).toBe(false)
    await stillThere.close()

    // live pins hash-check through the gateway
    for (const u of [bShared, kept]) {
      const body = Buffer.from(await (await fetch(`${pind.url}/ipfs/${u.cid}`)).arrayBuffer())
      expect(sha(body)).toBe(sha(u.bytes))
    }
    // a second run finds nothing more
    const again = JSON.parse((await runPind(['gc', '--json', '--data-dir', dataDir])).out)
    expect(again.removedBlocks).toBe(0)
  })

  it('runs on a stopped data dir too, and says so', async () => {
    const dir = tempDir()
    const p = await startPind({ dataDir: dir })
    await p.stop()
    const r = await runPind(['gc', '--data-dir', dir])
    expect(r.code, r.err).toBe(0)
    expect(r.err).toMatch(/no serve running/)
    expect(r.out).toMatch(/removed 0 of 0 blocks/)
    const missing = await runPind(['gc', '--data-dir', join(dir, 'nope')])
    expect(missing.code).toBe(1)
    expect(missing.err).toMatch(/does not exist/)
  })
})

describe('metrics', () => {
  it('counts requests, payments, pins, queue, blockstore and peers, on the metrics address and the admin socket', async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    const value = (re: RegExp): number => Number(re.exec(text)?.[1] ?? NaN)
    expect(value(/^pind_http_requests_total\{method="POST",route="\/upload",status="201"\} (\d+)/m)).toBeGreaterThanOrEqual(5)
    expect(value(/^pind_payments_total\{event="settled"\} (\d+)/m)).toBeGreaterThanOrEqual(6)
    expect(value(/^pind_payments_total\{event="settle_failed"\} (\d+)/m)).toBe(1)
    expect(value(/^pind_payments_settled_atomic_total (\d+)/m)).toBeGreaterThanOrEqual(6000)
    expect(value(/^pind_pins\{status="pinned"\} (\d+)/m)).toBeGreaterThanOrEqual(2)
    expect(value(/^pind_pins\{status="removed"\} (\d+)/m)).toBeGreaterThanOrEqual(3)
    expect(value(/^pind_fetch_queue_depth (\d+)/m)).toBe(0)
    expect(value(/^pind_blockstore_bytes (\d+)/m)).toBeGreaterThan(2 * 1024 * 1024)
    expect(text).toMatch(/^pind_libp2p_connections \d+/m)
    expect(text).toMatch(/^pind_http_request_duration_seconds_bucket/m)
    expect(text).toMatch(/^pind_process_resident_memory_bytes/m)
    const dispatcher = new Agent({ connect: { socketPath: join(dataDir, 'admin.sock') } })
    try {
      const r = await request('http://pind-admin/metrics', { dispatcher })
      expect(r.statusCode).toBe(200)
      expect(await r.body.text()).toMatch(/^pind_payments_total/m)
    } finally {
      await dispatcher.close()
    }
    // not on the public port
    expect((await fetch(`${pind.url}/metrics`)).status).toBe(404)
  })
})
