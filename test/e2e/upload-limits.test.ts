/**
 * Limits around uploads and request targets, on the real server and chain:
 * --upload-concurrency refuses a paid upload past the limit with 503 +
 * Retry-After before its payment is used (the payer keeps the money and can
 * retry with the same signature), and request targets over 8 KiB get 414.
 */
import { randomBytes } from 'node:crypto'
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, signChallenge, uploadChallenge } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'

let chain: DevChain
let pind: PindProcess

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  const { args, env } = chainArgs(chain)
  pind = await startPind({ args: [...args, '--upload-concurrency', '1'], env })
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

const BOUNDARY = 'limits-boundary'
const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="held.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`)
const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`)

/**
 * A paid upload whose body is sent in two halves: the first half once the
 * server has taken the request (it answered `Expect: 100-continue`, which
 * node:http does just before running the handler, so the slot is held), the
 * second half when `finish` is called.
 */
async function heldUpload (url: string, payment: string, file: Uint8Array): Promise<{ finish: () => Promise<{ status: number, body: any }> }> {
  const target = new URL(`${url}/upload`)
  const half = Math.floor(file.length / 2)
  let req: ClientRequest | undefined
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    req = httpRequest({
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: 'POST',
      headers: {
        'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
        'content-length': String(head.length + file.length + tail.length),
        'payment-signature': payment,
        expect: '100-continue'
      }
    }, resolve)
    req.on('error', reject)
  })
  await new Promise<void>((resolve) => {
    req?.once('continue', () => {
      req?.write(head)
      req?.write(file.subarray(0, half))
      resolve()
    })
  })
  return {
    finish: async () => {
      req?.end(Buffer.concat([file.subarray(half), tail]))
      const res = await response
      let text = ''
      for await (const c of res) text += String(c)
      return { status: res.statusCode ?? 0, body: JSON.parse(text) }
    }
  }
}

describe('--upload-concurrency', () => {
  it('answers a paid upload past the limit with 503 + Retry-After, uses no payment, and takes the same payment once a slot is free', async () => {
    const [a, b] = chain.payers as [typeof chain.payers[0], typeof chain.payers[0]]
    const fileA = randomBytes(2 * 1024 * 1024)
    const fileB = randomBytes(300_000)
    const payA = await signChallenge(chain, a.privateKey, await uploadChallenge(pind.url, fileA.length))
    const payB = await signChallenge(chain, b.privateKey, await uploadChallenge(pind.url, fileB.length))
    const balanceB = await usdcBalance(chain, b.address)

    const held = await heldUpload(pind.url, payA, fileA)
    const form = (): FormData => { const f = new FormData(); f.append('file', new Blob([fileB]), 'b.bin'); return f }
    const busy = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'payment-signature': payB, 'x-upload-size': String(fileB.length) }, body: form() })
    expect(busy.status).toBe(503)
    expect(busy.headers.get('retry-after')).toBe('5')
    const busyBody = await busy.json() as any
    expect(busyBody.error.reason).toBe('SERVICE_UNAVAILABLE')
    expect(busyBody.error.details).toMatch(/1 uploads are in progress.*payment was not used/)
    // an unpaid request still gets its 402 while the slot is taken: quotes need no slot
    expect((await uploadChallenge(pind.url, 1000)).status).toBe(402)

    const first = await held.finish()
    expect(first.status).toBe(201)
    expect(first.body.size).toBe(fileA.length)
    expect(await usdcBalance(chain, b.address)).toBe(balanceB)

    const retried = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'payment-signature': payB, 'x-upload-size': String(fileB.length) }, body: form() })
    expect(retried.status).toBe(201)
    expect((await retried.json() as any).size).toBe(fileB.length)
    expect(await usdcBalance(chain, b.address)).toBeLessThan(balanceB)
  })
})

describe('request target length', () => {
  it('answers 414 in the error shape past 8 KiB, and serves targets below it as usual', async () => {
    const long = await fetch(`${pind.url}/ipfs/bafkqaaa/${'a'.repeat(9000)}`)
    expect(long.status).toBe(414)
    expect(await long.json()).toEqual({ error: { reason: 'URI_TOO_LONG', details: expect.stringMatching(/longer than 8192/) } })
    const near = await fetch(`${pind.url}/pins?name=${'a'.repeat(8000)}`)
    expect(near.status).not.toBe(414)
    const body = await near.json() as any
    expect(body.error.reason).not.toBe('URI_TOO_LONG')
    // an owner endpoint's 401 names the path alone in its sign-in challenge: the query does not swell the header
    expect(near.status).toBe(401)
    expect(near.headers.get('payment-required')?.length ?? 0).toBeGreaterThan(0)
    expect(near.headers.get('payment-required')?.length ?? 0).toBeLessThan(4096)
    // a path longer than any owner endpoint's: 401 without a challenge
    const longId = await fetch(`${pind.url}/pins/${'b'.repeat(7000)}`)
    expect(longId.status).toBe(401)
    expect(longId.headers.get('payment-required')).toBeNull()
    expect((await longId.json() as any).error.reason).toBe('UNAUTHORIZED')
  })
})
