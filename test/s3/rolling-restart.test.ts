/**
 * A rolling restart behind HAProxy (scripts/haproxy/pind.cfg): two front ends
 * on one PostgreSQL ledger and one bucket, under a steady load of reads and
 * paid uploads through the balancer, are each stopped (SIGTERM: /ready drains
 * them first) and started again in turn. No request of the load fails, every
 * acknowledged upload reads back through each front end, and the payer paid
 * exactly what was acknowledged.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { blockstoreUnderTest } from '../helpers/backend.js'
import { payingFetch, uploadForm } from '../helpers/paying-client.js'
import { ROOT, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'
import { freePort, waitFor } from '../helpers/ports.js'

/** inter 2 s x fall 2 in the config: the drain outlasts the balancer's taking a front end out */
const DRAIN_SECONDS = 6

let chain: DevChain
let db: TestPostgres
let haproxy: ChildProcess | undefined

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  db = await startTestPostgres()
}, 240_000)
afterAll(async () => {
  if (haproxy?.pid != null && haproxy.exitCode == null) {
    const exited = new Promise(resolve => haproxy?.once('exit', resolve))
    process.kill(haproxy.pid, 'SIGKILL')
    await exited
  }
  await db?.stop()
  await chain?.stop()
}, 240_000)

/** a server's row of the balancer's stats page (CSV; its first line names the columns) */
async function serverStats (statsUrl: string, server: string): Promise<Record<string, string>> {
  const [head, ...rows] = (await (await fetch(`${statsUrl};csv`)).text()).split('\n').map(l => l.split(','))
  const row = rows.find(f => f[0] === 'pind' && f[1] === server) ?? []
  return Object.fromEntries(head!.map((name, i) => [name.replace(/^# /, ''), row[i] ?? '']))
}

/** the balancer's view of a server: UP, DOWN, `UP 1/2`… */
async function serverStatus (statsUrl: string, server: string): Promise<string | undefined> {
  return (await serverStats(statsUrl, server)).status
}

it('restarts each front end in turn under load without losing a request', async () => {
  const { url: databaseUrl } = await db.freshDatabase()
  const bucket = await blockstoreUnderTest('s3')
  const [lbPort, statsPort, port1, port2] = await Promise.all([freePort(), freePort(), freePort(), freePort()])
  const lb = `http://127.0.0.1:${lbPort}`
  const stats = `http://127.0.0.1:${statsPort}/stats`
  // each front end its own settler key (anvil accounts 1 and 0, both with ETH); both answer for the balancer's URL
  const settlers = [chain.settlerKey, chain.deployerKey]
  const ports = [port1!, port2!]
  const dataDirs = [tempDir('pind-lb-1-'), tempDir('pind-lb-2-')]
  const start = async (i: number): Promise<PindProcess> => await startPind({
    dataDir: dataDirs[i],
    args: ['--port', String(ports[i]), '--rpc-url', chain.rpcUrl, '--asset', chain.usdc, '--pay-to', chain.payTo,
      '--ledger', 'postgres', '--database-url', databaseUrl, ...bucket.args, '--public-url', lb,
      '--trusted-proxies', '127.0.0.1', '--rate-limit-reads', '0', '--rate-limit-unpaid', '0',
      '--shutdown-drain', String(DRAIN_SECONDS)],
    env: { ...bucket.env, PIND_SETTLER_KEY: settlers[i] }
  })
  const fronts = [await start(0), await start(1)]

  haproxy = spawn('haproxy', ['-f', join(ROOT, 'scripts/haproxy/pind.cfg'), '-db'], {
    env: { ...process.env, PIND_LB_BIND: `127.0.0.1:${lbPort}`, PIND_LB_STATS_BIND: `127.0.0.1:${statsPort}`, PIND_1: `127.0.0.1:${port1}`, PIND_2: `127.0.0.1:${port2}` },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  let haproxyLog = ''
  haproxy.stderr?.on('data', (b: Buffer) => { haproxyLog += b.toString() })
  const bothUp = async (): Promise<void> => {
    for (const s of ['pind1', 'pind2']) await waitFor(async () => (await serverStatus(stats, s).catch(() => undefined)) === 'UP' ? true : undefined, `the balancer to send to ${s}`)
  }
  await bothUp()

  const payer = chain.payers[0]!
  const pay = payingFetch(chain, payer.privateKey)
  const balanceBefore = await usdcBalance(chain, payer.address)
  const uploaded: Array<{ cid: string, bytes: Buffer }> = []
  let paid = 0n
  const upload = async (): Promise<string | undefined> => {
    const bytes = randomBytes(20_000 + Math.floor(Math.random() * 100_000))
    const r = await pay(`${lb}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'x-pin-duration-months': '1' } })
    if (r.status !== 201) return `POST /upload: ${r.status} ${await r.text()}`
    const body = await r.json() as { cid: string, price: { amount: string } }
    paid += BigInt(body.price.amount)
    uploaded.push({ cid: body.cid, bytes })
    token ??= r.headers.get('x-wallet-auth-token') ?? undefined
    return undefined
  }
  let token: string | undefined
  expect(await upload()).toBeUndefined()
  expect(token).toBeDefined()
  const first = uploaded[0]!

  // the load: workers each looping over reads of every kind, with a paid upload now and then
  const failures: string[] = []
  const counts = { health: 0, pins: 0, gateway: 0, upload: 0 }
  let running = true
  const step = async (n: number): Promise<string | undefined> => {
    switch (n % 8) {
      case 0: case 1: case 2: {
        counts.health++
        const r = await fetch(`${lb}/health`)
        await r.arrayBuffer()
        return r.status === 200 ? undefined : `GET /health: ${r.status}`
      }
      case 3: case 4: {
        counts.pins++
        const r = await fetch(`${lb}/pins`, { headers: { authorization: `Bearer ${token}` } })
        const body = await r.json() as { count?: number }
        return r.status === 200 && (body.count ?? 0) >= 1 ? undefined : `GET /pins: ${r.status} ${JSON.stringify(body)}`
      }
      case 5: case 6: {
        counts.gateway++
        const r = await fetch(`${lb}/ipfs/${first.cid}`)
        const got = Buffer.from(await r.arrayBuffer())
        return r.status === 200 && got.equals(first.bytes) ? undefined : `GET /ipfs: ${r.status} (${got.length} bytes)`
      }
      default:
        counts.upload++
        return await upload()
    }
  }
  const worker = async (w: number): Promise<void> => {
    for (let n = w; running; n++) {
      try {
        const failure = await step(n)
        if (failure != null) failures.push(failure)
      } catch (err) {
        failures.push(`request ${n % 8}: ${(err as Error).message} ${String((err as Error).cause ?? '')}`)
      }
    }
  }
  const workers = Array.from({ length: 6 }, async (_, w) => { await worker(w) })

  const t0 = Date.now()
  for (const i of [0, 1]) {
    const name = `pind${i + 1}`
    // SIGTERM: drains (the balancer takes it out), then stops; the load goes on meanwhile
    expect(await fronts[i]!.stop('SIGTERM')).toBe(0)
    expect(fronts[i]!.stderr()).toContain('"msg":"draining"')
    expect(await serverStatus(stats, name)).toMatch(/^DOWN/)
    fronts[i] = await start(i)
    await waitFor(async () => (await serverStatus(stats, name)) === 'UP' ? true : undefined, `the balancer to send to ${name} again`)
  }
  running = false
  await Promise.all(workers)
  const seconds = (Date.now() - t0) / 1000
  console.log(`rolling restart: ${JSON.stringify(counts)} requests in ${seconds.toFixed(1)} s`)

  expect(failures, haproxyLog).toEqual([])
  // and none was saved by the balancer's retries: no connection to a front end failed, none was cut,
  // none had to be sent again (without the drain a stopping front end refuses connections the balancer still makes)
  for (const s of ['pind1', 'pind2']) {
    const { econ, eresp, wretr, wredis, hrsp_5xx: h5xx } = await serverStats(stats, s)
    expect({ s, econ, eresp, wretr, wredis, h5xx }).toEqual({ s, econ: '0', eresp: '0', wretr: '0', wredis: '0', h5xx: '0' })
  }
  expect(counts.upload).toBeGreaterThan(2)
  expect(counts.health + counts.pins + counts.gateway).toBeGreaterThan(100)
  // every acknowledged upload, byte for byte, from each front end directly
  for (const f of fronts) {
    for (const u of uploaded) {
      const r = await fetch(`${f.url}/ipfs/${u.cid}`)
      expect(r.status).toBe(200)
      expect(Buffer.from(await r.arrayBuffer()).equals(u.bytes)).toBe(true)
    }
  }
  expect(await usdcBalance(chain, payer.address)).toBe(balanceBefore - paid)
  for (const f of fronts) expect(await f.stop()).toBe(0)
}, 240_000)
