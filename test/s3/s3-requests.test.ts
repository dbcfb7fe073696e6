/**
 * The SDK's work per request, kept small (S3Connection), on the run's real
 * Ceph RADOS Gateway behind a loopback proxy that records each request's
 * headers and can answer 503 SlowDown to the next N:
 * - the middleware stack is resolved once per command class, not per request;
 * - the middleware pind does without (UNNEEDED_MIDDLEWARE) is gone from every
 *   request, and a GET is still retried past 503s and observed for metrics;
 * - each PUT is signed with its own block's hash (given, not computed), also
 *   now that one stack serves every PutObject;
 * - a block's pieces read from the bucket (no read cache) are the reader's
 *   alone: the gateway frees each once its socket has written it; with a read
 *   cache they are left alone (the cache writes them).
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import type { IncomingHttpHeaders } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { GetObjectCommand } from '@aws-sdk/client-s3'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawCid } from '../../scripts/peer/index.mjs'
import { blockName } from '../../src/ipfs/block-backend.js'
import { loadEntry, readFile } from '../../src/ipfs/content.js'
import { importFile } from '../../src/ipfs/import.js'
import { openS3Backend } from '../../src/ipfs/open-backend.js'
import type { S3Backend } from '../../src/ipfs/s3-backend.js'
import { S3RequestError, type S3Outcome } from '../../src/ipfs/s3-client.js'
import { silentLogger } from '../../src/kernel/log.js'
import { newBucket, s3, S3_PREFIX } from '../helpers/backend.js'
import { pumpFreeing, tapped } from '../helpers/freed-pieces.js'
import { startThrottlingProxy, type ThrottlingProxy } from '../helpers/s3-proxy.js'

let proxy: ThrottlingProxy
/** method, path and headers of every request the proxy was given */
const seen: Array<{ method: string, path: string, headers: IncomingHttpHeaders }> = []
const observed: Array<{ operation: string, outcome: S3Outcome }> = []
const opened: S3Backend[] = []
const dirs: string[] = []

beforeAll(async () => {
  proxy = await startThrottlingProxy(s3().endpoint, (req) => { seen.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers }) })
})

