/**
 * Quotes for pins by CID under attack, and what a quote gives away (issue 13,
 * findings 4, 11, 13 and the second bullet of 17). Before it quotes a CID it
 * does not hold, pind probes the network for the root block; attackers fill
 * those probes, feed it blocks that are not what their CID says, or use the
 * quote to learn what the node holds. The real pind (bundle) on the anvil
 * chain, a second Helia node as the origin, clients from several loopback
 * addresses (127.0.0.x) as different clients.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server, type Socket } from 'node:net'
import { CID } from 'multiformats/cid'
import { Agent, fetch as undiciFetch } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid, startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { freePort, waitFor } from '../helpers/ports.js'
import { startPind, type PindProcess } from '../helpers/pind.js'

let chain: DevChain
let pind: PindProcess
let origin: Peer
const agents: Agent[] = []

beforeAll(async () => {
  chain = await startDevChain({ payers: 3 })
  const { args, env } = chainArgs(chain)
  origin = await startPeer()
  pind = await startPind({ args: [...args, '--pin-probe-timeout', '3s', '--pin-stall-timeout', '10s'], env: { ...env, PIND_LOG_LEVEL: 'info' } })
})

afterAll(async () => {
  await Promise.all(agents.map(async a => { await a.close() }))
  await pind?.stop()
  await origin?.stop()
  await chain?.stop()
})

const postPin = (body: unknown, headers: Record<string, string> = {}): RequestInit =>
  ({ method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

/** an unpaid quote sent from a given loopback address: another client to pind */
async function quoteFrom (address: string, body: unknown): Promise<{ status: number, headers: Headers, body: any }> {
  const dispatcher = new Agent({ localAddress: address })
  agents.push(dispatcher)
  const r = await undiciFetch(`${pind.url}/pins`, { ...postPin(body), dispatcher } as any)
  return { status: r.status, headers: r.headers as unknown as Headers, body: await r.json() }
}

/** an origin that accepts connections and never says a word */
async function tarpit (): Promise<{ server: Server, addr: string, accepted: number, stop(): void }> {
  const sockets: Socket[] = []
  const t = { server: createServer(), addr: '', accepted: 0, stop: () => { t.server.close(); for (const s of sockets) s.destroy() } }
  t.server.on('connection', (s) => { t.accepted++; sockets.push(s); s.on('error', () => {}) })
  await new Promise<void>(resolve => t.server.listen(0, '127.0.0.1', resolve))
  t.addr = `/ip4/127.0.0.1/tcp/${(t.server.address() as { port: number }).port}`
  return t
}

async function untilSettled (token: string, requestid: string): Promise<any> {
  return await waitFor(async () => {
    const s = await (await fetch(`${pind.url}/pins/${requestid}`, { headers: { authorization: `Bearer ${token}` } })).json() as any
    return s.status === 'pinned' || s.status === 'failed' ? s : undefined
  }, `pin ${requestid} to settle`, 60_000)
}

