/**
 * Hostile clients against POST /upload with a payment that was already
 * settled. A settled x402 authorization is public on chain, so anyone can
 * rebuild the PAYMENT-SIGNATURE header and replay it. Shaped like the attack
 * (issue 13, finding 3): the real pind (bundle) on the anvil chain, a real
 * paid upload, then raw sockets that replay its payment with huge, slow or
 * endless bodies while an honest payer tries to upload.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, signChallenge, uploadChallenge, uploadForm } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { multipartFrame, rawRequest, type RawExchange, type RawResponse } from '../helpers/raw-http.js'

let chain: DevChain
let pind: PindProcess
/** the settled upload whose payment is replayed */
const A = { bytes: randomBytes(5000), header: '', requestid: '', cid: '' }
const open: RawExchange[] = []

beforeAll(async () => {
  chain = await startDevChain({ payers: 3 })
  const { args, env } = chainArgs(chain)
  pind = await startPind({ args: [...args, '--upload-concurrency', '2'], env })
  A.header = await signChallenge(chain, chain.payers[0]!.privateKey, await uploadChallenge(pind.url, A.bytes.length))
  const r = await fetch(`${pind.url}/upload`, { method: 'POST', body: uploadForm(A.bytes), headers: { 'payment-signature': A.header, 'x-upload-size': String(A.bytes.length) } })
  expect(r.status).toBe(201)
  const body = await r.json() as any
  A.requestid = body.requestid
  A.cid = body.cid
})

afterEach(() => {
  // what a test left open (when it failed half-way) must not hold slots for the next one
  for (const x of open.splice(0)) x.socket.destroy()
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

const MiB = 1024 * 1024

/** A replay of A's payment on a raw socket: the request head only; the body is up to the caller. */
function replay (headers: string[]): RawExchange {
  const host = new URL(pind.url).host
  const x = rawRequest(pind.url, ['POST /upload HTTP/1.1', `Host: ${host}`, 'Content-Type: multipart/form-data; boundary=b', `Payment-Signature: ${A.header}`, ...headers])
  open.push(x)
  return x
}

async function within<T> (p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p, new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`no ${what} within ${ms} ms`)) }, ms) })])
  } finally {
    clearTimeout(timer)
  }
}

/** Sends up to `total` bytes from `piece` (framed by `frame`) while the server takes them; returns how many it took. */
async function pour (x: RawExchange, total: number, frame: (b: Buffer) => Buffer = b => b): Promise<number> {
  const piece = Buffer.alloc(MiB, 0x61)
  let sent = 0
  while (sent < total && await x.write(frame(piece))) sent += piece.length
  return sent
}

const chunked = (b: Buffer): Buffer => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')])

describe('a settled payment, replayed on POST /upload', () => {
  it('is refused from its head alone, before any body is read, and its 40 MB body is not read after the answer either', async () => {
    const forty = 40 * MiB
    const variants: Array<{ label: string, headers: string[], frame?: (b: Buffer) => Buffer }> = [
      { label: 'Content-Length 40 MiB, X-Upload-Size of the original', headers: [`Content-Length: ${forty}`, `X-Upload-Size: ${A.bytes.length}`] },
      { label: 'Content-Length 40 MiB', headers: [`Content-Length: ${forty}`] },
      // no length at all: 40 MiB of multipart preamble (which a parser skips) before any part
      { label: 'chunked, X-Upload-Size of the original', headers: ['Transfer-Encoding: chunked', `X-Upload-Size: ${A.bytes.length}`], frame: chunked }
    ]
    for (const v of variants) {
      const x = replay(v.headers)
      let answer: RawResponse | undefined
      if (v.frame == null) {
        // not one body byte sent yet: the answer must come from the head
        answer = await within(x.response, 10_000, `answer to the head alone (${v.label})`)
        expect(answer.status, v.label).toBe(402)
      }
      const taken = await pour(x, forty, v.frame)
      expect(taken, `${v.label}: body bytes the server took`).toBeLessThan(forty)
      answer ??= await within(x.response, 10_000, `answer (${v.label})`)
      expect(answer.status, v.label).toBe(402)
      expect(JSON.parse(answer.body).error.details, v.label).toMatch(/already used/)
      await within(x.closed, 10_000, `the connection to close (${v.label})`)
    }
  })

  it('takes no upload slot while its body trickles in: an honest paid upload still goes through', async () => {
    // more slow replays than --upload-concurrency (2), each a plausible copy of the original upload
    const { head, tail } = multipartFrame('b')
    const length = head.length + A.bytes.length + tail.length
    const slow = [0, 1, 2].map(() => replay([`Content-Length: ${length}`, 'Expect: 100-continue']))
    // 100 Continue: the server has taken each request up (and, before the fix, a slot with it)
    await within(Promise.all(slow.map(async x => { await x.continued })), 10_000, '100 Continue for every replay')
    for (const x of slow) await x.write(Buffer.concat([head, A.bytes.subarray(0, 10)]))
    const bytes = randomBytes(20_000)
    const r = await payingFetch(chain, chain.payers[1]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
    expect(r.status, await r.clone().text()).toBe(201)
    const got = await fetch(`${pind.url}/ipfs/${(await r.json() as any).cid}`)
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true)
    for (const x of slow) x.socket.destroy()
  })

  it('is cut off when its body trickles in too slowly', async () => {
    const { head, tail } = multipartFrame('b')
    const x = replay([`Content-Length: ${head.length + A.bytes.length + tail.length}`, 'Expect: 100-continue'])
    await within(x.continued, 10_000, '100 Continue')
    await x.write(head)
    // one byte every half second: each keeps an idle timer happy, the whole would take 40 minutes
    let at = 0
    const trickle = setInterval(() => { void x.write(A.bytes.subarray(at, ++at)) }, 500)
    try {
      const answer = await within(x.response, 45_000, 'an answer to the trickling replay')
      expect(answer.status).toBe(408)
      await within(x.closed, 10_000, 'the connection to close')
    } finally {
      clearInterval(trickle)
    }
  })

  it('still answers the honest retry (the same payment, the same file) with the original pin', async () => {
    const r = await fetch(`${pind.url}/upload`, { method: 'POST', body: uploadForm(A.bytes), headers: { 'payment-signature': A.header, 'x-upload-size': String(A.bytes.length) } })
    expect(r.status).toBe(200)
    expect(await r.json()).toMatchObject({ requestid: A.requestid, cid: A.cid, replayed: true })
    // and the same payment with a different file of the same size is refused
    const other = await fetch(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(A.bytes.length)), headers: { 'payment-signature': A.header } })
    expect(other.status).toBe(402)
  })
})
