/**
 * Pins by CID end to end with real parts: a separate Helia node holds the
 * content, pind (the bundle, as a child process) is paid with @x402/fetch on
 * the anvil chain, fetches the DAG from that origin in the background, and a
 * third fresh node then gets the content from pind over bitswap.
 * A CID fetched, deleted, collected and pinned again is fetched again from
 * the same origin within one attempt: the origin (@helia/bitswap) dropped
 * every repeated want of a block it had sent while pind never cancelled its
 * wants (ipfs/want-cancels.ts). An origin that reads each block slowly
 * (@helia/bitswap reads every block wanted before it sends the first) is
 * fetched from without stalling: the blocks wanted at once start small.
 * Blocks on disk, or (vitest project s3) in a bucket of a real Ceph RADOS Gateway.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { chainArgs, payingFetch, recordingPayer, signChallenge } from '../helpers/paying-client.js'
import { blockstoreUnderTest, type BlockstoreUnderTest } from '../helpers/backend.js'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

let chain: DevChain
let pind: PindProcess
let origin: Peer
const peers: Peer[] = []
let blocks: BlockstoreUnderTest

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  const { args, env } = chainArgs(chain)
  origin = await startPeer()
  peers.push(origin)
  blocks = await blockstoreUnderTest()
  pind = await startPind({ args: [...args, ...blocks.args, '--pin-probe-timeout', '3s', '--pin-stall-timeout', '2s', '--pin-retry-window', '6s'], env: { ...env, ...blocks.env } })
})

afterAll(async () => {
  await pind?.stop()
  for (const p of peers) await p.stop().catch(() => {})
  await chain?.stop()
})

const pinStatus = async (token: string, requestid: string): Promise<any> =>
  await (await fetch(`${pind.url}/pins/${requestid}`, { headers: { authorization: `Bearer ${token}` } })).json()

async function untilSettled (token: string, requestid: string, timeoutMs = 60_000): Promise<any> {
  return await waitFor(async () => {
    const s = await pinStatus(token, requestid)
    return s.status === 'pinned' || s.status === 'failed' ? s : undefined
  }, `pin ${requestid} to settle`, timeoutMs)
}

/** Settles like untilSettled, and returns every status_details seen on the way (a retry says "waiting to retry"). */
async function settleWatching (token: string, requestid: string, timeoutMs = 60_000): Promise<{ done: any, seen: string[] }> {
  const seen: string[] = []
  const done = await waitFor(async () => {
    const s = await pinStatus(token, requestid)
    seen.push(String(s.info?.status_details))
    return s.status === 'pinned' || s.status === 'failed' ? s : undefined
  }, `pin ${requestid} to settle`, timeoutMs)
  return { done, seen }
}

