/**
 * Takedowns end to end (issue 15, item 4): the packaged binary on a real
 * chain, real uploads paid with @x402/fetch, and real second nodes
 * (scripts/peer) asking for blocks over bitswap.
 *
 * - `pind deny add` through the running serve: the pinned CID answers 410 at
 *   the gateway, bitswap no longer sends it, its owner sees why in GET
 *   /pins; POST /pins, replace and renew of it answer 451 before any 402;
 *   an upload of the same content answers 451 after its payment was
 *   verified and before it was settled: the payer keeps every cent and
 *   nothing is recorded. `deny rm` serves it again on both channels.
 * - A .deny file of --denylist (a directory): a malformed line is logged
 *   with file:line and skipped; a Bad Bits (legacy sha256) line and a modern
 *   double-hashed line deny, and adding and removing them is followed
 *   without a restart.
 * - A pin by CID whose DAG holds a denied block is fetched but not committed
 *   (nor served) while the block is denied, and is pinned once the denial
 *   is lifted.
 * - `deny add` on a stopped data dir is in force when serve starts again.
 * - A --denylist that does not exist is a configuration error.
 */
import { createHash, randomBytes } from 'node:crypto'
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { base32 } from 'multiformats/bases/base32'
import { base58btc } from 'multiformats/bases/base58'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../scripts/devchain/index.mjs'
import { rawCid, startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { BINARY, runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

let chain: DevChain
let pind: PindProcess
const peers: Peer[] = []
const dataDir = tempDir()
const listsDir = join(tempDir('pind-lists-'), 'denylists')
const listFile = join(listsDir, 'local.deny')
const LIST_HEAD = 'version: 1\nname: local takedowns\n---\n# one bad line follows, on line 5\n/ipfs/not-a-cid\n'

const serve = async (): Promise<PindProcess> => {
  const { args, env } = chainArgs(chain)
  pind = await startPind({ dataDir, binary: BINARY, args: [...args, '--denylist', listsDir], env })
  return pind
}

const deny = async (...args: string[]): Promise<{ code: number | null, out: string, err: string }> =>
  await runPind(['deny', ...args, '--data-dir', dataDir])

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  mkdirSync(listsDir)
  writeFileSync(listFile, LIST_HEAD)
  await serve()
})

afterAll(async () => {
  for (const p of peers) await p.stop().catch(() => {})
  await pind?.stop()
  await chain?.stop()
})