describe('quotes for pins by CID', () => {
  it('probe starvation: while attackers hold every size probe, a victim gets 503 + Retry-After, never a cheaper quote, and pays the right price after', async () => {
    const { cid } = await origin.addRandom(30_000_000)
    const victim = { cid, origins: origin.multiaddrs() }
    // 5 attacking clients × 4 quotes for random CIDs, each with an origin that accepts and never answers:
    // each probe waits out its timeout on it
    const tarpits = await Promise.all(Array.from({ length: 20 }, async () => await tarpit()))
    const attack = Promise.all(tarpits.map(async (t, i) =>
      await quoteFrom(`127.0.0.${2 + (i % 5)}`, { cid: rawCid(randomBytes(32)).toString(), origins: [t.addr] })))
    // every size probe pind runs at once (16) is busy with a tarpit
    await waitFor(() => tarpits.filter(t => t.accepted > 0).length >= 16 ? true : undefined, 'the attackers to hold the probes', 10_000)
    const during = await quoteFrom('127.0.0.1', victim)
    if (during.status === 402) {
      // only a probe that found the root may answer with a price
      expect(during.body.sizeSource).toMatch(/root block/)
      expect(Number(during.body.size)).toBeGreaterThanOrEqual(30_000_000)
    } else {
      expect(during.status).toBe(503)
      expect(Number(during.headers.get('retry-after'))).toBeGreaterThan(0)
    }
    const attacked = await attack
    for (const t of tarpits) t.stop()
    for (const a of attacked) expect([402, 429, 503]).toContain(a.status)
    // the busy answer is not remembered as a price: once the attack is over, the right quote
    const after = await quoteFrom('127.0.0.1', victim)
    expect(after.status).toBe(402)
    expect(after.body.sizeSource).toMatch(/root block/)
    expect(Number(after.body.size)).toBeGreaterThanOrEqual(30_000_000)
    expect(BigInt(after.body.price.amount)).toBeGreaterThan(1000n)
    // the victim pays that and gets the whole DAG
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/pins`, postPin(victim))
    expect(r.status).toBe(202)
    const accepted = await r.json() as any
    expect(accepted.info.amount_paid).toBe(after.body.price.amount)
    const done = await untilSettled(r.headers.get('x-wallet-auth-token') as string, accepted.requestid)
    expect(done.status, done.info.status_details).toBe('pinned')
  })

  it('one client cannot hold more than its share of the size probes', async () => {
    const dead = `/ip4/127.0.0.1/tcp/${await freePort()}`
    const answers = await Promise.all(Array.from({ length: 8 }, async () =>
      await quoteFrom('127.0.0.9', { cid: rawCid(randomBytes(32)).toString(), origins: [dead] })))
    expect(answers.filter(a => a.status === 402).length).toBeLessThanOrEqual(4)
    const refused = answers.filter(a => a.status === 429)
    expect(refused.length).toBeGreaterThanOrEqual(4)
    for (const a of refused) expect(Number(a.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  it('a raw block relabelled as dag-pb is a 400 (or a 402 that knows no size), never a 500', async () => {
    // the attacker uploads a small file (one raw block) and asks for its multihash as dag-pb
    const up = await payingFetch(chain, chain.payers[1]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(5000)) })
    expect(up.status).toBe(201)
    const raw = CID.parse((await up.json() as any).cid)
    expect(raw.code).toBe(0x55)
    const relabelled = CID.createV1(0x70, raw.multihash).toString()
    const r = await fetch(`${pind.url}/pins`, postPin({ cid: relabelled }))
    const body = await r.json() as any
    expect([400, 402], JSON.stringify(body)).toContain(r.status)
    if (r.status === 402) expect(body.sizeSource).toMatch(/no size known/)
    // the same from an origin that serves the raw block: the root is had, and it is not dag-pb
    const bytes = randomBytes(3000)
    await origin.putBlock(rawCid(bytes), bytes)
    const fromOrigin = await fetch(`${pind.url}/pins`, postPin({ cid: CID.createV1(0x70, rawCid(bytes).multihash).toString(), origins: origin.multiaddrs() }))
    const e = await fromOrigin.json() as any
    expect(fromOrigin.status, JSON.stringify(e)).toBe(400)
    expect(e.error.details).toMatch(/not valid dag-pb/)
  })

  it('the 402 does not tell whether this node still holds content that no live pin holds', async () => {
    const bytes = randomBytes(1_500_000)
    const up = await payingFetch(chain, chain.payers[2]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
    expect(up.status).toBe(201)
    const { cid, requestid } = await up.json() as any
    const token = up.headers.get('x-wallet-auth-token') as string
    const live = await (await fetch(`${pind.url}/pins`, postPin({ cid }))).json() as any
    expect(live.sizeSource).toMatch(/root block/) // served by the gateway anyway: no secret
    expect((await fetch(`${pind.url}/pins/${requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })).status).toBe(202)
    expect((await fetch(`${pind.url}/ipfs/${cid}`)).status).toBe(404)
    // its blocks stay until gc: the quote must read like one for content never seen
    const deleted = await fetch(`${pind.url}/pins`, postPin({ cid }))
    const never = await fetch(`${pind.url}/pins`, postPin({ cid: rawCid(randomBytes(32)).toString() }))
    expect(deleted.status).toBe(402)
    const [d, n] = [await deleted.json() as any, await never.json() as any]
    expect(d.sizeSource).not.toMatch(/this node/)
    expect({ size: d.size, sizeSource: d.sizeSource, price: d.price.amount }).toEqual({ size: n.size, sizeSource: n.sizeSource, price: n.price.amount })
  })

  it('a root block between 1 and 2 MiB, probed for the quote, is fetched at once after payment (no stalled first attempt)', async () => {
    const bytes = randomBytes(1_600_000)
    const cid = rawCid(bytes)
    await origin.putBlock(cid, bytes)
    const body = { cid: cid.toString(), origins: origin.multiaddrs() }
    const q = await (await fetch(`${pind.url}/pins`, postPin(body))).json() as any
    expect(q.sizeSource).toMatch(/root block \(raw block, found on the network\)/)
    const r = await payingFetch(chain, chain.payers[2]!.privateKey)(`${pind.url}/pins`, postPin(body))
    expect(r.status).toBe(202)
    const { requestid } = await r.json() as any
    const done = await untilSettled(r.headers.get('x-wallet-auth-token') as string, requestid)
    expect(done.status).toBe('pinned')
    // the first attempt got it: no attempt ended for want of a block
    const retried = pind.stderr().split('\n').filter(l => l.includes(requestid) && /attempt failed/.test(l))
    expect(retried).toEqual([])
    expect(Buffer.from(await (await fetch(`${pind.url}/ipfs/${cid}`)).arrayBuffer()).equals(bytes)).toBe(true)
  })
})
