/**
 * pind on a DHT, end to end and on loopback only: ten independent libp2p
 * nodes run kad-dht in server mode on the Amino protocol (scripts/dht-net),
 * the built binary is bootstrapped to two of them with short record
 * lifetimes and reprovide intervals (what differs from production is only
 * configuration), and real Helia nodes play the origin and the stranger.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { startDhtNetwork, type DhtNetwork } from '../../scripts/dht-net/index.mjs'
import { rawCid, startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { BINARY, runPind, startPind, type PindProcess } from '../helpers/pind.js'
import { freePort, waitFor } from '../helpers/ports.js'

const MIB = 1024 * 1024
/** how long the DHT nodes keep a provider record, and pind's reprovide interval (well inside it) */
const LIFETIME_MS = 6_000
const REPROVIDE = '2s'

let chain: DevChain
let net: DhtNetwork
let origin: Peer
let pind: PindProcess
const peers: Peer[] = []
let args: string[]
let env: Record<string, string>
let metricsUrl: string

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  net = await startDhtNetwork({ nodes: 10, recordLifetimeMs: LIFETIME_MS, cleanupIntervalMs: 250 })
  origin = await startPeer({ dht: { bootstrap: net.addrs(2), server: true, recordLifetimeMs: LIFETIME_MS, cleanupIntervalMs: 250 } })
  peers.push(origin)
  const c = chainArgs(chain)
  env = c.env
  const metricsAt = `127.0.0.1:${await freePort()}`
  metricsUrl = `http://${metricsAt}/metrics`
  args = [...c.args, '--metrics-listen', metricsAt,
    '--routing', 'dht', '--bootstrap', net.addrs(2).join(','), '--dht-mode', 'server', '--routing-private-addresses',
    '--reprovide-interval', REPROVIDE, '--dht-record-lifetime', `${LIFETIME_MS / 1000}s`,
    '--pin-probe-timeout', '10s', '--pin-stall-timeout', '5s']
  pind = await startPind({ binary: BINARY, args, env })
})

afterAll(async () => {
  await pind?.stop()
  for (const p of peers) await p.stop().catch(() => {})
  await net?.stop()
  await chain?.stop()
})

const postPin = (body: unknown, headers: Record<string, string> = {}): RequestInit =>
  ({ method: 'POST', headers: { 'content-type': 'application/json', 'x-pin-duration-months': '1', ...headers }, body: JSON.stringify(body) })

const recordsAt = async (cid: string, peer = pind.peerId): Promise<number> => (await net.records(cid, peer)).length

let upload: { cid: string, bytes: Buffer, token: string }
let pinned: { cid: string, requestid: string, token: string }