async function upload (bytes: Buffer, payer = 0): Promise<{ cid: string, requestid: string, token: string }> {
  const r = await payingFetch(chain, chain.payers[payer]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
  expect(r.status, await r.clone().text()).toBe(201)
  const body = await r.json() as any
  return { cid: body.cid, requestid: body.requestid, token: r.headers.get('x-wallet-auth-token') as string }
}

/** A fresh node that dials pind and wants `cid` over bitswap. */
async function overBitswap (cid: string, ms: number): Promise<Buffer> {
  const peer = await startPeer()
  peers.push(peer)
  await peer.dial(pind.multiaddrs[0] as string)
  return await peer.cat(cid, AbortSignal.timeout(ms))
}

async function gatewayStatus (cid: string): Promise<{ status: number, body: any }> {
  const r = await fetch(`${pind.url}/ipfs/${cid}`)
  const text = await r.text()
  return { status: r.status, body: r.headers.get('content-type')?.includes('json') === true ? JSON.parse(text) : text }
}

const legacyHash = (cid: string): string => createHash('sha256').update(`${CID.parse(cid).toV1().toString(base32)}/`).digest('hex')
const modernHash = (cid: string): string => base58btc.baseEncode(Digest.create(0x12, createHash('sha256').update(base58btc.baseEncode(CID.parse(cid).multihash.bytes)).digest()).bytes)

describe('takedowns through a running serve', () => {
  let x: { cid: string, requestid: string, token: string }
  const bytes = randomBytes(1_500_000) // two blocks and a root

  it('logs a malformed denylist line with its file:line and serves on', async () => {
    await waitFor(() => pind.stderr().includes('denylist line skipped') ? true : undefined, 'the skipped line in the log')
    const line = pind.stderr().split('\n').find(l => l.includes('denylist line skipped')) as string
    expect(JSON.parse(line)).toMatchObject({ level: 'warn', at: `${listFile}:5`, problem: expect.stringMatching(/not a CID/) })
    expect((await fetch(`${pind.url}/health`)).status).toBe(200)
  })

  it('deny add: the gateway answers 410, bitswap sends nothing, the owner sees why', async () => {
    x = await upload(bytes)
    expect((await overBitswap(x.cid, 30_000)).equals(bytes)).toBe(true)

    const added = await runPind(['deny', 'add', x.cid, '--reason', 'DMCA notice 2026-0113', '--data-dir', dataDir, '--json'], { binary: BINARY })
    expect(added.code, added.err).toBe(0)
    expect(JSON.parse(added.out)).toMatchObject({ via: 'serve', livePins: [x.requestid], added: { rule: `/ipfs/${x.cid}`, reason: 'DMCA notice 2026-0113' } })
    expect(added.err).toMatch(/via the running pind serve/)

    const g = await gatewayStatus(x.cid)
    expect(g.status).toBe(410)
    expect(g.body.error).toEqual({ reason: 'GONE', details: expect.stringMatching(/not served by this gateway: denied by the operator of this service \(DMCA notice 2026-0113\)/) })
    await expect(overBitswap(x.cid, 4_000)).rejects.toThrow()

    const status = await (await fetch(`${pind.url}/pins/${x.requestid}`, { headers: { authorization: `Bearer ${x.token}` } })).json() as any
    expect(status.status).toBe('pinned')
    expect(status.info.denied).toMatch(/DMCA notice 2026-0113/)
    expect(status.info.status_details).toMatch(/^not served: denied by the operator/)
  })

  it('POST /pins, replace and renew of denied content answer 451 before any 402', async () => {
    const json = { 'content-type': 'application/json' }
    for (const [path, headers] of [
      ['/pins', json],
      [`/pins/${x.requestid}`, { ...json, authorization: `Bearer ${x.token}` }],
      [`/pins/${x.requestid}/renew`, { ...json, authorization: `Bearer ${x.token}`, 'x-pin-duration-months': '2' }]
    ] as const) {
      const r = await fetch(`${pind.url}${path}`, { method: 'POST', headers, body: JSON.stringify({ cid: x.cid }) })
      expect(r.status, path).toBe(451)
      expect(r.headers.get('payment-required'), path).toBeNull()
      expect(r.headers.get('link'), path).toBe(`<${pind.url}>; rel="blocked-by"`)
      expect(await r.json(), path).toEqual({ error: { reason: 'UNAVAILABLE_FOR_LEGAL_REASONS', details: expect.stringMatching(/denied by the operator of this service \(DMCA notice 2026-0113\); nothing was charged/) } })
    }
  })

  it('an upload of denied content answers 451 after it is read and before it is paid: the payer is not charged, nothing is kept', async () => {
    const payer = chain.payers[1]!.address
    const before = await usdcBalance(chain, payer)
    const r = await payingFetch(chain, chain.payers[1]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
    expect(r.status).toBe(451)
    expect(((await r.json()) as any).error.reason).toBe('UNAVAILABLE_FOR_LEGAL_REASONS')
    expect(await usdcBalance(chain, payer)).toBe(before)
    const notes = await runPind(['settlements', 'list', '--json', '--data-dir', dataDir])
    expect(JSON.parse(notes.out).notes).toEqual([])
  })

  it('deny rm serves it again, over HTTP and bitswap', async () => {
    const rm = await deny('rm', `/ipfs/${x.cid}`, '--reason', 'counter-notice', '--json')
    expect(rm.code, rm.err).toBe(0)
    expect(JSON.parse(rm.out).removed.reason).toBe('DMCA notice 2026-0113')
    const g = await fetch(`${pind.url}/ipfs/${x.cid}`)
    expect(g.status).toBe(200)
    expect(Buffer.from(await g.arrayBuffer()).equals(bytes)).toBe(true)
    expect((await overBitswap(x.cid, 30_000)).equals(bytes)).toBe(true)
    const ls = JSON.parse((await deny('ls', '--history', '--json')).out)
    expect(ls.rules).toEqual([])
    expect(ls.history.map((e: any) => e.op)).toEqual(['add', 'rm'])
    expect(ls.denylists).toEqual([expect.objectContaining({ file: listFile, rules: 0, skipped: 1 })])
  })
})

describe('pins by CID and denials', () => {
  it('a DAG holding a denied block is not committed while it is denied; lifted, it is pinned', async () => {
    const origin = await startPeer()
    peers.push(origin)
    const { cid, bytes } = await origin.addRandom(1_500_000) // a root over two raw leaves
    const leaf = rawCid(bytes.subarray(1024 * 1024)).toString()
    expect((await deny('add', leaf, '--reason', 'a bad leaf')).code).toBe(0)
    const minted = await runPind(['keys', 'mint', '--owner', '0x00000000000000000000000000000000000000d1', '--unpaid-pins', '--json', '--data-dir', dataDir])
    const auth = { authorization: `Bearer ${JSON.parse(minted.out).token as string}` }
    const created = await fetch(`${pind.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify({ cid, origins: origin.multiaddrs() }) })
    expect(created.status).toBe(202)
    const id = ((await created.json()) as any).requestid as string
    const statusOf = async (): Promise<any> => await (await fetch(`${pind.url}/pins/${id}`, { headers: auth })).json()
    const waiting = await waitFor(async () => { const s = await statusOf(); return /not committed: the DAG holds/.test(s.info.status_details) ? s : undefined }, 'the fetched DAG refused')
    expect(waiting.status).toBe('queued')
    expect(waiting.info.status_details).toContain(leaf)
    expect((await fetch(`${pind.url}/ipfs/${cid}`)).status).toBe(404)

    expect((await deny('rm', leaf)).code).toBe(0)
    await waitFor(async () => (await statusOf()).status === 'pinned' ? true : undefined, 'the pin, once the denial is lifted')
    const g = await fetch(`${pind.url}/ipfs/${cid}`)
    expect(Buffer.from(await g.arrayBuffer()).equals(bytes)).toBe(true)
  })
})

describe('denylist files, followed while serve runs', () => {
  it('a Bad Bits (legacy) line and a modern double-hashed line deny; removing them serves again; no restart', async () => {
    const y = await upload(randomBytes(300_000))
    expect((await gatewayStatus(y.cid)).status).toBe(200)
    for (const hash of [legacyHash(y.cid), modernHash(y.cid)]) {
      appendFileSync(listFile, `//${hash}\n`)
      const g = await waitFor(async () => { const s = await gatewayStatus(y.cid); return s.status === 410 ? s : undefined }, `the added line //${hash}`)
      expect(g.body.error.details).toMatch(/on the denylist local\.deny/)
      const pin = await fetch(`${pind.url}/pins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cid: y.cid }) })
      expect(pin.status).toBe(451)
      writeFileSync(listFile, LIST_HEAD)
      await waitFor(async () => (await gatewayStatus(y.cid)).status === 200 ? true : undefined, 'the removed line')
    }
  })
})

describe('takedowns on a stopped data dir', () => {
  it('deny add while serve is stopped is in force when it starts again', async () => {
    const w = await upload(randomBytes(100_000))
    expect(await pind.stop()).toBe(0)
    const added = await deny('add', w.cid, '--reason', 'court order', '--by', 'legal-team')
    expect(added.code, added.err).toBe(0)
    expect(added.err).toMatch(/on the data dir .* \(no serve running\); it applies when serve starts/)
    expect(JSON.parse((await deny('ls', '--json')).out).rules).toEqual([expect.objectContaining({ rule: `/ipfs/${w.cid}`, by: 'legal-team', reason: 'court order' })])
    await serve()
    expect((await gatewayStatus(w.cid)).status).toBe(410)
    const check = await deny('check', w.cid, '--json')
    expect(JSON.parse(check.out)).toMatchObject({ via: 'serve', denied: true, denial: { source: 'operator', by: 'legal-team' } })
  })

  it('a --denylist that does not exist is a configuration error', async () => {
    const r = await runPind(['serve', '--data-dir', tempDir(), '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0', '--denylist', join(listsDir, 'missing.deny')], { binary: BINARY })
    expect(r.code).toBe(2)
    expect(r.err).toMatch(/--denylist .*missing\.deny: no such file or directory/)
  })
})
