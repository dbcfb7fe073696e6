/**
 * The connection under the SDK (undici, set in S3Connection): the S3 backend
 * talks to the run's real Ceph RADOS Gateway through a loopback proxy that
 * counts the connections it is given, and can hold a response or cut a body
 * halfway.
 * - Sockets: never more than S3_TUNING.maxSockets open at once, and kept
 *   alive: a second wave of requests opens no new connection.
 * - Abort: a read given up by its caller ends with the caller's reason at
 *   once, closes its connection, and the bucket is not taken for down.
 * - A body cut halfway is an outage (503, the bucket marked down), not a bug
 *   (500), and the probe brings the bucket back by itself.
 */
import { randomBytes } from 'node:crypto'
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawCid } from '../../scripts/peer/index.mjs'
import { blockName, StorageUnavailableError } from '../../src/ipfs/block-backend.js'
import { openS3Backend } from '../../src/ipfs/open-backend.js'
import type { S3Backend } from '../../src/ipfs/s3-backend.js'
import { S3_TUNING } from '../../src/ipfs/s3-client.js'
import { silentLogger } from '../../src/kernel/log.js'
import { newBucket, s3, S3_PREFIX } from '../helpers/backend.js'
import { waitFor } from '../helpers/ports.js'

let proxy: Server
let backend: S3Backend
/** what the proxy does with the next GET of this key (then it forwards again) */
let special: { key: string, mode: 'hold' | 'cut', seen?: () => void, closed?: () => void } | undefined
let delayMs = 0
let open = 0
let maxOpen = 0
let opened = 0

function forward (req: IncomingMessage, res: ServerResponse, upstream: URL, onHead?: (up: IncomingMessage) => void): void {
  const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
    if (onHead != null) { onHead(up); return }
    res.writeHead(up.statusCode ?? 502, up.headers)
    up.pipe(res)
  })
  out.on('error', () => { res.destroy() })
  req.pipe(out)
}

beforeAll(async () => {
  const upstream = new URL(s3().endpoint)
  proxy = createServer((req, res) => {
    const s = special
    if (s != null && req.method === 'GET' && req.url?.split('?')[0]?.endsWith(s.key) === true) {
      special = undefined
      if (s.mode === 'hold') {
        req.socket.on('close', () => s.closed?.())
        s.seen?.()
        return // never answers
      }
      // cut: the headers and the first piece of the body, then the connection is gone
      forward(req, res, upstream, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers)
        up.once('data', (piece: Buffer) => { res.write(piece.subarray(0, Math.min(piece.length, 1000)), () => { res.socket?.destroy() }); up.destroy() })
      })
      return
    }
    if (delayMs > 0) setTimeout(() => { forward(req, res, upstream) }, delayMs)
    else forward(req, res, upstream)
  })
  proxy.on('connection', (socket: Socket) => {
    open++
    opened++
    maxOpen = Math.max(maxOpen, open)
    socket.on('close', () => { open-- })
  })
  await new Promise<void>(resolve => proxy.listen(0, '127.0.0.1', resolve))
  const endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  const server = s3()
  backend = await openS3Backend({ endpoint, bucket: await newBucket(), prefix: S3_PREFIX, region: server.region, forcePathStyle: true },
    { s3AccessKeyId: server.accessKeyId, s3SecretAccessKey: server.secretAccessKey, s3CacheSize: 0 },
    { blocksDir: '/nonexistent', cacheDir: '/nonexistent', log: silentLogger, requireReachable: true })
})

afterAll(async () => {
  await backend?.close()
  proxy?.closeAllConnections()
  await new Promise(resolve => proxy?.close(resolve))
})

describe('the S3 transport', () => {
  it('keeps at most S3_TUNING.maxSockets connections, and keeps them alive', async () => {
    const bytes = randomBytes(2000)
    const cid = rawCid(bytes)
    await backend.blockstore.put(cid, bytes)
    const wave = async (): Promise<void> => {
      const reads = await Promise.all(Array.from({ length: 2 * S3_TUNING.maxSockets }, async () => await backend.readFromBucket(blockName(cid))))
      for (const r of reads) expect(Buffer.from(r as Uint8Array).equals(bytes)).toBe(true)
    }
    delayMs = 50 // every request waits: the reads overlap
    maxOpen = 0
    await wave()
    const afterFirst = opened
    expect(maxOpen).toBeLessThanOrEqual(S3_TUNING.maxSockets)
    expect(maxOpen).toBeGreaterThan(S3_TUNING.maxSockets / 2)
    await wave()
    delayMs = 0
    expect(opened).toBe(afterFirst) // the same connections again
    expect(maxOpen).toBeLessThanOrEqual(S3_TUNING.maxSockets)
  })

  it('ends a read given up by its caller at once, with its reason, and closes its connection; the bucket stays up', async () => {
    const bytes = randomBytes(3000)
    const cid = rawCid(bytes)
    await backend.blockstore.put(cid, bytes)
    let seen!: () => void
    let closed!: () => void
    const requestSeen = new Promise<void>(resolve => { seen = resolve })
    const connectionClosed = new Promise<void>(resolve => { closed = resolve })
    special = { key: blockName(cid), mode: 'hold', seen, closed }
    const ac = new AbortController()
    const read = backend.read(cid, ac.signal)
    await requestSeen
    const reason = new Error('the client went away')
    const t0 = performance.now()
    ac.abort(reason)
    await expect(read).rejects.toBe(reason)
    expect(performance.now() - t0).toBeLessThan(1000)
    await connectionClosed
    expect(backend.writable()).toBe(true)
    expect(Buffer.from(await backend.read(cid) as Uint8Array).equals(bytes)).toBe(true)
  })

  it('takes a body cut halfway for an outage (503, the bucket down), and finds the bucket again by itself', async () => {
    const bytes = randomBytes(200_000)
    const cid = rawCid(bytes)
    await backend.blockstore.put(cid, bytes)
    special = { key: blockName(cid), mode: 'cut' }
    await expect(backend.read(cid)).rejects.toBeInstanceOf(StorageUnavailableError)
    expect(backend.writable()).toBe(false)
    await waitFor(() => backend.writable() ? true : undefined, 'the probe to find the bucket again', 20_000)
    expect(Buffer.from(await backend.read(cid) as Uint8Array).equals(bytes)).toBe(true)
  })
})
