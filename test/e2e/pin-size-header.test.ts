/**
 * X-Pin-Size is read with the rest of the request, before the service looks
 * at the pin (issue 16: routes parse the transport): a malformed one is a
 * 400 in the spec's error shape on every pin write — before the denial
 * check (a denied CID), and on a write an operator token makes without
 * payment — never ignored. One pind (the bundle), no chain: neither path
 * reaches a payment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'

const DENIED = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const OTHER = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
const MALFORMED = ['abc', '-1', '1.5', '12345678901234567', '']

let pind: PindProcess
let operator = ''

const post = async (cid: string, headers: Record<string, string>): Promise<{ status: number, body: any }> => {
  const r = await fetch(`${pind.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ cid }) })
  return { status: r.status, body: await r.json().catch(() => undefined) }
}

beforeAll(async () => {
  pind = await startPind()
  const denied = await runPind(['deny', 'add', DENIED, '--reason', 'test takedown', '--data-dir', pind.dataDir])
  expect(denied.code, denied.err).toBe(0)
  const minted = await runPind(['keys', 'mint', '--owner', `0x${'d1'.repeat(20)}`, '--unpaid-pins', '--json', '--data-dir', pind.dataDir])
  expect(minted.code, minted.err).toBe(0)
  operator = JSON.parse(minted.out).token as string
})
afterAll(async () => {
  await pind?.stop()
})

const refused = { error: { reason: 'BAD_REQUEST', details: expect.stringMatching(/X-Pin-Size must be a whole number of bytes/) } }

describe('a malformed X-Pin-Size', () => {
  it('is refused (400) before the denial check', async () => {
    // the denial is what answers without the header
    expect((await post(DENIED, {})).status).toBe(451)
    for (const size of MALFORMED) {
      const r = await post(DENIED, { 'x-pin-size': size })
      expect(r, `X-Pin-Size: ${size}`).toEqual({ status: 400, body: refused })
    }
  })

  it('is refused (400) on a write an operator token makes without payment', async () => {
    const auth = { authorization: `Bearer ${operator}` }
    for (const size of MALFORMED) {
      const r = await post(OTHER, { ...auth, 'x-pin-size': size })
      expect(r, `X-Pin-Size: ${size}`).toEqual({ status: 400, body: refused })
    }
    // the same write with a well-formed size (or none) is pinned without payment
    expect((await post(OTHER, { ...auth, 'x-pin-size': '1000' })).status).toBe(202)
  })
})