afterAll(async () => {
  for (const b of opened) await b.close()
  await proxy?.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** a fresh S3Backend (fresh client) on a fresh bucket, through the proxy */
async function backend (cacheSize = 0): Promise<S3Backend> {
  const server = s3()
  const cacheDir = cacheSize > 0 ? mkdtempSync(join(tmpdir(), 'pind-s3req-cache-')) : '/nonexistent'
  if (cacheSize > 0) dirs.push(cacheDir)
  const b = await openS3Backend({ endpoint: proxy.endpoint, bucket: await newBucket(), prefix: S3_PREFIX, region: server.region, forcePathStyle: true },
    { s3AccessKeyId: server.accessKeyId, s3SecretAccessKey: server.secretAccessKey, s3CacheSize: cacheSize },
    { blocksDir: '/nonexistent', cacheDir, log: silentLogger, observer: (operation, _s, outcome) => { observed.push({ operation, outcome }) }, requireReachable: true })
  opened.push(b)
  return b
}

const sha256 = (bytes: Uint8Array): Buffer => createHash('sha256').update(bytes).digest()

describe('the SDK work per S3 request', () => {
  it('resolves the middleware stack once per command class, not once per request', async () => {
    const b = await backend()
    const blocks = Array.from({ length: 12 }, () => randomBytes(3000))
    for (const bytes of blocks) await b.blockstore.put(rawCid(bytes), bytes)
    const proto = GetObjectCommand.prototype as unknown as { resolveMiddleware: (...a: unknown[]) => unknown }
    const original = proto.resolveMiddleware
    let resolved = 0
    proto.resolveMiddleware = function (this: unknown, ...a: unknown[]) { resolved++; return original.apply(this, a) }
    try {
      for (const bytes of blocks) expect(Buffer.from(await b.readFromBucket(blockName(rawCid(bytes))) as Uint8Array).equals(bytes)).toBe(true)
    } finally {
      proto.resolveMiddleware = original
    }
    expect(resolved).toBe(1)
  })

  it('sends no header of the middleware it takes out, and still retries a throttled GET and observes it', async () => {
    const b = await backend()
    const stack = b.conn.client.middlewareStack.identify().join('\n')
    for (const name of ['loggerMiddleware', 'getUserAgentMiddleware', 'recursionDetectionMiddleware', 'addExpectContinueMiddleware']) expect(stack).not.toContain(name)
    const bytes = randomBytes(5000)
    const cid = rawCid(bytes)
    await b.blockstore.put(cid, bytes)
    seen.length = 0
    observed.length = 0
    proxy.failNext = 2
    expect(Buffer.from(await b.readFromBucket(blockName(cid)) as Uint8Array).equals(bytes)).toBe(true)
    // two throttled attempts, then the block: one request in the metrics' sense
    expect(seen.map(r => r.method)).toEqual(['GET', 'GET', 'GET'])
    expect(observed).toEqual([{ operation: 'GetObject', outcome: 'ok' }])
    expect(b.writable()).toBe(true)
    for (const r of seen) {
      // signed as ever; no user agent built, no trace id
      expect(r.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 /)
      expect(r.headers['x-amz-user-agent']).toBeUndefined()
      expect(r.headers['x-amzn-trace-id']).toBeUndefined()
      expect(String(r.headers['user-agent'] ?? '')).not.toContain('aws-sdk')
    }
  })

  it('signs each PUT with its own block hash, given rather than computed: a body that does not match its CID is refused', async () => {
    const b = await backend()
    seen.length = 0
    const blocks = Array.from({ length: 3 }, () => randomBytes(4000))
    for (const bytes of blocks) await b.blockstore.put(rawCid(bytes), bytes)
    const puts = seen.filter(r => r.method === 'PUT')
    expect(puts.map(r => r.headers['x-amz-content-sha256'])).toEqual(blocks.map(x => sha256(x).toString('hex')))
    // the same stack for every PutObject: each still carries its own hash, which the store checks
    const other = randomBytes(4000)
    const wrong = CID.createV1(0x55, Digest.create(0x12, sha256(randomBytes(4000))))
    await expect(b.write(wrong, other)).rejects.toBeInstanceOf(S3RequestError)
    const after = randomBytes(4000)
    await b.write(rawCid(after), after)
    expect(Buffer.from(await b.readFromBucket(blockName(rawCid(after))) as Uint8Array).equals(after)).toBe(true)
    expect(b.writable()).toBe(true)
  })

  /** the file's bytes through readFile and pump (freeing what is written, as the gateway does), and its pieces */
  async function readThroughPump (b: S3Backend, bytes: Uint8Array): Promise<{ out: Buffer, pieces: Uint8Array[], freedBeforeWritten: number }> {
    const { cid } = await importFile((async function * () { for (let at = 0; at < bytes.byteLength; at += 65536) yield bytes.slice(at, at + 65536) })(), { blockstore: b.blockstore, maxBytes: bytes.byteLength })
    const { store, pieces } = tapped(b.blockstore)
    const entry = await loadEntry(store, cid)
    if (entry.kind !== 'file') throw new Error('not a file')
    pieces.length = 0
    return { ...await pumpFreeing(readFile(store, entry)), pieces }
  }

  it('hands the pieces of a block read from the bucket to the reader: the gateway frees each once written, and not before', async () => {
    const b = await backend()
    const bytes = randomBytes(3 * 1024 * 1024 + 5000)
    const { out, pieces, freedBeforeWritten } = await readThroughPump(b, bytes)
    expect(freedBeforeWritten).toBe(0)
    expect(out.equals(bytes)).toBe(true)
    expect(pieces.length).toBeGreaterThan(48)
    // a piece that shares its socket read with the response's headers is a part of a buffer: left to the garbage collector
    const kept = pieces.filter(p => !(p.buffer as ArrayBuffer).detached)
    expect(kept.length).toBeLessThanOrEqual(4)
  })

  it('with a read cache, leaves the pieces alone (the cache writes them) and serves the block again from the cache', async () => {
    const b = await backend(64 * 1024 * 1024)
    const bytes = randomBytes(2 * 1024 * 1024)
    const { out, pieces } = await readThroughPump(b, bytes)
    expect(out.equals(bytes)).toBe(true)
    expect(pieces.filter(p => (p.buffer as ArrayBuffer).detached)).toEqual([])
    const again = await readThroughPump(b, bytes)
    expect(again.out.equals(bytes)).toBe(true)
  })
})
