/**
 * Paid upload end to end: real anvil chain with an EIP-3009 token, the real
 * pind (bundle) with the embedded facilitator, paid with @x402/fetch; blocks
 * on disk, or (vitest project s3) in a bucket of a real Ceph RADOS Gateway.
 */
import { createHash, randomBytes } from 'node:crypto'
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http'
import { decodeJwt, decodeProtectedHeader } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, transferUsdc, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, signChallenge, uploadChallenge, uploadForm } from '../helpers/paying-client.js'
import { blockstoreUnderTest, type BlockstoreUnderTest } from '../helpers/backend.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { X402SettleResponse } from '../../src/payment/x402-shapes.js'

let chain: DevChain
let pind: PindProcess
let blocks: BlockstoreUnderTest

beforeAll(async () => {
  chain = await startDevChain({ payers: 6 })
  blocks = await blockstoreUnderTest()
  const { args, env } = chainArgs(chain)
  pind = await startPind({ args: [...args, ...blocks.args], env: { ...env, ...blocks.env, PIND_LOG_LEVEL: 'info' } })
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

describe('POST /upload', () => {
  it('answers 402 with a challenge priced on the declared size and duration', async () => {
    const cases: Array<[number, number, bigint]> = [
      [1000, 1, 1000n], // minimum
      [50_000_000, 12, 60_000n], // 0.05 GB × 0.10 USD × 12 = 0.06 USDC
      [100_000_000, 24, 240_000n], // 0.1 GB × 0.10 USD × 24 = 0.24 USDC
      [104_857_600, 7, 73_401n] // 73400.32 rounds up, never down
    ]
    for (const [size, months, want] of cases) {
      const r = await fetch(`${pind.url}/upload`, {
        method: 'POST',
        headers: { 'x-pin-duration-months': String(months), 'x-upload-size': String(size), 'content-type': 'multipart/form-data; boundary=x' },
        body: '--x--\r\n'
      })
      expect(r.status).toBe(402)
      const challenge = decodePaymentRequiredHeader(r.headers.get('payment-required') as string)
      expect(challenge.x402Version).toBe(2)
      const [req] = challenge.accepts
      expect(req).toMatchObject({ scheme: 'exact', network: 'eip155:167000', amount: want.toString(), payTo: chain.payTo, extra: { name: 'USD Coin', version: '2' } })
      expect(req?.asset.toLowerCase()).toBe(chain.usdc.toLowerCase())
      expect(req?.maxTimeoutSeconds).toBeGreaterThanOrEqual(60)
      const body = await r.json() as Record<string, any>
      expect(body.error.reason).toBe('PAYMENT_REQUIRED')
      expect(body.price.amount).toBe(want.toString())
      expect(body.months).toBe(months)
      expect(body.formula).toMatch(/size_GB/)
    }
  })

  it('pins a paid upload: balances move by exactly the price, a token comes back, the bytes are served', async () => {
    const payer = chain.payers[0]!
    const bytes = randomBytes(3 * 1024 * 1024 + 17)
    const before = await usdcBalance(chain, payer.address)
    const payToBefore = await usdcBalance(chain, chain.payTo)
    const pay = payingFetch(chain, payer.privateKey)
    const r = await pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes, 'report.bin'), headers: { 'x-pin-duration-months': '3' } })
    expect(r.status).toBe(201)
    const body = await r.json() as Record<string, any>
    const settle = decodePaymentResponseHeader(r.headers.get('payment-response') as string)
    expect(settle.success).toBe(true)
    // the header @x402/core built is what the OpenAPI document says (X402SettleResponse)
    expect(X402SettleResponse.safeParse(settle).error?.issues ?? []).toEqual([])
    const paid = BigInt(body.price.amount)
    expect(paid).toBe(1000n) // 3 MiB × 3 months is below the minimum
    expect(await usdcBalance(chain, payer.address)).toBe(before - paid)
    expect(await usdcBalance(chain, chain.payTo)).toBe(payToBefore + paid)
    expect(body).toMatchObject({ status: 'pinned', size: bytes.length, months: 3, name: 'report.bin', owner: payer.address.toLowerCase() })
    expect(body.requestid).not.toBe(body.cid)
    // a UUIDv7 carrying its creation time: the ledger's inserts append (issue 18)
    expect(body.requestid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(Math.abs(Number.parseInt((body.requestid as string).replace(/-/g, '').slice(0, 12), 16) - Date.parse(body.created))).toBeLessThan(1000)
    expect(body.cid).toMatch(/^bafy/)
    expect(body.price.transaction).toBe(settle.transaction)
    expect(Date.parse(body.pinned_until) - Date.parse(body.created)).toBeGreaterThan(88 * 86400_000)

    const token = r.headers.get('x-wallet-auth-token') as string
    const claims = decodeJwt(token)
    expect(claims.sub).toBe(payer.address.toLowerCase())
    expect(claims.iss).toBe(pind.url)
    expect(claims.aud).toBe(pind.url)
    expect(typeof claims.jti).toBe('string')
    expect((claims.exp as number) - (claims.iat as number)).toBeGreaterThanOrEqual(86400)
    expect(decodeProtectedHeader(token).kid).toBeTruthy()
    expect(Date.parse(r.headers.get('x-wallet-auth-token-expires') as string)).toBe((claims.exp as number) * 1000)

    const got = await fetch(body.gateway_url)
    expect(got.status).toBe(200)
    expect(sha(new Uint8Array(await got.arrayBuffer()))).toBe(sha(bytes))
    const ranged = await fetch(body.gateway_url, { headers: { range: 'bytes=1048570-1048600' } })
    expect(ranged.status).toBe(206)
    expect(Buffer.from(await ranged.arrayBuffer())).toEqual(bytes.subarray(1048570, 1048601))

    // trustless clients fetch every block of a pinned DAG by its own CID
    const car = await fetch(`${body.gateway_url}?format=car&dag-scope=all`)
    expect(car.status).toBe(200)
    const { CarBlockIterator } = await import('@ipld/car')
    const cids: string[] = []
    for await (const block of await CarBlockIterator.fromBytes(new Uint8Array(await car.arrayBuffer()))) cids.push(block.cid.toString())
    expect(cids.length).toBe(5) // root + 4 leaves of 1 MiB
    const leaf = await fetch(`${pind.url}/ipfs/${cids[4]}?format=raw`)
    expect(leaf.status).toBe(200)
    // content nobody pinned is not served
    const unknown = await fetch(`${pind.url}/ipfs/bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy`)
    expect(unknown.status).toBe(404)
  })

  it('refuses a file over the limit while streaming, even when Content-Length lies (chunked)', async () => {
    const payer = chain.payers[1]!
    const header = await signChallenge(chain, payer.privateKey, await uploadChallenge(pind.url, 1000))
    const before = await usdcBalance(chain, payer.address)
    const storedBefore = await blocks.count(pind.dataDir)
    // declares 1000 bytes, sends 200 KB in a chunked stream
    const big = randomBytes(200_000)
    const boundary = 'pindboundary'
    const head = Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="x"\r\ncontent-type: application/octet-stream\r\n\r\n`)
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
    const body = (): ReadableStream<Uint8Array> => new ReadableStream({
      start (c) { c.enqueue(head); c.enqueue(big); c.enqueue(tail); c.close() }
    })
    const r = await fetch(`${pind.url}/upload`, {
      method: 'POST',
      body: body(),
      duplex: 'half',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-upload-size': '1000', 'payment-signature': header }
    } as RequestInit)
    expect(r.status).toBe(413)
    expect((await r.json() as any).error.reason).toBe('PAYLOAD_TOO_LARGE')
    expect(await usdcBalance(chain, payer.address)).toBe(before)
    expect(await blocks.count(pind.dataDir)).toBe(storedBefore)
  })

  it('refuses a declared size over 100 MB before reading the body', async () => {
    const r = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'x-upload-size': '104857601', 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--\r\n' })
    expect(r.status).toBe(413)
    expect((await r.json() as any).error.reason).toBe('PAYLOAD_TOO_LARGE')
  })

  it('answers 400 for bad duration, non-multipart bodies and misnamed parts', async () => {
    const bad = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'x-pin-duration-months': '25' }, body: 'x' })
    expect(bad.status).toBe(400)
    expect((await bad.json() as any).error.details).toMatch(/1 to 24/)
    const pay = payingFetch(chain, chain.payers[2]!.privateKey)
    const notMultipart = await pay(`${pind.url}/upload`, { method: 'POST', body: 'hello', headers: { 'content-type': 'text/plain' } })
    expect(notMultipart.status).toBe(400)
    expect((await notMultipart.json() as any).error.details).toMatch(/multipart/)
    const form = new FormData()
    form.append('document', new Blob([randomBytes(10)]), 'a')
    const misnamed = await pay(`${pind.url}/upload`, { method: 'POST', body: form })
    expect(misnamed.status).toBe(400)
    expect((await misnamed.json() as any).error.details).toMatch(/"document"/)
    const twoFiles = new FormData()
    twoFiles.append('file', new Blob([randomBytes(10)]), 'a')
    twoFiles.append('file', new Blob([randomBytes(10)]), 'b')
    const two = await pay(`${pind.url}/upload`, { method: 'POST', body: twoFiles })
    expect(two.status).toBe(400)
    expect((await two.json() as any).error.details).toMatch(/more than one "file" part/)
    const withField = new FormData()
    withField.append('note', 'hello')
    withField.append('file', new Blob([randomBytes(10)]), 'a')
    const field = await pay(`${pind.url}/upload`, { method: 'POST', body: withField })
    expect(field.status).toBe(400)
    expect((await field.json() as any).error.details).toMatch(/unexpected form field "note"/)
    const empty = new FormData()
    const none = await pay(`${pind.url}/upload`, { method: 'POST', body: empty })
    expect(none.status).toBe(400)
  })

  it('a replayed payment returns the original pin and never charges twice', async () => {
    const payer = chain.payers[3]!
    const bytes = randomBytes(5000)
    const pay = payingFetch(chain, payer.privateKey)
    const first = await pay(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
    expect(first.status).toBe(201)
    const firstBody = await first.json() as any
    const balanceAfterFirst = await usdcBalance(chain, payer.address)
    // re-send the same signed payment by hand
    const challenge = await fetch(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
    expect(challenge.status).toBe(402)
    const header = await signChallenge(chain, payer.privateKey, challenge)
    const a = await fetch(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'payment-signature': header } })
    expect(a.status).toBe(201)
    const aBody = await a.json() as any
    const b = await fetch(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'payment-signature': header } })
    expect(b.status).toBe(200)
    const bBody = await b.json() as any
    expect(bBody.requestid).toBe(aBody.requestid)
    expect(bBody.replayed).toBe(true)
    expect(b.headers.get('x-wallet-auth-token')).toBeNull()
    expect(aBody.requestid).not.toBe(firstBody.requestid)
    // the same payment on different content is refused
    const other = await fetch(`${pind.url}/upload`, { method: 'POST', body: uploadForm(Uint8Array.from(bytes).reverse()), headers: { 'payment-signature': header } })
    expect(other.status).toBe(402)
    expect(await usdcBalance(chain, payer.address)).toBe(balanceAfterFirst - BigInt(aBody.price.amount))
  })

  it('refuses a payment that is too small for the request', async () => {
    const payer = chain.payers[4]!
    // a challenge for a small upload, used for a large declared size
    const header = await signChallenge(chain, payer.privateKey, await uploadChallenge(pind.url, 10))
    const r = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'x-upload-size': '90000000', 'x-pin-duration-months': '24', 'payment-signature': header }, body: uploadForm(randomBytes(10)) })
    expect(r.status).toBe(402)
    expect((await r.json() as any).error.details).toMatch(/does not match/)
  })

  it('settlement failing after the import (balance drained in parallel) pins nothing', async () => {
    const payer = chain.payers[5]!
    const header = await signChallenge(chain, payer.privateKey, await uploadChallenge(pind.url, 4_000_000))
    const bytes = randomBytes(4_000_000 - 300)
    const boundary = 'drain'
    const head = Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="x"\r\n\r\n`)
    let release!: () => void
    const gate = new Promise<void>(resolve => { release = resolve })
    const stream = new ReadableStream<Uint8Array>({
      async start (c) {
        c.enqueue(head)
        c.enqueue(bytes.subarray(0, 1_500_000)) // a whole 1 MiB leaf and more
        await gate // the server has verified and is importing; now drain the payer
        c.enqueue(bytes.subarray(1_500_000))
        c.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`))
        c.close()
      }
    })
    const storedBefore = await blocks.count(pind.dataDir)
    const pending = fetch(`${pind.url}/upload`, { method: 'POST', body: stream, duplex: 'half', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-upload-size': '4000000', 'payment-signature': header } } as RequestInit)
    // once the server has verified the payment (it logs so), spend the payer's balance elsewhere
    await waitFor(() => pind.stderr().includes(`"payment":"${payer.address.toLowerCase()}:`) ? true : undefined, 'payment verified')
    // on disk the first leaf is staged locally by now, none of it in the block store before settlement;
    // in S3 it is in the bucket already (a paid upload's PUTs overlap its body), and is deleted again below
    if (blocks.kind === 'fs') expect(await blocks.count(pind.dataDir)).toBe(storedBefore)
    else await waitFor(async () => await blocks.count(pind.dataDir) > storedBefore ? true : undefined, 'the first block in the bucket')
    const balance = await usdcBalance(chain, payer.address)
    await transferUsdc(chain, payer.privateKey, chain.payTo, balance)
    release()
    const r = await pending
    expect(r.status).toBe(402)
    const body = await r.json() as any
    expect(body.error.reason).toBe('INSUFFICIENT_FUNDS')
    expect(body.error.details).toMatch(/nothing was pinned/)
    expect(await blocks.count(pind.dataDir)).toBe(storedBefore)
  })

  it('settles many concurrent paid uploads from one payer and from many payers', async () => {
    const many = await startDevChain({ payers: 4 })
    const { args, env } = chainArgs(many)
    const own = await blockstoreUnderTest(blocks.kind)
    const node = await startPind({ args: [...args, ...own.args], env: { ...env, ...own.env } })
    try {
      const jobs = many.payers.flatMap((p, i) => [0, 1, 2].map(j => ({ p, bytes: randomBytes(20_000 + i * 100 + j) })))
      const results = await Promise.all(jobs.map(async ({ p, bytes }) => {
        const r = await payingFetch(many, p.privateKey)(`${node.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
        return { status: r.status, body: await r.json() as any, bytes }
      }))
      for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(201)
      const txs = new Set(results.map(r => r.body.price.transaction))
      expect(txs.size).toBe(jobs.length)
      expect(await usdcBalance(many, many.payTo)).toBe(BigInt(jobs.length) * 1000n)
      for (const r of results.slice(0, 3)) {
        const got = await fetch(r.body.gateway_url)
        expect(sha(new Uint8Array(await got.arrayBuffer()))).toBe(sha(r.bytes))
      }
    } finally {
      await node.stop()
      await many.stop()
    }
  })
})
