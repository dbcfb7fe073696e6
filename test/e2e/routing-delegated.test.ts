/**
 * --routing delegated: providers found through the Delegated Routing V1 HTTP
 * API (@helia/delegated-routing-v1-http-api-client, the real client) against
 * a local stand-in endpoint that answers GET /routing/v1/providers/{cid}
 * with a Helia peer holding the content. A pin with no origins is fetched
 * from that peer, and the gateway's read-through finds it the same way.
 */
import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

let origin: Peer
let pind: PindProcess
let endpoint: Server
const asked: string[] = []
/** who the endpoint names as provider */
let providers: Peer[] = []

beforeAll(async () => {
  origin = await startPeer()
  providers = [origin]
  endpoint = createServer((req, res) => {
    const m = /^\/routing\/v1\/providers\/([^/?]+)/.exec(req.url ?? '')
    if (req.method !== 'GET' || m == null) { res.writeHead(404).end(); return }
    asked.push(m[1] as string)
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ Providers: providers.map(p => ({ Schema: 'peer', ID: p.peerId, Addrs: p.multiaddrs().map(a => a.replace(/\/p2p\/.*$/, '')), Protocols: ['transport-bitswap'] })) }))
  })
  await new Promise<void>(resolve => endpoint.listen(0, '127.0.0.1', resolve))
  const port = (endpoint.address() as { port: number }).port
  pind = await startPind({ args: ['--routing', 'delegated', '--delegated-routing-url', `http://127.0.0.1:${port}`, '--routing-private-addresses', '--gateway-network-timeout', '10s', '--pin-stall-timeout', '5s'] })
})

afterAll(async () => {
  await pind?.stop()
  await origin?.stop()
  await new Promise(resolve => endpoint?.close(resolve))
})

describe('--routing delegated', () => {
  it('pins a CID without origins from the provider the endpoint names', async () => {
    const { cid, bytes } = await origin.addRandom(1024 * 1024 + 99)
    const minted = await runPind(['keys', 'mint', '--owner', `0x${'42'.repeat(20)}`, '--unpaid-pins', '--json', '--data-dir', pind.dataDir])
    expect(minted.code).toBe(0)
    const token = JSON.parse(minted.out).token as string
    const r = await fetch(`${pind.url}/pins`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-pin-duration-months': '1' }, body: JSON.stringify({ cid }) })
    expect(r.status).toBe(202)
    const { requestid } = await r.json() as { requestid: string }
    const status = await waitFor(async () => {
      const s = await (await fetch(`${pind.url}/pins/${requestid}`, { headers: { authorization: `Bearer ${token}` } })).json() as { status: string }
      return s.status === 'pinned' || s.status === 'failed' ? s : undefined
    }, 'the pin to settle', 60_000)
    expect(status.status).toBe('pinned')
    expect(asked).toContain(cid)
    expect(Buffer.from(await (await fetch(`${pind.url}/ipfs/${cid}`)).arrayBuffer()).equals(bytes)).toBe(true)
  })

  it('serves through the gateway read-through what only the endpoint\'s provider has', async () => {
    const other = await startPeer()
    const { cid, bytes } = await other.addRandom(300_000)
    providers = [other]
    const r = await fetch(`${pind.url}/ipfs/${cid}`)
    expect(r.status).toBe(200)
    expect(Buffer.from(await r.arrayBuffer()).equals(bytes)).toBe(true)
    expect(asked).toContain(cid)
    const health = await (await fetch(`${pind.url}/health`)).json() as { checks: Record<string, { ok: boolean }> }
    expect(health.checks.routing).toEqual({ ok: true })
    const status = await runPind(['routing', 'status', '--data-dir', pind.dataDir])
    expect(status.out).toMatch(/^routing: delegated;/m)
    await other.stop()
  })
})
