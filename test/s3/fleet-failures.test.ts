/**
 * Two `pind serve` front ends on one PostgreSQL ledger and one bucket of a
 * real Ceph RADOS Gateway (the built bundle, the dev chain, the real x402
 * client), each with its own settler key, under concurrent paid uploads and
 * pins by CID spread over both, when things fail:
 *   - one front end is killed (SIGKILL) mid-load, as it sends a settlement
 *     (the payment reaches the chain, nothing is recorded): every acknowledged
 *     write reads back byte for byte from the survivor and from the killed one
 *     started again; pins by CID the dead one had claimed are fetched by the
 *     survivor once their claims lapse; the settlement notes the kill left
 *     are reconciled by the survivor, but a paid upload's, whose staged blocks
 *     are on the dead one's disk: that one, started again, records it;
 *   - PostgreSQL stops and starts again mid-load: answers meanwhile are 503
 *     with Retry-After (no other 5xx, no charge without a pin), both front
 *     ends recover by themselves, every acknowledged write reads back from both.
 * Either way every payer's USDC that left the wallet equals the payments the
 * ledger records for them, and no pin is without its payment.
 */
import { randomBytes } from 'node:crypto'
import { FsBlockstore } from 'blockstore-fs'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid, startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { blockstoreUnderTest, type BlockstoreUnderTest } from '../helpers/backend.js'
import { payingFetch, uploadForm } from '../helpers/paying-client.js'
import { runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'
import { startRpcProxy, type RpcProxy } from '../helpers/rpc-proxy.js'

const MiB = 1024 * 1024

let chain: DevChain
let db: TestPostgres
let origin: Peer
const proxies: RpcProxy[] = []

beforeAll(async () => {
  chain = await startDevChain({ payers: 3 })
  // commits survive a stop by -m immediate, as on a production server
  db = await startTestPostgres({ durable: true })
  origin = await startPeer()
}, 120_000)
afterAll(async () => {
  for (const p of proxies) await p.close().catch(() => {})
  await origin?.stop().catch(() => {})
  await db?.stop()
  await chain?.stop()
}, 120_000)

interface Fleet {
  url: string
  blocks: BlockstoreUnderTest
  settlers: string[]
  dataDirs: string[]
  /** each front end's way to the chain (a pass-through that can act as a settlement is sent) */
  rpc: RpcProxy[]
  start(i: number): Promise<PindProcess>
}

async function fleet (): Promise<Fleet> {
  const { url } = await db.freshDatabase()
  const blocks = await blockstoreUnderTest('s3')
  // each front end its own settler key (anvil accounts 1 and 0: both hold ETH for gas)
  const settlers = [chain.settlerKey, chain.deployerKey]
  const dataDirs = [tempDir('pind-fleet-1-'), tempDir('pind-fleet-2-')]
  const rpc = [await startRpcProxy(chain.rpcUrl), await startRpcProxy(chain.rpcUrl)]
  proxies.push(...rpc)
  return {
    url,
    blocks,
    settlers,
    dataDirs,
    rpc,
    start: async (i) => await startPind({
      dataDir: dataDirs[i],
      args: ['--rpc-url', rpc[i]!.url, '--asset', chain.usdc, '--pay-to', chain.payTo, '--ledger', 'postgres', '--database-url', url, ...blocks.args, '--token-issuer', 'pind-fleet',
        '--rate-limit-unpaid', '0', '--rate-limit-reads', '0',
        // reconciliation passes every 5 s (its interval follows the expiry sweep's); a fetch waits for missing blocks
        '--expiry-sweep-interval', '5s', '--pin-stall-timeout', '300s'],
      env: { ...blocks.env, PIND_SETTLER_KEY: settlers[i] }
    })
  }
}

interface Note { state?: string, by?: string, fulfil?: { upload?: unknown } }
interface Acked { kind: 'upload' | 'pin', cid: string, bytes: Buffer, requestid: string, token: string }

/**
 * Paid writes through the front ends `targets()` names, `workers` at a time until `stop()`:
 * uploads, and every fourth a pin by CID of content on the origin. What is acknowledged
 * (201, 202) is kept; any other answer goes to `answers`.
 */
function load (targets: () => PindProcess[], workers: number): { acked: Acked[], answers: Array<{ status: number, body: string }>, errors: string[], stop(): Promise<void> } {
  const acked: Acked[] = []
  const answers: Array<{ status: number, body: string }> = []
  const errors: string[] = []
  let running = true
  const pays = chain.payers.map(p => payingFetch(chain, p.privateKey))
  const one = async (n: number): Promise<void> => {
    const live = targets()
    const fe = live[n % live.length] as PindProcess
    const pay = pays[n % pays.length] as typeof fetch
    const bytes = randomBytes(30_000 + Math.floor(Math.random() * 1_500_000))
    let r: Response
    let cid: string | undefined
    if (n % 4 === 3) {
      cid = await origin.addBytes(bytes)
      r = await pay(`${fe.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid, origins: origin.multiaddrs() }) })
    } else {
      r = await pay(`${fe.url}/upload`, { method: 'POST', body: uploadForm(bytes), headers: { 'x-pin-duration-months': '1' } })
    }
    const text = await r.text()
    if (r.status === 201 || r.status === 202) {
      const body = JSON.parse(text) as { cid?: string, requestid: string }
      acked.push({ kind: cid == null ? 'upload' : 'pin', cid: body.cid ?? cid as string, bytes, requestid: body.requestid, token: r.headers.get('x-wallet-auth-token') as string })
    } else {
      answers.push({ status: r.status, body: text.slice(0, 300) })
      if (r.status === 503 && !/^[1-9][0-9]*$/.test(r.headers.get('retry-after') ?? '')) errors.push(`503 without Retry-After: ${text.slice(0, 200)}`)
    }
  }
  const done = Array.from({ length: workers }, async (_, w) => {
    for (let n = w; running; n += workers) {
      try { await one(n) } catch (err) { errors.push(`${(err as Error).message} ${String((err as Error).cause ?? '')}`) }
    }
  })
  return { acked, answers, errors, stop: async () => { running = false; await Promise.all(done) } }
}

/** what each payer holds now */
async function balances (): Promise<bigint[]> {
  return await Promise.all(chain.payers.map(async p => await usdcBalance(chain, p.address)))
}

/** the ledger's pins and payments, through a running front end's admin socket */
async function ledger (fe: PindProcess): Promise<{ pins: Array<Record<string, any>>, payments: Array<Record<string, any>> }> {
  const out = await runPind(['export-ledger', '--data-dir', fe.dataDir, '--records', 'all'])
  expect(out.code, out.err).toBe(0)
  const lines = out.out.trim().split('\n').map(l => JSON.parse(l) as Record<string, any>)
  return { pins: lines.filter(l => l.type === 'pin'), payments: lines.filter(l => l.type === 'payment') }
}

/** USDC that left each payer equals the payments the ledger records for them; every pin has its payment, every payment its pin; how many payments */
async function reconciles (fe: PindProcess, before: bigint[]): Promise<number> {
  const { pins, payments } = await ledger(fe)
  const after = await balances()
  for (const [i, p] of chain.payers.entries()) {
    const recorded = payments.filter(r => String(r.payer).toLowerCase() === p.address.toLowerCase()).reduce((sum, r) => sum + BigInt(r.amount as string), 0n)
    expect({ payer: i, spent: (before[i] as bigint) - (after[i] as bigint) }).toEqual({ payer: i, spent: recorded })
  }
  const paid = new Set(payments.map(r => r.payment_id))
  for (const pin of pins) {
    expect(pin.settlement_tx, JSON.stringify(pin)).not.toBeNull()
    expect(paid.has(pin.payment_id), JSON.stringify(pin)).toBe(true)
  }
  const pinned = new Set(pins.map(p => p.requestid))
  for (const payment of payments) expect(pinned.has(payment.requestid), JSON.stringify(payment)).toBe(true)
  return payments.length
}

async function pinned (fe: PindProcess, a: Acked, timeoutMs = 60_000): Promise<void> {
  await waitFor(async () => {
    const s = await (await fetch(`${fe.url}/pins/${a.requestid}`, { headers: { authorization: `Bearer ${a.token}` } })).json() as { status: string, info?: { status_details?: string } }
    if (s.status === 'failed') throw new Error(`pin ${a.requestid} failed: ${s.info?.status_details}`)
    return s.status === 'pinned' ? true : undefined
  }, `pin ${a.requestid} pinned through ${fe.url}`, timeoutMs, 500)
}

async function readsBack (fe: PindProcess, acked: Acked[]): Promise<void> {
  for (const a of acked) {
    const r = await fetch(`${fe.url}/ipfs/${a.cid}`)
    const got = Buffer.from(await r.arrayBuffer())
    expect({ cid: a.cid, status: r.status, same: got.equals(a.bytes) }).toEqual({ cid: a.cid, status: 200, same: true })
  }
}

async function query<T extends pg.QueryResultRow> (url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url })
  c.on('error', () => {})
  await c.connect()
  try { return (await c.query<T>(sql, params)).rows } finally { await c.end() }
}

/**
 * A file of whole 1 MiB chunks whose root the origin holds but whose leaves it does not (yet):
 * a pin of it is priced from the root and then waits in its fetch, claimed, until `complete()`.
 */
async function heldBack (chunks: number): Promise<{ cid: string, bytes: Buffer, complete(): Promise<void> }> {
  const bytes = randomBytes(chunks * MiB)
  const cid = await origin.addBytes(bytes)
  const leaves = Array.from({ length: chunks }, (_, i) => bytes.subarray(i * MiB, (i + 1) * MiB))
  // from the store under Helia (Helia's own delete would cancel reprovides, and the origin has no router)
  const store = new FsBlockstore(origin.blocksDir)
  await store.open()
  for (const leaf of leaves) await store.delete(rawCid(leaf))
  await store.close()
  return {
    cid,
    bytes,
    // through Helia's blockstore, so that the origin's bitswap answers wants waiting for them
    complete: async () => { for (const leaf of leaves) await origin.helia.blockstore.put(rawCid(leaf), leaf) }
  }
}

describe('two front ends on one ledger and one bucket, when things fail', () => {
  it('kill -9 of one front end under load: the survivor serves every acknowledged write, takes its pins and its settlement notes over', async () => {
    const f = await fleet()
    const fronts = [await f.start(0), await f.start(1)]
    onTestFailed(() => { for (const fe of fronts) console.log(`${fe.url} (exit ${String(fe.proc.exitCode ?? fe.proc.signalCode)}):\n${fe.stderr().slice(-3000)}`) })
    const before = await balances()
    const pay = chain.payers.map(p => payingFetch(chain, p.privateKey))

    // pins by CID of content the origin holds only the root of: each waits in a fetch, claimed by one front end
    const held: Array<Acked & { complete(): Promise<void> }> = []
    for (let i = 0; i < 4; i++) {
      const h = await heldBack(2)
      const r = await pay[i % 3]!(`${fronts[i % 2]!.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid: h.cid, origins: origin.multiaddrs() }) })
      expect(r.status, await r.clone().text()).toBe(202)
      held.push({ kind: 'pin', cid: h.cid, bytes: h.bytes, requestid: (await r.json() as { requestid: string }).requestid, token: r.headers.get('x-wallet-auth-token') as string, complete: h.complete })
    }
    const holders = await waitFor(async () => {
      const rows = await query<{ requestid: string, holder: string | null }>(f.url, 'SELECT requestid, holder FROM fetch_queue WHERE requestid = ANY($1::text[])', [held.map(h => h.requestid)])
      return rows.length === held.length && rows.every(r => r.holder != null) ? new Map(rows.map(r => [r.requestid, r.holder as string])) : undefined
    }, 'every held-back pin claimed by a front end')
    // the victim: the front end that claimed the most of them
    const claimedBy = (fe: PindProcess): string[] => held.filter(h => holders.get(h.requestid) === fe.peerId).map(h => h.requestid)
    const v = claimedBy(fronts[0]!).length >= claimedBy(fronts[1]!).length ? 0 : 1
    const victim = fronts[v]!
    const survivor = fronts[1 - v]!
    const orphaned = claimedBy(victim)
    expect(orphaned.length).toBeGreaterThan(0)

    let dead = false
    const l = load(() => dead ? [survivor] : fronts, 8)
    await waitFor(() => l.acked.length >= 8 ? true : undefined, 'eight writes acknowledged under load', 120_000)
    // killed as it sends a settlement: the transaction reaches the chain (the payer pays), nothing is recorded
    await f.rpc[v]!.onSend(() => { victim.proc.kill('SIGKILL') })
    await victim.stop()
    dead = true
    const killedAt = Date.now()
    const ackedAtKill = l.acked.length
    // the survivor goes on taking paid writes
    await waitFor(() => l.acked.length >= ackedAtKill + 4 ? true : undefined, 'four more writes acknowledged by the survivor', 120_000)
    await l.stop()
    // requests cut by the kill failed at the client (not acknowledged); the survivor answered no 5xx
    expect(l.answers.filter(a => a.status >= 500), JSON.stringify(l.answers)).toEqual([])
    const leftByKill = (await query<{ n: number }>(f.url, "SELECT count(*)::int AS n FROM settling WHERE record->>'by' = $1", [victim.peerId]))[0]!.n
    expect(leftByKill).toBeGreaterThan(0)

    // the content of the held-back pins arrives: the survivor fetches the dead one's pins once their claims lapse
    for (const h of held) await h.complete()
    for (const h of held) await pinned(survivor, h, 150_000)
    const takeover = (Date.now() - killedAt) / 1000
    // claims lapse within 60 s of the last renewal, and the survivor looks for lapsed ones every 30 s
    expect(takeover).toBeLessThan(110)
    for (const a of l.acked) if (a.kind === 'pin') await pinned(survivor, a)

    // settlement notes the kill left: reconciled by the survivor (its lease taken over within 30 s), but a paid
    // upload's, whose staged blocks are on the dead one's disk: that waits for it
    const checked = async (what: string, which: (n: Note) => boolean): Promise<Note[]> => await waitFor(async () => {
      const rows = (await query<{ record: Note }>(f.url, 'SELECT record FROM settling')).map(r => r.record)
      return rows.filter(which).every(n => n.state != null) ? rows : undefined
    }, what, 90_000, 1000)
    const notes = await checked('the settlement notes checked against the chain by the survivor', n => n.fulfil?.upload == null)
    expect(notes.filter(n => n.state === 'paid-unfulfilled'), JSON.stringify(notes)).toEqual([])
    const staged = notes.filter(n => n.by === victim.peerId && n.fulfil?.upload != null).length

    await readsBack(survivor, [...l.acked, ...held])
    const restarted = await f.start(v)
    await readsBack(restarted, [...l.acked, ...held])
    const after = await checked('every settlement note checked against the chain', () => true)
    expect(after.filter(n => n.state === 'paid-unfulfilled'), JSON.stringify(after)).toEqual([])
    const payments = await reconciles(survivor, before)
    // at least the payment settled as it died: recorded from its note
    expect(payments - l.acked.length - held.length).toBeGreaterThan(0)
    console.log(`kill -9 of a front end: ${l.acked.length} writes acknowledged (${ackedAtKill} before the kill), ${l.errors.length} cut by it; ${orphaned.length} claimed pin(s) taken over ${takeover.toFixed(0)} s after it; ${leftByKill} settlement note(s) left by it, all reconciled (${payments - l.acked.length - held.length} paid write(s) recorded from them, ${staged} of the notes a paid upload's it had staged, left to it and checked by it once started again; ${after.length} left, unused)`)
    for (const fe of [survivor, restarted]) expect(await fe.stop()).toBe(0)
  }, 420_000)

  it('PostgreSQL stops and starts again under load: 503 with Retry-After meanwhile, both recover by themselves, nothing lost, nothing charged twice', async () => {
    const f = await fleet()
    const fronts = [await f.start(0), await f.start(1)]
    onTestFailed(() => { for (const fe of fronts) console.log(`${fe.url} (exit ${String(fe.proc.exitCode ?? fe.proc.signalCode)}):\n${fe.stderr().slice(-3000)}`) })
    const before = await balances()
    const l = load(() => fronts, 6)
    await waitFor(() => l.acked.length >= 6 ? true : undefined, 'six writes acknowledged under load', 120_000)

    await db.crash()
    const answersAtCrash = l.answers.length
    // both front ends notice: /ready answers 503, writes answer 503 with Retry-After
    for (const fe of fronts) await waitFor(async () => (await fetch(`${fe.url}/ready`)).status === 503 ? true : undefined, `${fe.url}/ready to answer 503`)
    await waitFor(() => l.answers.length >= answersAtCrash + 6 ? true : undefined, 'writes refused while the database is away')
    await db.restart()
    const ackedAtRestart = l.acked.length
    for (const fe of fronts) await waitFor(async () => (await fetch(`${fe.url}/ready`)).status === 200 ? true : undefined, `${fe.url}/ready to answer 200 again`, 60_000)
    await waitFor(() => l.acked.length >= ackedAtRestart + 6 ? true : undefined, 'six writes acknowledged after the database returned', 120_000)
    await l.stop()

    expect(l.errors).toEqual([])
    const refused = l.answers
    expect(refused.length).toBeGreaterThan(0)
    // nothing but 503 (a 402/409 would be a payment refused or used twice; any other 5xx a failure)
    expect(refused.filter(a => a.status !== 503), JSON.stringify(refused)).toEqual([])
    // a fetch cut by the outage keeps its claim (it could not be released either): it is fetched again once that
    // lapses (60 s) and a fetcher looks for lapsed claims (every 30 s)
    for (const a of l.acked) if (a.kind === 'pin') await pinned(fronts[0]!, a, 120_000)
    for (const fe of fronts) await readsBack(fe, l.acked)
    // a payment settled just before its record failed left a note: the front end that wrote it records what it
    // bought at its next reconciliation (the request is over); the others are unused (nothing was charged)
    const notes = await waitFor(async () => {
      const rows = (await query<{ record: Note }>(f.url, 'SELECT record FROM settling')).map(r => r.record)
      return rows.every(n => n.state != null) ? rows : undefined
    }, 'every settlement note checked against the chain', 60_000, 1000)
    expect(notes.filter(n => n.state === 'paid-unfulfilled'), JSON.stringify(notes)).toEqual([])
    const payments = await reconciles(fronts[0]!, before)
    console.log(`PostgreSQL restart: ${l.acked.length} writes acknowledged (${ackedAtRestart} before it returned), ${refused.length} answered 503 while it was away; ${payments - l.acked.length} paid write(s) answered 503 and recorded by reconciliation; ${notes.length} settlement note(s) left, unused`)
    for (const fe of fronts) expect(await fe.stop()).toBe(0)
  }, 300_000)
})
