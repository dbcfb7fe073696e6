/**
 * The owner API (GET /pins, GET/DELETE /pins/{requestid}) through the generated
 * client real apps use (@ipfs-shipyard/pinning-service-client), on pins made
 * by paid uploads with @x402/fetch.
 */
import { randomBytes } from 'node:crypto'
import { Configuration, RemotePinningServiceClient, Status } from '@ipfs-shipyard/pinning-service-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { startPind, type PindProcess } from '../helpers/pind.js'

let chain: DevChain
let pind: PindProcess
const uploads: Array<{ requestid: string, cid: string, name: string, created: string }> = []
let token = ''
let otherToken = ''

async function upload (key: `0x${string}`, name: string): Promise<{ body: any, token: string }> {
  const r = await payingFetch(chain, key)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(64), name) })
  expect(r.status).toBe(201)
  return { body: await r.json(), token: r.headers.get('x-wallet-auth-token') as string }
}

const client = (t: string): RemotePinningServiceClient => new RemotePinningServiceClient(new Configuration({ endpointUrl: pind.url, accessToken: t }))

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  const { args, env } = chainArgs(chain)
  pind = await startPind({ args, env })
  for (let i = 0; i < 27; i++) {
    const { body, token: t } = await upload(chain.payers[0]!.privateKey, i % 3 === 0 ? `Report-${i}.PDF` : `photo-${i}.jpg`)
    uploads.push(body)
    token = t
  }
  otherToken = (await upload(chain.payers[1]!.privateKey, 'theirs.txt')).token
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

describe('owner API', () => {
  it('lists newest first, 10 by default, with count of all matches and spec-shaped PinStatus', async () => {
    const r = await client(token).pinsGet({})
    expect(r.count).toBe(27)
    expect(r.results.length).toBe(10)
    const list = [...r.results]
    expect(list[0]!.requestid).toBe(uploads[26]!.requestid)
    const first = list[0]!
    expect(first.status).toBe(Status.Pinned)
    expect(first.pin.cid).toBe(uploads[26]!.cid)
    expect(first.delegates.length).toBeGreaterThan(0)
    for (const d of first.delegates) expect(d).toMatch(new RegExp(`/p2p/${pind.peerId}$`))
    for (const v of Object.values(first.info ?? {})) expect(typeof v).toBe('string')
    expect(first.info?.pinned_until).toBeTruthy()
    expect(first.info?.dag_size).toBe('64')
    expect(first.info?.amount_paid).toBe('1000')
  })

  it('pages through every pin with before until count equals the results', async () => {
    const seen: string[] = []
    let before: Date | undefined
    for (let page = 0; page < 10; page++) {
      const r = await client(token).pinsGet({ limit: 10, ...(before != null ? { before } : {}) })
      const list = [...r.results]
      seen.push(...list.map(p => p.requestid))
      if (r.count === list.length) break
      before = list[list.length - 1]!.created
    }
    expect(seen).toEqual(uploads.map(u => u.requestid).reverse())
  })

  it('filters by cid, name with each match strategy, status, after, and limit', async () => {
    const c = client(token)
    expect((await c.pinsGet({ cid: [uploads[3]!.cid, uploads[5]!.cid] })).count).toBe(2)
    expect((await c.pinsGet({ name: 'Report-3.PDF' })).count).toBe(1)
    expect((await c.pinsGet({ name: 'report-3.pdf' })).count).toBe(0)
    expect((await c.pinsGet({ name: 'report-3.pdf', match: 'iexact' as any })).count).toBe(1)
    expect((await c.pinsGet({ name: 'Report', match: 'partial' as any })).count).toBe(9)
    expect((await c.pinsGet({ name: 'report', match: 'ipartial' as any })).count).toBe(9)
    expect((await c.pinsGet({ status: [Status.Queued, Status.Pinning] })).count).toBe(0)
    expect((await c.pinsGet({ status: [Status.Pinned, Status.Failed] })).count).toBe(27)
    expect((await c.pinsGet({ after: new Date(uploads[24]!.created), limit: 1000 })).count).toBe(2)
    expect([...(await c.pinsGet({ limit: 3 })).results].length).toBe(3)
    expect((await c.pinsGet({ meta: { app: 'x' } })).count).toBe(0)
  })

  it('accepts meta as URL-encoded JSON and rejects bad filters with 400', async () => {
    const get = async (qs: string): Promise<Response> => await fetch(`${pind.url}/pins?${qs}`, { headers: { authorization: `Bearer ${token}` } })
    expect((await (await get(`meta=${encodeURIComponent('{}')}`)).json() as any).count).toBe(27)
    for (const bad of ['limit=0', 'limit=1001', 'cid=notacid', 'status=done', 'match=fuzzy', 'before=yesterday', `cid=${Array(11).fill(uploads[0]!.cid).join(',')}`, 'meta=%7Bbad']) {
      const r = await get(bad)
      expect(r.status, bad).toBe(400)
      expect((await r.json() as any).error.reason).toBe('BAD_REQUEST')
    }
  })

  it('gets and deletes one pin; another owner sees 404; bad tokens get 401', async () => {
    const target = uploads[0]!
    expect((await client(token).pinsRequestidGet({ requestid: target.requestid })).pin.cid).toBe(target.cid)
    const theirs = await fetch(`${pind.url}/pins/${target.requestid}`, { headers: { authorization: `Bearer ${otherToken}` } })
    expect(theirs.status).toBe(404)
    const theirDelete = await fetch(`${pind.url}/pins/${target.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${otherToken}` } })
    expect(theirDelete.status).toBe(404)

    const del = await fetch(`${pind.url}/pins/${target.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })
    expect(del.status).toBe(202)
    expect((await fetch(`${pind.url}/pins/${target.requestid}`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(404)
    expect((await client(token).pinsGet({})).count).toBe(26)
    // unpinned content is no longer served
    expect((await fetch(`${pind.url}/ipfs/${target.cid}`)).status).toBe(404)

    for (const auth of [undefined, 'Bearer', 'Basic abc', `Bearer ${token.slice(0, -4)}AAAA`, 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiIweDAifQ.']) {
      const r = await fetch(`${pind.url}/pins`, { headers: auth != null ? { authorization: auth } : {} })
      expect(r.status, String(auth)).toBe(401)
      expect((await r.json() as any).error.reason).toBe('UNAUTHORIZED')
    }
  })
})