const postPin = (body: unknown, headers: Record<string, string> = {}): RequestInit =>
  ({ method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

describe('POST /pins', () => {
  it('quotes on the size the root declares, pins from the origin, and serves it to a third node', async () => {
    const { cid, bytes } = await origin.addRandom(3 * 1024 * 1024 + 123)
    const body = { cid, name: 'three-megs', origins: origin.multiaddrs(), meta: { app: 'test' } }

    const challenge = await fetch(`${pind.url}/pins`, postPin(body, { 'x-pin-duration-months': '2' }))
    expect(challenge.status).toBe(402)
    const terms = await challenge.json() as any
    expect(Number(terms.size)).toBeGreaterThan(bytes.length)
    expect(terms.sizeSource).toMatch(/root block/)
    expect(terms.accepts).toBeUndefined() // the signed terms travel in the header only
    const card = await (await fetch(`${pind.url}/.well-known/agent-card.json`)).json() as any
    expect(card.capabilities.extensions[0].params.pricing.pinsByCid).toMatch(/X-Pin-Size/)

    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/pins`, postPin(body, { 'x-pin-duration-months': '2' }))
    expect(r.status).toBe(202)
    const token = r.headers.get('x-wallet-auth-token') as string
    expect(token).toBeTruthy()
    const accepted = await r.json() as any
    expect(['queued', 'pinning', 'pinned']).toContain(accepted.status)
    expect(accepted.requestid).not.toBe(cid)
    expect(accepted.pin).toEqual({ cid, name: 'three-megs', origins: body.origins, meta: { app: 'test' } })
    expect(accepted.delegates[0]).toMatch(new RegExp(`/p2p/${pind.peerId}$`))
    expect(accepted.info.amount_paid).toBe(terms.price.amount)

    const done = await untilSettled(token, accepted.requestid)
    expect(done.status).toBe('pinned')
    expect(Number(done.info.dag_size)).toBeGreaterThan(bytes.length)
    expect(done.info.status_details).toMatch(/pinned/)

    // the gateway serves it, and a fresh node gets it from pind alone over bitswap
    const viaGateway = Buffer.from(await (await fetch(`${pind.url}/ipfs/${cid}`)).arrayBuffer())
    expect(viaGateway.equals(bytes)).toBe(true)
    await origin.stop()
    peers.splice(peers.indexOf(origin), 1)
    const third = await startPeer()
    peers.push(third)
    await third.dial(pind.multiaddrs[0] as string)
    const fetched = await third.cat(cid, AbortSignal.timeout(30_000))
    expect(fetched.equals(bytes)).toBe(true)
    origin = await startPeer()
    peers.push(origin)
  })

  it('replaces a pin when the owner pays again: a new requestid, the old one gone', async () => {
    const pay = payingFetch(chain, chain.payers[0]!.privateKey)
    const a = await origin.addRandom(4000)
    const r = await pay(`${pind.url}/pins`, postPin({ cid: a.cid, origins: origin.multiaddrs() }))
    const token = r.headers.get('x-wallet-auth-token') as string
    const old = await r.json() as any
    await untilSettled(token, old.requestid)
    const b = await origin.addRandom(6000)
    const unpaid = await fetch(`${pind.url}/pins/${old.requestid}`, postPin({ cid: b.cid, origins: origin.multiaddrs() }, { authorization: `Bearer ${token}` }))
    expect(unpaid.status).toBe(402)
    expect((await fetch(`${pind.url}/pins/${old.requestid}`, postPin({ cid: b.cid }))).status).toBe(401)
    const replacer = recordingPayer(chain, chain.payers[0]!.privateKey)
    const replaced = await replacer.pay(`${pind.url}/pins/${old.requestid}`, postPin({ cid: b.cid, origins: origin.multiaddrs() }, { authorization: `Bearer ${token}` }))
    expect(replaced.status).toBe(202)
    const next = await replaced.json() as any
    expect(next.requestid).not.toBe(old.requestid)
    expect((await fetch(`${pind.url}/pins/${old.requestid}`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(404)
    // the same paid request again (its answer lost): the replacement, not 404
    const retried = await fetch(`${pind.url}/pins/${old.requestid}`, postPin({ cid: b.cid }, { authorization: `Bearer ${token}`, 'payment-signature': replacer.signature() }))
    expect(retried.status).toBe(202)
    expect(((await retried.json()) as any).requestid).toBe(next.requestid)
    expect((await untilSettled(token, next.requestid)).status).toBe('pinned')
    expect((await fetch(`${pind.url}/ipfs/${a.cid}`)).status).toBe(404)
    expect(Buffer.from(await (await fetch(`${pind.url}/ipfs/${b.cid}`)).arrayBuffer()).equals(b.bytes)).toBe(true)
  })

  it('validates the body with the spec error shape before asking for payment', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{}, /cid is required/],
      [{ cid: 'not-a-cid' }, /not a valid CID/],
      [{ cid: 42 }, /cid must be a string/],
      [{ cid: 'bafkqaaa' }, /hash function/],
      [{ cid: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', name: 'x'.repeat(256) }, /255/],
      [{ cid: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', origins: ['/not/a/multiaddr'] }, /origins\[0\]/],
      [{ cid: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', origins: Array.from({ length: 21 }, (_, i) => `/ip4/127.0.0.1/tcp/${i + 1}`) }, /at most 20/],
      [{ cid: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', meta: { a: 1 } }, /meta\.a must be a string/],
      [[], /JSON object/]
    ]
    for (const [body, detail] of cases) {
      const r = await fetch(`${pind.url}/pins`, postPin(body))
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400)
      const e = await r.json() as any
      expect(e.error.reason).toBe('BAD_REQUEST')
      expect(e.error.details).toMatch(detail)
    }
    const months = await fetch(`${pind.url}/pins`, postPin({ cid: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy' }, { 'x-pin-duration-months': '25' }))
    expect(months.status).toBe(400)
    // a declared size over --pin-max-bytes (32 GiB by default) is refused before any payment
    const huge = await fetch(`${pind.url}/pins`, postPin({ cid: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy' }, { 'x-pin-size': String(40 * 2 ** 30) }))
    expect(huge.status).toBe(413)
    expect((await huge.json() as any).error.details).toMatch(/at most 34359738368 bytes/)
    const notJson = await fetch(`${pind.url}/pins`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' })
    expect(notJson.status).toBe(415)
    expect((await notJson.json() as any).error.reason).toBeTruthy()
  })

  it('quotes the minimum (or X-Pin-Size) when the root cannot be had, and the byte cap is enforced on what arrives', async () => {
    // 12 blocks of 1 MiB under a root that declares a few bytes: priced at the minimum, which covers 10 MB
    const cid = await origin.addLyingDag(12, 1024 * 1024)
    const before = await blocks.count(pind.dataDir)
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/pins`, postPin({ cid, origins: origin.multiaddrs() }))
    expect(r.status).toBe(202)
    const token = r.headers.get('x-wallet-auth-token') as string
    const accepted = await r.json() as any
    expect(accepted.info.max_bytes).toBe('10000000')
    const done = await untilSettled(token, accepted.requestid)
    expect(done.status).toBe('failed')
    expect(done.info.status_details).toMatch(/larger than the 10000000 bytes paid for; nothing was kept/)
    expect(await blocks.count(pind.dataDir)).toBe(before)
    expect((await fetch(`${pind.url}/ipfs/${cid}`)).status).toBe(404)

    // nobody has this one: the quote falls back to X-Pin-Size
    const unknown = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
    const sized = await fetch(`${pind.url}/pins`, postPin({ cid: unknown }, { 'x-pin-size': String(5_000_000_000) }))
    expect(sized.status).toBe(402)
    const terms = await sized.json() as any
    expect(terms.size).toBe('5000000000')
    expect(terms.price.amount).toBe('500000')
    expect(terms.sizeSource).toMatch(/X-Pin-Size/)
  })

  it('keeps an unreachable CID queued while it retries, then fails it after the retry window', async () => {
    const dead = await startPeer()
    const deadAddr = dead.multiaddrs()[0] as string
    const { cid } = await dead.addRandom(1000)
    await dead.stop()
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/pins`, postPin({ cid, origins: [deadAddr] }))
    expect(r.status).toBe(202)
    const token = r.headers.get('x-wallet-auth-token') as string
    const { requestid } = await r.json() as any
    const early = await pinStatus(token, requestid)
    expect(['queued', 'pinning']).toContain(early.status)
    const retrying = await waitFor(async () => {
      const s = await pinStatus(token, requestid)
      return /waiting to retry/.test(s.info.status_details) ? s : undefined
    }, 'a retry to be scheduled', 20_000)
    expect(retrying.status).toBe('queued')
    // the backoff (5 s) reaches past the 6 s window: the last attempt is still made inside it
    const [, next, end] = /next attempt at (\S+), gives up at (\S+)/.exec(retrying.info.status_details) as RegExpExecArray
    expect(Date.parse(next as string)).toBeLessThan(Date.parse(end as string))
    const done = await untilSettled(token, requestid, 30_000)
    expect(done.status).toBe('failed')
    expect(done.info.status_details).toMatch(/retry window/)
  })

  it('lets a payment do its work once: a replay of the same request returns the same pin, elsewhere it is refused', async () => {
    const { cid } = await origin.addRandom(2000)
    const body = { cid, origins: origin.multiaddrs() }
    const challenge = await fetch(`${pind.url}/pins`, postPin(body))
    const signature = await signChallenge(chain, chain.payers[0]!.privateKey, challenge)
    const first = await fetch(`${pind.url}/pins`, postPin(body, { 'payment-signature': signature }))
    expect(first.status).toBe(202)
    const again = await fetch(`${pind.url}/pins`, postPin(body, { 'payment-signature': signature }))
    expect(again.status).toBe(202)
    expect((await again.json() as any).requestid).toBe((await first.json() as any).requestid)
    expect(again.headers.get('x-wallet-auth-token')).toBeNull()
    const other = await origin.addRandom(2000)
    const elsewhere = await fetch(`${pind.url}/pins`, postPin({ cid: other.cid, origins: origin.multiaddrs() }, { 'payment-signature': signature }))
    expect(elsewhere.status).toBe(402)
    expect((await elsewhere.json() as any).error.details).toMatch(/already used/)
  })

  it('pins a CID again after it was deleted and collected: the origin that sent its blocks sends them again', async () => {
    const { cid, bytes } = await origin.addRandom(3 * 1024 * 1024 + 77)
    const pay = payingFetch(chain, chain.payers[0]!.privateKey)
    const pinOnce = async (): Promise<{ token: string, requestid: string, done: any, seen: string[] }> => {
      const r = await pay(`${pind.url}/pins`, postPin({ cid, origins: origin.multiaddrs() }))
      expect(r.status).toBe(202)
      const token = r.headers.get('x-wallet-auth-token') as string
      const { requestid } = await r.json() as any
      return { token, requestid, ...await settleWatching(token, requestid) }
    }
    const first = await pinOnce()
    expect(first.done.status).toBe('pinned')
    const del = await fetch(`${pind.url}/pins/${first.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${first.token}` } })
    expect(del.status).toBe(202)
    const gc = await runPind(['gc', '--json', '--data-dir', pind.dataDir])
    expect(gc.code, gc.err).toBe(0)
    expect((await fetch(`${pind.url}/ipfs/${cid}`)).status).toBe(404)

    // the origin still holds every block it sent as "sent" to pind unless pind cancelled its wants:
    // the new fetch's wants went unanswered, every attempt stalled (2 s) and the 6 s retry window ran out
    // (without the cancels no later attempt is answered either: the pin fails, retry or not)
    const second = await pinOnce()
    expect(second.done.status).toBe('pinned')
    const served = Buffer.from(await (await fetch(`${pind.url}/ipfs/${cid}`)).arrayBuffer())
    expect(served.equals(bytes)).toBe(true)
  })

  it('pins from an origin that reads every block slowly: the first blocks wanted come within the stall timeout', async () => {
    // 200 ms per block read: 12 leaves of 1 MiB wanted at once came back after 2.4 s, past the
    // 2 s --pin-stall-timeout, and the attempt failed with its blocks on the way
    const slow = await startPeer({ readDelayMs: 200 })
    peers.push(slow)
    const { cid, bytes } = await slow.addRandom(12 * 1024 * 1024)
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/pins`, postPin({ cid, origins: slow.multiaddrs() }))
    expect(r.status).toBe(202)
    const token = r.headers.get('x-wallet-auth-token') as string
    const { requestid } = await r.json() as any
    const { done, seen } = await settleWatching(token, requestid)
    expect(done.status).toBe('pinned')
    // in one attempt: none stalled and was retried
    expect(seen.filter(d => /waiting to retry|retry window/.test(d))).toEqual([])
    const served = Buffer.from(await (await fetch(`${pind.url}/ipfs/${cid}`)).arrayBuffer())
    expect(served.equals(bytes)).toBe(true)
  })

  it('a pin deleted while its DAG is being fetched stops the fetch: the origin is asked for no more of it', async () => {
    // 250 ms per block read: the 41 blocks take ~10 s to send, and the DELETE comes after the first few
    const slow = await startPeer({ readDelayMs: 250 })
    peers.push(slow)
    const { cid } = await slow.addRandom(40 * 1024 * 1024)
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/pins`, postPin({ cid, origins: slow.multiaddrs() }))
    expect(r.status).toBe(202)
    const token = r.headers.get('x-wallet-auth-token') as string
    const { requestid } = await r.json() as any
    await waitFor(() => slow.reads() >= 4 ? true : undefined, 'the fetch to be under way', 30_000)
    const del = await fetch(`${pind.url}/pins/${requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })
    expect(del.status).toBe(202)
    // the reads the origin had begun finish; then none come (polled until the count stays put for 3 s)
    let last = -1
    let since = Date.now()
    await waitFor(() => {
      const n = slow.reads()
      if (n !== last) { last = n; since = Date.now() }
      return Date.now() - since >= 3000 ? true : undefined
    }, 'the origin to stop being read', 30_000)
    expect(last).toBeLessThan(41)
  })
})