describe('pind on a loopback DHT', () => {
  it('is found by a stranger: a fresh Helia node that knows only the bootstrap peers finds pind as provider of a paid upload and fetches it byte-identical', async () => {
    const bytes = randomBytes(2 * MIB + 7)
    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload`, { method: 'POST', headers: { 'x-pin-duration-months': '1' }, body: uploadForm(bytes) })
    expect(r.status).toBe(201)
    const body = await r.json() as { cid: string }
    upload = { cid: body.cid, bytes, token: r.headers.get('x-wallet-auth-token') as string }

    // announced at once: every DHT node (k = 20 > 10) holds pind's record for the root
    await waitFor(async () => await recordsAt(upload.cid) === 10 ? true : undefined, 'provider records for the upload at all 10 DHT nodes', 20_000)
    const stranger = await startPeer({ dht: { bootstrap: net.addrs(2) } })
    peers.push(stranger)
    expect(stranger.helia.libp2p.getConnections().some(c => c.remotePeer.toString() === pind.peerId)).toBe(false)
    const providers = await stranger.findProviders(upload.cid, AbortSignal.timeout(15_000))
    expect(providers).toContain(pind.peerId)
    const got = await stranger.cat(upload.cid, AbortSignal.timeout(30_000))
    expect(got.equals(bytes)).toBe(true)
  })

  it('announces only roots under --provide-strategy roots', async () => {
    const leaf = rawCid(upload.bytes.subarray(0, MIB)).toString()
    expect(await recordsAt(upload.cid)).toBeGreaterThan(0)
    expect(await recordsAt(leaf)).toBe(0)
  })

  it('pins a CID without origins: the size-probed 402 quote and the fetch both find the content through the DHT', async () => {
    const { cid, bytes } = await origin.addRandom(MIB + MIB / 2)
    await origin.provide(cid)

    const quote = await fetch(`${pind.url}/pins`, postPin({ cid }))
    expect(quote.status).toBe(402)
    const terms = await quote.json() as { size: string, sizeSource: string }
    expect(terms.sizeSource).toMatch(/root block .*found on the network/)
    expect(Number(terms.size)).toBeGreaterThanOrEqual(bytes.length)

    const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/pins`, postPin({ cid }))
    expect(r.status).toBe(202)
    const accepted = await r.json() as { requestid: string }
    pinned = { cid, requestid: accepted.requestid, token: r.headers.get('x-wallet-auth-token') as string }
    const status = await waitFor(async () => {
      const s = await (await fetch(`${pind.url}/pins/${pinned.requestid}`, { headers: { authorization: `Bearer ${pinned.token}` } })).json() as { status: string }
      return s.status === 'pinned' || s.status === 'failed' ? s : undefined
    }, 'the pin to settle', 60_000)
    expect(status.status).toBe('pinned')
    expect(Buffer.from(await (await fetch(`${pind.url}/ipfs/${cid}`)).arrayBuffer()).equals(bytes)).toBe(true)
    // and from now on pind announces it too
    await waitFor(async () => await recordsAt(cid) > 0 ? true : undefined, 'pind\'s records for the pinned CID', 20_000)
  })

  it('reports routing in /health, /metrics, the agent card and `pind routing status`', async () => {
    const health = await (await fetch(`${pind.url}/health`)).json() as { checks: Record<string, { ok: boolean }> }
    expect(health.checks.routing).toEqual({ ok: true })
    const status = await runPind(['routing', 'status', '--json', '--data-dir', pind.dataDir], { binary: BINARY })
    expect(status.code).toBe(0)
    const report = JSON.parse(status.out)
    expect(report).toMatchObject({ running: true, routing: ['dht'], network: { dht: true, mode: 'server' }, provides: { strategy: 'roots', keys: 2 } })
    expect(report.network.routingTable).toBeGreaterThanOrEqual(9)
    expect(report.provides.providedSinceStart).toBeGreaterThanOrEqual(2)
    const text = await runPind(['routing', 'status', '--data-dir', pind.dataDir], { binary: BINARY })
    expect(text.out).toMatch(/routing: dht \(DHT server\); routing table \d+ peers/)
    const metrics = await (await fetch(metricsUrl)).text()
    expect(Number(/^pind_routing_table_peers (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(9)
    expect(Number(/^pind_provides_total\{result="done"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(2)
    expect(Number(/^pind_provide_keys (\d+)$/m.exec(metrics)?.[1])).toBe(2)
    expect(/^pind_provide_pending \d+$/m.test(metrics)).toBe(true)
    expect(/^pind_provide_oldest_pending_seconds \d+$/m.test(metrics)).toBe(true)
    expect(Number(/^pind_find_providers_seconds_count\{source="dht"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1)
    const card = await (await fetch(`${pind.url}/.well-known/agent-card.json`)).json() as { skills: Array<{ id: string, description: string }> }
    expect(card.skills.find(s => s.id === 'ipfs-network')?.description).toMatch(new RegExp(`announced on the public IPFS DHT .* by peer ${pind.peerId}`))
  })

  it('renews records for live pins after a restart, announces every block under `all`, and stops announcing a deleted pin until its records expire', async () => {
    const del = await fetch(`${pind.url}/pins/${pinned.requestid}`, { method: 'DELETE', headers: { authorization: `Bearer ${pinned.token}` } })
    expect(del.status).toBe(202)
    expect(await pind.stop()).toBe(0)
    const restartedAt = Date.now()
    pind = await startPind({ binary: BINARY, dataDir: pind.dataDir, args: [...args, '--provide-strategy', 'all'], env })

    // the live upload's root: renewed after the restart, and still held once a whole lifetime has passed
    await waitFor(async () => (await net.records(upload.cid, pind.peerId)).some(r => r.at > restartedAt) ? true : undefined, 'records renewed after the restart', 20_000)
    // under `all`, its leaves are announced too
    const leaves = [0, 1, 2].map(i => rawCid(upload.bytes.subarray(i * MIB, (i + 1) * MIB)).toString())
    await waitFor(async () => (await Promise.all(leaves.map(async l => await recordsAt(l)))).every(n => n > 0) ? true : undefined, 'records for every block under --provide-strategy all', 20_000)
    // the deleted pin: nothing renews its records, so they expire and pind is no longer found for it
    await waitFor(async () => await recordsAt(pinned.cid) === 0 ? true : undefined, 'the deleted pin\'s records to expire', LIFETIME_MS * 4)
    await new Promise(resolve => setTimeout(resolve, LIFETIME_MS - (Date.now() - restartedAt) + 500))
    expect(Date.now() - restartedAt).toBeGreaterThan(LIFETIME_MS)
    expect(await recordsAt(upload.cid)).toBeGreaterThan(0)
    const stranger = await startPeer({ dht: { bootstrap: net.addrs(2) } })
    peers.push(stranger)
    expect(await stranger.findProviders(pinned.cid, AbortSignal.timeout(10_000))).not.toContain(pind.peerId)
    expect(await stranger.findProviders(upload.cid, AbortSignal.timeout(10_000))).toContain(pind.peerId)
  })
})
