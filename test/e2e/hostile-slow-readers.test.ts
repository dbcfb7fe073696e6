/**
 * Readers of slow clients against the built binary, watched through
 * /metrics: 120 connections from four addresses stall a 1 GiB gateway read
 * each; the send budget (--http-send-budget) is never exceeded and nobody is cut to make room, the process's
 * ArrayBuffers stay bounded, another client's read completes byte for byte,
 * a 33rd response from one address is answered 429, and once the attackers go
 * away the budget in use is back to 0. (The gateway tests in
 * test/http/gateway/slow-readers.test.ts run the same on disk and in S3, with
 * the minimum send rate too.)
 */
import { createHash, randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FsBackend } from '../../src/ipfs/fs-backend.js'
import { importFile } from '../../src/ipfs/import.js'
import { startPind, tempDir, type PindProcess } from '../helpers/pind.js'
import { freePort } from '../helpers/ports.js'

const MiB = 1024 * 1024
// room for each stalled response's queue (256 KiB and the piece past it): none is cut to make room (slow-readers.test.ts tests that)
const BUDGET = 48 * MiB
let pind: PindProcess
let port: number
let metricsUrl: string
let huge: string
let legit: { cid: string, bytes: Uint8Array }
const sockets: Socket[] = []

beforeAll(async () => {
  const dataDir = tempDir()
  const metricsPort = await freePort()
  pind = await startPind({
    dataDir,
    args: ['--gateway-policy', 'blockstore', '--metrics-listen', `127.0.0.1:${metricsPort}`, '--http-send-budget', '48MiB',
      '--http-min-send-rate', '0', '--http-idle-timeout', '600', '--http-max-streams-per-client', '32']
  })
  port = Number(new URL(pind.url).port)
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`
  // blocks put straight into the node's store (--gateway-policy blockstore serves what is held)
  const disk = new FsBackend(join(dataDir, 'blocks'))
  await disk.open()
  const leafBytes = randomBytes(MiB)
  const leaf = CID.createV1(raw.code, await sha256.digest(leafBytes))
  await disk.blockstore.put(leaf, leafBytes)
  const fs = new UnixFS({ type: 'file', blockSizes: Array.from({ length: 1024 }, () => BigInt(MiB)) })
  const block = dagPb.encode(dagPb.prepare({ Data: fs.marshal(), Links: Array.from({ length: 1024 }, () => ({ Hash: leaf, Tsize: MiB })) }))
  const root = CID.createV1(dagPb.code, await sha256.digest(block))
  await disk.blockstore.put(root, block)
  huge = root.toString()
  const bytes = randomBytes(6 * MiB + 321)
  const source = (async function * () { for (let at = 0; at < bytes.byteLength; at += 65536) yield bytes.subarray(at, at + 65536) })()
  legit = { cid: (await importFile(source, { blockstore: disk.blockstore, maxBytes: bytes.byteLength })).cid.toString(), bytes }
  await disk.close()
})
afterAll(async () => {
  for (const s of sockets) s.destroy()
  await pind?.stop()
})

async function metric (name: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text()
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN)
}

/** a GET of /ipfs/{cid} from `localAddress` whose client never reads; resolves with the status line once it comes */
async function stall (cid: string, localAddress: string): Promise<string> {
  return await new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1', localAddress })
    sockets.push(s)
    s.on('error', () => {})
    s.once('connect', () => { s.write(`GET /ipfs/${cid} HTTP/1.1\r\nhost: x\r\n\r\n`) })
    s.once('data', (b: Buffer) => {
      s.pause() // reads nothing more: the kernel's buffers fill, then the server's queue
      resolve(b.subarray(0, b.indexOf('\r\n')).toString())
    })
    s.once('error', reject)
  })
}

async function until (cond: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) return false
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  return true
}

describe('120 stalled readers from four addresses', () => {
  it('stay within the send budget and bounded memory; another client reads byte for byte; the 33rd from one address gets 429; the budget comes back', async () => {
    const before = await metric('pind_nodejs_array_buffers_bytes')
    const addresses = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']
    const lines = await Promise.all(addresses.flatMap(a => Array.from({ length: 30 }, async () => await stall(huge, a))))
    expect(lines.every(l => l === 'HTTP/1.1 200 OK')).toBe(true)
    // the stalled readers fill their kernel buffers, then queue up to 256 KiB each in the server
    expect(await until(async () => await metric('pind_http_send_budget_bytes') > 0, 30_000)).toBe(true)
    let maxInUse = 0
    // another client reads a file while they hold on
    const got = await new Promise<{ status: number, bytes: number, sha: string }>((resolve, reject) => {
      const h = createHash('sha256')
      let n = 0
      const sampler = setInterval(() => { void metric('pind_http_send_budget_bytes').then(v => { maxInUse = Math.max(maxInUse, v) }) }, 50)
      request(`${pind.url}/ipfs/${legit.cid}`, { agent: false }, (res) => {
        res.on('data', (b: Buffer) => { n += b.byteLength; h.update(b) })
        res.on('end', () => { clearInterval(sampler); resolve({ status: res.statusCode ?? 0, bytes: n, sha: h.digest('hex') }) })
        res.on('error', reject)
      }).on('error', reject).end()
    })
    expect(got).toEqual({ status: 200, bytes: legit.bytes.byteLength, sha: createHash('sha256').update(legit.bytes).digest('hex') })
    // a stalled reader gives up its block after 2 s: ArrayBuffers settle well under the bound here (what the budget
    // holds, the shared read-ahead, each response's 1024-link root block); the old code's 150 MiB never do
    const bounded = await until(async () => await metric('pind_nodejs_array_buffers_bytes') - before < BUDGET + 48 * MiB, 30_000)
    expect({ bounded, growthMiB: Math.round((await metric('pind_nodejs_array_buffers_bytes') - before) / MiB) }).toEqual({ bounded: true, growthMiB: expect.any(Number) })
    expect(maxInUse).toBeLessThanOrEqual(BUDGET)
    expect(await metric('pind_http_send_budget_bytes')).toBeLessThanOrEqual(BUDGET)
    expect(await metric('pind_http_send_budget_evictions_total')).toBe(0)
    // per address at most 32 gateway GETs under way: the 31st and 32nd are served, the 33rd is not
    const more = await Promise.all([stall(huge, '127.0.0.2'), stall(huge, '127.0.0.2'), stall(huge, '127.0.0.2')])
    expect(more.sort()).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK', 'HTTP/1.1 429 Too Many Requests'])
    // they go away: every byte of budget comes back
    for (const s of sockets.splice(0)) s.destroy()
    expect(await until(async () => await metric('pind_http_send_budget_bytes') === 0, 30_000)).toBe(true)
    expect(await metric('pind_http_send_budget_limit_bytes')).toBe(BUDGET)
  })
})
