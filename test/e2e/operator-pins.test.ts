/**
 * The operator's tools on real pins (issue 15, items 4 and 6): `pind pins ls`
 * over every owner with GET /pins's filters, `pind pins rm` taking content
 * down with a reason its owner sees in status_details (live through the admin
 * socket and offline on the stopped data dir), `pind status` live and
 * offline, and blockstore metrics that follow uploads and gc at once.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { freePort } from '../helpers/ports.js'

let chain: DevChain
let pind: PindProcess
let metricsUrl: string
const dataDir = tempDir()
const uploads: Array<{ requestid: string, cid: string, token: string, owner: string, bytes: Buffer }> = []

const start = async (): Promise<PindProcess> => {
  const port = await freePort()
  metricsUrl = `http://127.0.0.1:${port}/metrics`
  const { args, env } = chainArgs(chain)
  // a fixed public URL: it is the token issuer, so the owners' tokens work across the restart
  return await startPind({ dataDir, args: [...args, '--metrics-listen', `127.0.0.1:${port}`, '--public-url', 'http://pind.test'], env })
}
const pins = async (...args: string[]): ReturnType<typeof runPind> => await runPind(['pins', ...args, '--data-dir', dataDir])
const gauge = async (name: string): Promise<number> => {
  const line = (await (await fetch(metricsUrl)).text()).split('\n').find(l => l.startsWith(`${name} `))
  return Number(line?.split(' ')[1])
}

beforeAll(async () => {
  chain = await startDevChain({ payers: 2 })
  pind = await start()
})
afterAll(async () => {
  await pind?.stop()
  await chain?.stop()
})

describe('operator tools on real pins', () => {
  it('blockstore metrics follow an upload at once', async () => {
    expect(await gauge('pind_blockstore_blocks')).toBe(0)
    for (const [i, size] of [[0, 2_500_000], [1, 700_000], [1, 900_000]] as const) {
      const payer = chain.payers[i]!
      const bytes = randomBytes(size)
      const r = await payingFetch(chain, payer.privateKey)(`${pind.url}/upload`, { method: 'POST', headers: { 'x-pin-duration-months': '2' }, body: uploadForm(bytes, `file-${uploads.length}.bin`) })
      expect(r.status, await r.clone().text()).toBe(201)
      const b = await r.json() as any
      uploads.push({ requestid: b.requestid, cid: b.cid, token: r.headers.get('x-wallet-auth-token') as string, owner: payer.address.toLowerCase(), bytes })
    }
    // 2.5 MB: 3 leaves + a root; 0.7 MB and 0.9 MB: one raw block each
    expect(await gauge('pind_blockstore_blocks')).toBe(6)
    expect(await gauge('pind_blockstore_bytes')).toBeGreaterThan(4_100_000)
  })

  it('pins ls lists every owner\'s pins, newest first, with the filters of GET /pins', async () => {
    const all = await pins('ls', '--json')
    expect(all.code, all.err).toBe(0)
    expect(all.err).toMatch(/via the running pind serve/)
    const listed = JSON.parse(all.out)
    expect(listed.count).toBe(3)
    expect(listed.results.map((p: any) => p.requestid)).toEqual(uploads.map(u => u.requestid).reverse())
    expect(listed.results.map((p: any) => p.owner)).toEqual(uploads.map(u => u.owner).reverse())
    const one = JSON.parse((await pins('ls', '--owner', chain.payers[1]!.address, '--limit', '1', '--json')).out)
    expect(one.count).toBe(2)
    expect(one.results).toHaveLength(1)
    expect(one.results[0].requestid).toBe(uploads[2]!.requestid)
    const byCid = JSON.parse((await pins('ls', '--cid', uploads[0]!.cid, '--json')).out)
    expect(byCid.results.map((p: any) => p.requestid)).toEqual([uploads[0]!.requestid])
    const byName = JSON.parse((await pins('ls', '--name', 'FILE-1.BIN', '--match', 'iexact', '--json')).out)
    expect(byName.results.map((p: any) => p.requestid)).toEqual([uploads[1]!.requestid])
    const text = await pins('ls')
    expect(text.out).toMatch(/^3 pin\(s\) match/)
    expect(text.out).toContain(uploads[0]!.cid)
    const bad = await pins('ls', '--status', 'gone')
    expect(bad.code).toBe(1)
    expect(bad.err).toMatch(/status takes comma-separated values/)
  })

  it('pins rm <cid> takes content down at once: not served, the owner sees the reason, gc frees its blocks', async () => {
    const u = uploads[0]!
    expect((await fetch(`${pind.url}/ipfs/${u.cid}`)).status).toBe(200)
    const noReason = await pins('rm', u.cid)
    expect(noReason.code).toBe(2)
    const r = await pins('rm', u.cid, '--reason', 'DMCA notice 2026-114', '--json')
    expect(r.code, r.err).toBe(0)
    const out = JSON.parse(r.out)
    expect(out.removed.map((p: any) => p.requestid)).toEqual([u.requestid])
    expect(out.stillServedBy).toEqual([])
    expect((await fetch(`${pind.url}/ipfs/${u.cid}`)).status).not.toBe(200)
    const seen = await (await fetch(`${pind.url}/pins/${u.requestid}`, { headers: { authorization: `Bearer ${u.token}` } })).json() as any
    expect(seen.status).toBe('failed')
    expect(seen.info.status_details).toMatch(/^removed by the operator on \d{4}-\d\d-\d\dT[\d:.]+Z: DMCA notice 2026-114$/)
    const failed = await (await fetch(`${pind.url}/pins?status=failed`, { headers: { authorization: `Bearer ${u.token}` } })).json() as any
    expect(failed.results.map((p: any) => p.requestid)).toEqual([u.requestid])
    expect((await pins('rm', u.cid, '--reason', 'again')).code).toBe(1) // nothing left to take down
    const renew = await fetch(`${pind.url}/pins/${u.requestid}/renew`, { method: 'POST', headers: { authorization: `Bearer ${u.token}`, 'x-pin-duration-months': '1' } })
    expect(renew.status).toBe(409)

    const gc = await runPind(['gc', '--data-dir', dataDir, '--json'])
    expect(gc.code, gc.err).toBe(0)
    expect(JSON.parse(gc.out).removedBlocks).toBe(4)
    expect(await gauge('pind_blockstore_blocks')).toBe(2)
  })

  it('pind status (live): pins by status, bytes stored, disk free, revenue by month, peers, payments, settlement notes', async () => {
    const r = await runPind(['status', '--data-dir', dataDir, '--json'])
    expect(r.code, r.err).toBe(0)
    const s = JSON.parse(r.out)
    expect(s.via).toBe('serve')
    expect(s.pins).toMatchObject({ pinned: 2, failed: 1, takenDown: 1, queued: 0, removed: 0 })
    expect(s.storage.blocks).toBe(2)
    expect(s.storage.bytes).toBe(uploads[1]!.bytes.length + uploads[2]!.bytes.length)
    expect(s.storage.diskFreeBytes).toBeGreaterThan(0)
    const month = new Date().toISOString().slice(0, 7)
    expect(s.revenue.byMonth).toHaveLength(1)
    expect(s.revenue.byMonth[0]).toMatchObject({ month, payments: 3 })
    expect(BigInt(s.revenue.total)).toBeGreaterThan(0n)
    expect(s.serve).toMatchObject({ pid: pind.pid, peerId: pind.peerId, peers: { connected: 0 }, payments: { state: 'ready', ok: true, settler: chain.settlerAddress } })
    expect(s.settlementNotes).toMatchObject({ unchecked: 0, 'paid-unfulfilled': 0 })
    // the one front end of its ledger, running every piece of background work
    expect(s.frontEnds).toEqual([expect.objectContaining({ id: pind.peerId, url: pind.url })])
    expect([...s.frontEnds[0].leases].sort()).toEqual(['archive', 'expiry sweep', 'front end takeover', 'gc', 'settlement reconciliation'])
    const text = await runPind(['status', '--data-dir', dataDir])
    expect(text.out).toMatch(/^serve:\s+running \(pid \d+/m)
    expect(text.out).toMatch(/^pins:\s+2 pinned, 0 queued, 0 pinning, 1 failed \(1 taken down\)/m)
    expect(text.out).toMatch(new RegExp(`^  ${month}\\s+\\S+ USDC  3 payment\\(s\\)`, 'm'))
    expect(text.out).toMatch(new RegExp(`^  ${pind.peerId} at ${pind.url}, seen \\S+; runs `, 'm'))
  })

  it('offline, on the stopped data dir: pins ls, pins rm <requestid>, status; a restarted serve keeps the takedown', async () => {
    expect(await pind.stop()).toBe(0)
    const failed = await pins('ls', '--status', 'failed', '--json')
    expect(failed.code, failed.err).toBe(0)
    expect(failed.err).toMatch(/on the data dir .* \(no serve running\)/)
    expect(JSON.parse(failed.out).results.map((p: any) => p.requestid)).toEqual([uploads[0]!.requestid])
    const u = uploads[2]!
    const rm = await pins('rm', u.requestid, '--reason', 'malware reported by abuse@')
    expect(rm.code, rm.err).toBe(0)
    expect(rm.out).toMatch(new RegExp(`took down ${u.requestid}`))
    expect((await pins('rm', '00000000-0000-4000-8000-000000000000', '--reason', 'x')).code).toBe(1)
    const status = JSON.parse((await runPind(['status', '--data-dir', dataDir, '--json'])).out)
    expect(status).toMatchObject({ via: 'data-dir', serve: null, pins: { pinned: 1, failed: 2, takenDown: 2 } })

    pind = await start()
    expect((await fetch(`${pind.url}/ipfs/${u.cid}`)).status).not.toBe(200)
    expect((await fetch(`${pind.url}/ipfs/${uploads[1]!.cid}`)).status).toBe(200)
    const seen = await (await fetch(`${pind.url}/pins/${u.requestid}`, { headers: { authorization: `Bearer ${u.token}` } })).json() as any
    expect(seen).toMatchObject({ status: 'failed', info: { status_details: expect.stringMatching(/malware reported by abuse@$/) } })
    // the export carries the takedown
    const exported = await runPind(['export-ledger', '--data-dir', dataDir, '--records', 'pins'])
    const line = exported.out.split('\n').find(l => l.includes(u.requestid)) as string
    expect(JSON.parse(line)).toMatchObject({ status: 'failed', takedown_reason: 'malware reported by abuse@', takedown_at: expect.any(String) })
  })
})
