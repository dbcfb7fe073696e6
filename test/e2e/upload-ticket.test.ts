/**
 * Prepaid upload tickets against the packaged binary, a dev chain and the
 * real x402 client: POST /upload/tickets (settled at once), then POST /upload
 * with X-Upload-Ticket and the payer's wallet token, whose blocks go straight
 * to the block store while the body arrives. Blocks on disk, or (vitest
 * project s3) in a bucket of a real Ceph RADOS Gateway. Last, the ledger
 * moves to a new data dir (export-ledger → import-ledger) with its tickets.
 */
import { spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, recordingPayer } from '../helpers/paying-client.js'
import { blockstoreUnderTest, type BlockstoreUnderTest } from '../helpers/backend.js'
import { BINARY, ROOT, runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'
import { rawCid } from '../../scripts/peer/index.mjs'
import { openUpload, uploadWithTicket } from '../helpers/ticket-upload.js'

let chain: DevChain
let pind: PindProcess
let blocks: BlockstoreUnderTest
let args: string[]
let env: Record<string, string>

const MiB = 1024 * 1024
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

beforeAll(async () => {
  chain = await startDevChain({ payers: 3 })
  blocks = await blockstoreUnderTest()
  const c = chainArgs(chain)
  // a fixed token issuer: the restarted binary (on another port) accepts the tokens of the first
  args = [...c.args, ...blocks.args, '--token-issuer', 'upload-ticket-test']
  env = { ...c.env, ...blocks.env }
  pind = await startPind({ binary: BINARY, args, env })
})

afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

interface Bought { ticket: string, token: string, signature: string, status: number, body: any }

async function buy (payer: number, size: number, months = 1): Promise<Bought> {
  const { pay, signature } = recordingPayer(chain, chain.payers[payer]!.privateKey)
  const r = await pay(`${pind.url}/upload/tickets`, { method: 'POST', headers: { 'x-upload-size': String(size), 'x-pin-duration-months': String(months) } })
  const body = await r.json() as any
  expect(r.status, JSON.stringify(body)).toBe(201)
  return { ticket: body.ticket, token: r.headers.get('x-wallet-auth-token') as string, signature: signature(), status: r.status, body }
}

async function gateway (cid: string): Promise<string> {
  const r = await fetch(`${pind.url}/ipfs/${cid}`)
  expect(r.status).toBe(200)
  return sha(Buffer.from(await r.arrayBuffer()))
}

async function gc (): Promise<any> {
  const r = await runPind(['gc', '--json', '--data-dir', pind.dataDir], { binary: BINARY, env: blocks.env })
  expect(r.code, r.err).toBe(0)
  return JSON.parse(r.out)
}

describe('upload tickets', () => {
  it('a ticket is quoted as /upload, sold settled, and uploads a file the gateway serves; the same payment gives the same ticket', async () => {
    const size = 2 * MiB + 12345
    // unpaid: the challenge, priced as POST /upload prices the same size and months
    const quote = await fetch(`${pind.url}/upload/tickets`, { method: 'POST', headers: { 'x-upload-size': String(size), 'x-pin-duration-months': '3' } })
    expect(quote.status).toBe(402)
    const upload402 = await fetch(`${pind.url}/upload`, { method: 'POST', headers: { 'x-upload-size': String(size), 'x-pin-duration-months': '3', 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--\r\n' })
    expect(upload402.status).toBe(402)
    expect(((await quote.json()) as any).terms?.amount ?? 'same').toBe(((await upload402.json()) as any).terms?.amount ?? 'same')
    // X-Upload-Size is required
    const noSize = await fetch(`${pind.url}/upload/tickets`, { method: 'POST' })
    expect(noSize.status).toBe(411)

    const b = await buy(0, size, 3)
    expect(b.body).toMatchObject({ bytes: size, months: 3, payer: chain.payers[0]!.address.toLowerCase(), used: false })
    expect(Date.parse(b.body.expiresAt)).toBeGreaterThan(Date.now() + 29 * 86400_000)

    // the same payment again: the same ticket, and no token
    const again = await fetch(`${pind.url}/upload/tickets`, { method: 'POST', headers: { 'x-upload-size': String(size), 'x-pin-duration-months': '3', 'payment-signature': b.signature } })
    expect(again.status).toBe(200)
    expect(((await again.json()) as any).ticket).toBe(b.ticket)
    expect(again.headers.get('x-wallet-auth-token')).toBeNull()

    const bytes = randomBytes(size)
    const r = await uploadWithTicket(pind.url, b.ticket, b.token, bytes)
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    expect(r.body).toMatchObject({ size, months: 3, status: 'pinned', owner: chain.payers[0]!.address.toLowerCase() })
    expect(await gateway(r.body.cid)).toBe(sha(bytes))
    // the pin is the owner's
    const pin = await fetch(`${pind.url}/pins/${r.body.requestid}`, { headers: { authorization: `Bearer ${b.token}` } })
    expect(pin.status).toBe(200)
    // used: once
    const twice = await uploadWithTicket(pind.url, b.ticket, b.token, randomBytes(1000))
    expect(twice.status).toBe(409)
    expect(twice.body.error.reason).toBe('CONFLICT')
    const view = await fetch(`${pind.url}/upload/tickets/${b.ticket}`, { headers: { authorization: `Bearer ${b.token}` } })
    expect(((await view.json()) as any).used).toBe(true)
  })

  it('only the payer\'s wallet token uses a ticket; unknown tickets are 404', async () => {
    const mine = await buy(0, MiB)
    const stranger = await buy(1, 1000)
    const bytes = randomBytes(MiB)
    const r = await uploadWithTicket(pind.url, mine.ticket, stranger.token, bytes)
    expect(r.status).toBe(403)
    expect(r.body.error.reason).toBe('FORBIDDEN')
    const none = await uploadWithTicket(pind.url, '00000000-0000-4000-8000-000000000000', mine.token, bytes)
    expect(none.status).toBe(404)
    const noToken = await uploadWithTicket(pind.url, mine.ticket, 'not-a-token', bytes)
    expect(noToken.status).toBe(401)
    // still usable by its payer
    const ok = await uploadWithTicket(pind.url, mine.ticket, mine.token, bytes)
    expect(ok.status).toBe(201)
    expect(await gateway(ok.body.cid)).toBe(sha(bytes))
  })

  it('two concurrent uploads with one ticket make exactly one pin', async () => {
    const b = await buy(0, 3 * MiB)
    const files = [randomBytes(3 * MiB), randomBytes(3 * MiB)]
    const rs = await Promise.all(files.map(async f => await uploadWithTicket(pind.url, b.ticket, b.token, f).catch(() => ({ status: 0, body: undefined }))))
    const ok = rs.filter(r => r.status === 201)
    expect(ok.length).toBe(1)
    expect(rs.filter(r => r.status !== 201).every(r => r.status === 409 || r.status === 0)).toBe(true)
    expect(await gateway(ok[0]!.body.cid)).toBe(sha(files[rs.indexOf(ok[0]!)]!))
  })

  it('a body over the ticket\'s size is 413 and the ticket still works', async () => {
    const b = await buy(2, MiB)
    const big = await uploadWithTicket(pind.url, b.ticket, b.token, randomBytes(2 * MiB))
    expect(big.status).toBe(413)
    const bytes = randomBytes(MiB)
    const r = await uploadWithTicket(pind.url, b.ticket, b.token, bytes)
    expect(r.status).toBe(201)
    expect(await gateway(r.body.cid)).toBe(sha(bytes))
  })

  it('failed uploads with one ticket (over its size, cut, denied) leave the store as it was, and past --upload-ticket-retries times its bytes the ticket answers 410', async () => {
    await gc()
    const start = await blocks.count(pind.dataDir)
    const b = await buy(2, 4 * MiB)
    const unchanged = async (what: string): Promise<void> => { expect(await blocks.count(pind.dataDir), what).toBe(start) }
    for (let i = 0; i < 2; i++) {
      const big = await uploadWithTicket(pind.url, b.ticket, b.token, randomBytes(5 * MiB))
      expect(big.status).toBe(413)
      await unchanged('after an upload over the ticket\'s size')
    }
    // cut: 3 MiB sent, then the client goes away
    const u = openUpload(pind.url, { 'x-upload-ticket': b.ticket, authorization: `Bearer ${b.token}` })
    await u.write(randomBytes(3 * MiB))
    await waitFor(async () => await blocks.count(pind.dataDir) >= start + 2 ? true : undefined, 'the cut upload\'s blocks in the store')
    u.abort()
    await u.response.catch(() => {})
    await waitFor(async () => await blocks.count(pind.dataDir) === start ? true : undefined, 'the cut upload\'s blocks to be removed')
    // denied content (one block: its CID is the raw block's)
    const denied = randomBytes(MiB - 100)
    const deny = await runPind(['deny', 'add', rawCid(denied).toString(), '--reason', 'test', '--data-dir', pind.dataDir], { binary: BINARY, env: blocks.env })
    expect(deny.code, deny.err).toBe(0)
    const refused = await uploadWithTicket(pind.url, b.ticket, b.token, denied)
    expect(refused.status).toBe(451)
    await unchanged('after denied content')
    // what the failures wrote counts against the ticket, which is still unused
    const view = await (await fetch(`${pind.url}/upload/tickets/${b.ticket}`, { headers: { authorization: `Bearer ${b.token}` } })).json() as any
    expect(view.used).toBe(false)
    expect(view.failedBytes).toBeGreaterThanOrEqual(4 * MiB)
    // over size again until the ticket has written 3 times its bytes (--upload-ticket-retries 3): then 410
    const statuses: number[] = []
    while (statuses.length < 6 && statuses.at(-1) !== 410) statuses.push((await uploadWithTicket(pind.url, b.ticket, b.token, randomBytes(5 * MiB))).status)
    expect(statuses.at(-1)).toBe(410)
    expect(statuses.slice(0, -1).every(s => s === 413)).toBe(true)
    const spent = await uploadWithTicket(pind.url, b.ticket, b.token, randomBytes(1000))
    expect(spent.status).toBe(410)
    expect(spent.body.error).toMatchObject({ reason: 'GONE', details: expect.stringMatching(/failed uploads have written/) })
    await unchanged('after the ticket was spent')
  })

  it('a client gone mid-body leaves its ticket usable and its blocks removed; gc never removes those of an upload in flight', async () => {
    await gc()
    const start = await blocks.count(pind.dataDir)
    // A: 4 MiB of an 8 MiB file, then the client goes away
    const a = await buy(1, 8 * MiB)
    const ua = openUpload(pind.url, { 'x-upload-ticket': a.ticket, authorization: `Bearer ${a.token}` })
    await ua.write(randomBytes(4 * MiB))
    await waitFor(async () => await blocks.count(pind.dataDir) >= start + 3 ? true : undefined, 'the aborted upload\'s blocks in the store')
    ua.abort()
    await ua.response.catch(() => {})
    // the failed upload deletes what it wrote, with no gc
    await waitFor(async () => await blocks.count(pind.dataDir) === start ? true : undefined, 'the aborted upload\'s blocks to be removed')
    const afterA = start

    // B: half its body sent, its blocks in the store and unclaimed, while gc runs
    const b = await buy(2, 6 * MiB)
    const bBytes = randomBytes(6 * MiB)
    const ub = openUpload(pind.url, { 'x-upload-ticket': b.ticket, authorization: `Bearer ${b.token}` })
    await ub.write(bBytes.subarray(0, 4 * MiB))
    await waitFor(async () => await blocks.count(pind.dataDir) >= afterA + 3 ? true : undefined, 'the upload in flight\'s blocks in the store')
    const during = await gc()
    // nothing to remove, and B's blocks stayed
    expect(during.removedBlocks).toBe(0)
    await ub.write(bBytes.subarray(4 * MiB))
    ub.end()
    const rb = await ub.response
    expect(rb.status, JSON.stringify(rb.body)).toBe(201)
    expect(await gateway(rb.body.cid)).toBe(sha(bBytes))

    // A's ticket was not used by the aborted upload
    const aBytes = randomBytes(5 * MiB)
    const ra = await uploadWithTicket(pind.url, a.ticket, a.token, aBytes)
    expect(ra.status).toBe(201)
    expect(await gateway(ra.body.cid)).toBe(sha(aBytes))
    // nothing unreferenced is left after one more gc, and every block left is a pin's
    await gc()
    const dry = JSON.parse((await runPind(['gc', '--dry-run', '--json', '--data-dir', pind.dataDir], { binary: BINARY, env: blocks.env })).out)
    expect(dry).toMatchObject({ removedBlocks: 0, scannedBlocks: dry.markedBlocks })
  })

  it('scripts/upload.mjs --ticket buys a ticket and uploads with it', async () => {
    const dir = tempDir('pind-upload-script-')
    const file = join(dir, 'file.bin')
    const bytes = randomBytes(MiB + 77)
    writeFileSync(file, bytes)
    const run = spawnSync(process.execPath, [join(ROOT, 'scripts/upload.mjs'), '--ticket', file, '2'], {
      env: { ...process.env, PIND_URL: pind.url, PAYER_KEY: chain.payers[1]!.privateKey, PIND_USDC: chain.usdc }, encoding: 'utf8'
    })
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/^ticket: +[0-9a-f-]{36} /m)
    const cid = /^cid: +(\S+)$/m.exec(run.stdout)?.[1] as string
    expect(await gateway(cid)).toBe(sha(bytes))
  })

  it('a kill -9 mid-upload leaves the ticket usable after the restart, and none of its blocks in the store', async () => {
    const b = await buy(0, 4 * MiB)
    const start = await blocks.count(pind.dataDir)
    const u = openUpload(pind.url, { 'x-upload-ticket': b.ticket, authorization: `Bearer ${b.token}` })
    await u.write(randomBytes(3 * MiB))
    await waitFor(async () => await blocks.count(pind.dataDir) >= start + 2 ? true : undefined, 'blocks of the upload in the store')
    await pind.stop('SIGKILL')
    await u.response.catch(() => {})
    pind = await startPind({ binary: BINARY, args, env, dataDir: pind.dataDir })
    // removed at start, before serve answered: no gc ran
    expect(await blocks.count(pind.dataDir)).toBe(start)
    expect(pind.stderr()).toMatch(/removed the blocks of an upload with a ticket that the last run left unfinished/)
    const view = await fetch(`${pind.url}/upload/tickets/${b.ticket}`, { headers: { authorization: `Bearer ${b.token}` } })
    expect(await view.json()).toMatchObject({ used: false, failedBytes: expect.any(Number) })
    const bytes = randomBytes(4 * MiB)
    const r = await uploadWithTicket(pind.url, b.ticket, b.token, bytes)
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    expect(await gateway(r.body.cid)).toBe(sha(bytes))
    expect((await gc()).removedBlocks).toBe(0)
  })

  it('export-ledger / import-ledger move tickets to a new data dir: an unused one is usable once there, a used one stays used, its payment gives the same ticket', async () => {
    const unused = await buy(0, 2 * MiB, 2)
    const used = await buy(1, MiB)
    const usedBytes = randomBytes(MiB)
    const up = await uploadWithTicket(pind.url, used.ticket, used.token, usedBytes)
    expect(up.status).toBe(201)

    // through the running serve, with the blocks' list
    const file = join(tempDir(), 'ledger.jsonl')
    const ex = await runPind(['export-ledger', '--with-blocks', '-o', file, '--data-dir', pind.dataDir], { binary: BINARY, env: blocks.env })
    expect(ex.code, ex.err).toBe(0)
    const text = readFileSync(file, 'utf8')
    const tickets = new Map(text.trim().split('\n').map(l => JSON.parse(l)).filter(l => l.type === 'ticket').map(l => [l.ticket_id, l]))
    expect(tickets.get(unused.ticket)).toMatchObject({ payer: chain.payers[0]!.address.toLowerCase(), bytes: 2 * MiB, months: 2, used: false, claimed_by: null, expires_at: unused.body.expiresAt })
    expect(tickets.get(used.ticket)).toMatchObject({ used: true, claimed_by: up.body.requestid })
    // no secret: neither the wallet tokens nor the signed payments (nor their signatures)
    for (const b of [unused, used]) {
      expect(text).not.toContain(b.token)
      expect(text).not.toContain(b.signature)
      const signed = JSON.parse(Buffer.from(b.signature, 'base64').toString()).payload.signature as string
      expect(signed).toMatch(/^0x[0-9a-f]{130}$/i)
      expect(text.toLowerCase()).not.toContain(signed.slice(2).toLowerCase())
    }

    // a new data dir: the ledger imported, the blocks (disk: copied; S3: the same bucket) and the
    // signing keys (so the wallet tokens stay valid, with the same --token-issuer)
    await pind.stop()
    const moved = join(tempDir(), 'moved')
    const im = await runPind(['import-ledger', file, '--json', '--data-dir', moved], { binary: BINARY })
    expect(im.code, im.err).toBe(0)
    expect(JSON.parse(im.out).tickets).toBeGreaterThanOrEqual(2)
    cpSync(join(pind.dataDir, 'keys'), join(moved, 'keys'), { recursive: true })
    if (blocks.kind === 'fs') cpSync(join(pind.dataDir, 'blocks'), join(moved, 'blocks'), { recursive: true })
    pind = await startPind({ binary: BINARY, args, env, dataDir: moved })

    // the payments that bought them, sent again: 200 with the same tickets, no new one
    for (const [b, size, months, isUsed] of [[unused, 2 * MiB, 2, false], [used, MiB, 1, true]] as const) {
      const again = await fetch(`${pind.url}/upload/tickets`, { method: 'POST', headers: { 'x-upload-size': String(size), 'x-pin-duration-months': String(months), 'payment-signature': b.signature } })
      const body = await again.json() as any
      expect(again.status, JSON.stringify(body)).toBe(200)
      expect(body).toMatchObject({ ticket: b.ticket, used: isUsed })
      expect(again.headers.get('x-wallet-auth-token')).toBeNull()
    }
    // the used one stays used, and its pin is served
    const view = await fetch(`${pind.url}/upload/tickets/${used.ticket}`, { headers: { authorization: `Bearer ${used.token}` } })
    expect(((await view.json()) as any).used).toBe(true)
    expect((await uploadWithTicket(pind.url, used.ticket, used.token, randomBytes(1000))).status).toBe(409)
    expect(await gateway(up.body.cid)).toBe(sha(usedBytes))
    // the unused one: once
    const bytes = randomBytes(2 * MiB)
    const r = await uploadWithTicket(pind.url, unused.ticket, unused.token, bytes)
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    expect(r.body).toMatchObject({ months: 2, owner: chain.payers[0]!.address.toLowerCase() })
    expect(await gateway(r.body.cid)).toBe(sha(bytes))
    expect((await uploadWithTicket(pind.url, unused.ticket, unused.token, randomBytes(1000))).status).toBe(409)
  })
})
