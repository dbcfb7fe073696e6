/**
 * The whole /pins API through @ipfs-shipyard/pinning-service-client (the
 * generated client real apps use) with an operator-issued token from
 * `pind keys mint --unpaid-pins` (the way Kubo's `pin remote` would use
 * pind): create by CID from a separate Helia origin, list with filters,
 * page with `before`, replace, delete, revoke. Then the fetch queue
 * survives a restart of the packaged binary.
 */
import { Configuration, RemotePinningServiceClient, Status, type PinStatus } from '@ipfs-shipyard/pinning-service-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPeer, type Peer } from '../../scripts/peer/index.mjs'
import { BINARY, runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

const OWNER = '0x00000000000000000000000000000000000000a1'
let pind: PindProcess
let origin: Peer
let token = ''
const peers: Peer[] = []

const client = (t = token): RemotePinningServiceClient => new RemotePinningServiceClient(new Configuration({ endpointUrl: pind.url, accessToken: t }))

async function mint (dataDir: string, owner: string, extra: string[] = [], binary?: string): Promise<string> {
  const r = await runPind(['keys', 'mint', '--data-dir', dataDir, '--owner', owner, '--json', ...extra], binary != null ? { binary } : {})
  expect(r.code, r.err).toBe(0)
  expect(r.err).toMatch(/via the running pind serve/)
  return JSON.parse(r.out).token as string
}

async function until (c: RemotePinningServiceClient, requestid: string, states: Status[], timeoutMs = 30_000): Promise<PinStatus> {
  return await waitFor(async () => {
    const s = await c.pinsRequestidGet({ requestid })
    return states.includes(s.status) ? s : undefined
  }, `pin ${requestid} to reach ${states.join('/')}`, timeoutMs)
}

beforeAll(async () => {
  origin = await startPeer()
  peers.push(origin)
  pind = await startPind()
  token = await mint(pind.dataDir, OWNER, ['--unpaid-pins', '--note', 'pinning client test'])
})

afterAll(async () => {
  await pind?.stop()
  for (const p of peers) await p.stop().catch(() => {})
})

describe('pins by CID with an operator token, through the pinning service client', () => {
  const created: PinStatus[] = []

  it('creates pins without payment and fetches them from the origin', async () => {
    for (let i = 0; i < 26; i++) {
      const { cid } = await origin.addRandom(1000 + i)
      const s = await client().pinsPost({ pin: { cid, name: i % 2 === 0 ? `Even-${i}` : `odd-${i}`, origins: origin.multiaddrs(), meta: { batch: i < 13 ? 'a' : 'b' } } })
      expect([Status.Queued, Status.Pinning, Status.Pinned]).toContain(s.status)
      expect(s.info?.payment_method).toBe('operator-token')
      created.push(s)
    }
    for (const s of created) expect((await until(client(), s.requestid, [Status.Pinned, Status.Failed])).status).toBe(Status.Pinned)
  })

  it('lists with every filter and pages through all pins with before', async () => {
    const c = client()
    expect((await c.pinsGet({})).count).toBe(26)
    expect((await c.pinsGet({ cid: [created[0]!.pin.cid, created[1]!.pin.cid] })).count).toBe(2)
    expect((await c.pinsGet({ name: 'Even-4' })).count).toBe(1)
    expect((await c.pinsGet({ name: 'even-4', match: 'iexact' as any })).count).toBe(1)
    expect((await c.pinsGet({ name: 'Even', match: 'partial' as any })).count).toBe(13)
    expect((await c.pinsGet({ name: 'ODD', match: 'ipartial' as any })).count).toBe(13)
    expect((await c.pinsGet({ status: [Status.Queued, Status.Pinning, Status.Failed] })).count).toBe(0)
    expect((await c.pinsGet({ meta: { batch: 'b' } })).count).toBe(13)
    expect((await c.pinsGet({ after: created[20]!.created, limit: 1000 })).count).toBe(5)
    const seen: string[] = []
    let before: Date | undefined
    for (let page = 0; page < 20; page++) {
      const r = await c.pinsGet({ limit: 4, ...(before != null ? { before } : {}) })
      const list = [...r.results]
      seen.push(...list.map(p => p.requestid))
      if (r.count === list.length) break
      before = list[list.length - 1]!.created
    }
    expect(seen).toEqual(created.map(p => p.requestid).reverse())
  })

  it('replaces a pin: a new requestid, the old one gone, content kept when shared', async () => {
    const old = created[0]!
    const { cid, bytes } = await origin.addRandom(5000)
    const next = await client().pinsRequestidPost({ requestid: old.requestid, pin: { cid, name: 'replacement', origins: origin.multiaddrs() } })
    expect(next.requestid).not.toBe(old.requestid)
    expect(next.pin.cid).toBe(cid)
    await expect(client().pinsRequestidGet({ requestid: old.requestid })).rejects.toMatchObject({ status: 404 })
    expect((await until(client(), next.requestid, [Status.Pinned, Status.Failed])).status).toBe(Status.Pinned)
    expect(Buffer.from(await (await fetch(`${pind.url}/ipfs/${cid}`)).arrayBuffer()).equals(bytes)).toBe(true)
    expect((await fetch(`${pind.url}/ipfs/${old.pin.cid}`)).status).toBe(404)
    expect((await client().pinsGet({})).count).toBe(26)

    // replacing with the same CID keeps serving it throughout
    const same = await client().pinsRequestidPost({ requestid: next.requestid, pin: { cid, name: 'renamed', origins: [] } })
    expect((await fetch(`${pind.url}/ipfs/${cid}`)).status).toBe(200)
    expect((await until(client(), same.requestid, [Status.Pinned, Status.Failed])).pin.name).toBe('renamed')
    created[0] = same
  })

  it('deletes a pin, and another owner cannot see or replace it', async () => {
    const other = await mint(pind.dataDir, '0x00000000000000000000000000000000000000b2', ['--unpaid-pins'])
    const target = created[1]!
    await expect(client(other).pinsRequestidGet({ requestid: target.requestid })).rejects.toMatchObject({ status: 404 })
    await expect(client(other).pinsRequestidPost({ requestid: target.requestid, pin: { cid: target.pin.cid } })).rejects.toMatchObject({ status: 404 })
    await expect(client(other).pinsRequestidDelete({ requestid: target.requestid })).rejects.toMatchObject({ status: 404 })
    await client().pinsRequestidDelete({ requestid: target.requestid })
    await expect(client().pinsRequestidGet({ requestid: target.requestid })).rejects.toMatchObject({ status: 404 })
    expect((await client().pinsGet({})).count).toBe(25)
  })

  it('a token without the permission must pay; a revoked operator token gets 401', async () => {
    const plain = await mint(pind.dataDir, OWNER)
    const r = await fetch(`${pind.url}/pins`, { method: 'POST', headers: { authorization: `Bearer ${plain}`, 'content-type': 'application/json' }, body: JSON.stringify({ cid: created[2]!.pin.cid }) })
    expect(r.status).toBe(503) // this server takes no payments, so an unpaid write cannot proceed
    expect((await r.json() as any).error.details).toMatch(/payments are not configured/)

    const revoked = await runPind(['keys', 'revoke', token, '--data-dir', pind.dataDir])
    expect(revoked.code, revoked.err).toBe(0)
    const after = await fetch(`${pind.url}/pins`, { headers: { authorization: `Bearer ${token}` } })
    expect(after.status).toBe(401)
    expect((await after.json() as any).error).toEqual({ reason: 'UNAUTHORIZED', details: 'token revoked' })
    // the JWKS document lets others verify tokens
    const jwks = await (await fetch(`${pind.url}/.well-known/jwks.json`)).json() as any
    expect(jwks.keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519' })
    expect(JSON.stringify(jwks)).not.toMatch(/"d"/)
  })
})

describe('the fetch queue across a restart of the binary', () => {
  it('resumes a queued pin after the binary restarts and the origin comes online', async () => {
    const dataDir = tempDir()
    const blocksDir = tempDir('pind-origin-')
    const first = await startPeer({ blocksDir })
    const { cid, bytes } = await first.addRandom(2 * 1024 * 1024)
    const addr = first.multiaddrs()[0] as string
    const port = Number(/tcp\/(\d+)/.exec(addr)?.[1])
    const key = first.privateKey
    await first.stop()

    let served = await startPind({ dataDir, binary: BINARY, args: ['--pin-stall-timeout', '1s', '--token-issuer', 'pind-restart-test'] })
    const t = await mint(dataDir, OWNER, ['--unpaid-pins'], BINARY)
    const c = new RemotePinningServiceClient(new Configuration({ endpointUrl: served.url, accessToken: t }))
    const s = await c.pinsPost({ pin: { cid, origins: [addr] } })
    await waitFor(async () => /waiting to retry/.test((await c.pinsRequestidGet({ requestid: s.requestid })).info?.status_details ?? '') ? true : undefined, 'a failed attempt')
    expect(await served.stop()).toBe(0)

    const back = await startPeer({ blocksDir, port, privateKey: key })
    peers.push(back)
    served = await startPind({ dataDir, binary: BINARY, args: ['--pin-stall-timeout', '1s', '--token-issuer', 'pind-restart-test'] })
    try {
      const c2 = new RemotePinningServiceClient(new Configuration({ endpointUrl: served.url, accessToken: t }))
      // the backoff after the first failures is at most a few seconds
      const done = await waitFor(async () => {
        const x = await c2.pinsRequestidGet({ requestid: s.requestid })
        return x.status === Status.Pinned || x.status === Status.Failed ? x : undefined
      }, 'the resumed pin', 60_000)
      expect(done.status).toBe(Status.Pinned)
      expect(Buffer.from(await (await fetch(`${served.url}/ipfs/${cid}`)).arrayBuffer()).equals(bytes)).toBe(true)
    } finally {
      await served.stop()
    }
  })
})
