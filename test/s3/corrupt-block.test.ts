/**
 * With --s3-verify-reads, a block whose object in the bucket is not the block
 * any more (damaged, truncated, extended or replaced behind pind's back) is
 * never served: the backend hashes every body it reads from the bucket and
 * refuses one that does not match its CID (CorruptBlockError), the gateway
 * answers 500 before its status when the bad block comes first, and cuts the
 * response where it comes later, without sending any of its bytes. The bucket
 * is not taken for down: it answered.
 * Without it (the default) the bucket is trusted as Kubo trusts its datastore:
 * a replaced object of a plausible size is served as it is, one larger than
 * any block is refused, and migration's read-back is hashed all the same.
 */
import { randomBytes } from 'node:crypto'
import { PutObjectCommand } from '@aws-sdk/client-s3'
import { unixfs } from '@helia/unixfs'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import type { CID } from 'multiformats/cid'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawCid } from '../../scripts/peer/index.mjs'
import { Router } from '../../src/http/router.js'
import { gatewayRoutes } from '../../src/http/routes/gateway.js'
import { createHttpServer, type HttpServer } from '../../src/http/server.js'
import { blockName, CorruptBlockError } from '../../src/ipfs/block-backend.js'
import { openS3Backend } from '../../src/ipfs/open-backend.js'
import { loadEntry, type FileEntry } from '../../src/ipfs/content.js'
import type { S3Backend } from '../../src/ipfs/s3-backend.js'
import { silentLogger } from '../../src/kernel/log.js'
import { newBucket, s3Backend, s3c, S3_PREFIX } from '../helpers/backend.js'
import { rawGet } from '../http/gateway/helpers.js'

const LEAF = 256 * 1024
let bucket: string
/** --s3-verify-reads on */
let backend: S3Backend
let server: HttpServer
let base: string
/** the same bucket with the setting off (the default) */
let trusting: S3Backend
let trustingServer: HttpServer
let trustingBase: string

async function gatewayOn (b: S3Backend): Promise<{ server: HttpServer, base: string }> {
  const router = new Router()
  gatewayRoutes(router, { blockstore: b.blockstore, isServable: () => true })
  const server = createHttpServer(router, silentLogger)
  return { server, base: `http://127.0.0.1:${(await server.listen('127.0.0.1', 0)).port}` }
}

beforeAll(async () => {
  bucket = await newBucket()
  backend = await s3Backend({ bucket, verifyReads: true })
  ;({ server, base } = await gatewayOn(backend))
  trusting = await s3Backend({ bucket }) // no setting given: the default
  ;({ server: trustingServer, base: trustingBase } = await gatewayOn(trusting))
})
afterAll(async () => {
  await server?.close(1000)
  await trustingServer?.close(1000)
  await backend?.close()
  await trusting?.close()
})

/** overwrites a block's object with other bytes, as a damaged or tampered bucket would hold them */
async function replaceObject (cid: CID, body: Uint8Array): Promise<void> {
  await s3c().send(new PutObjectCommand({ Bucket: bucket, Key: `${S3_PREFIX}${blockName(cid)}`, Body: body }))
}

/**
 * A GET whose response may be cut: before its head left the server's buffers (the client sees a
 * hang-up: status 0, nothing received) or after (the status, then a short body).
 */
async function cutGet (url: string): Promise<{ status: number, body: Uint8Array, complete: boolean }> {
  try {
    return await rawGet(url)
  } catch (err) {
    if (/socket hang up|ECONNRESET/.test(String(err))) return { status: 0, body: new Uint8Array(0), complete: false }
    throw err
  }
}

/** a file of 6 raw leaves of 256 KiB under one dag-pb root, stored in the bucket */
async function storedFile (): Promise<{ cid: CID, bytes: Buffer, leaves: CID[] }> {
  const bytes = randomBytes(6 * LEAF)
  const cid = await unixfs({ blockstore: backend.blockstore }).addBytes(bytes, { cidVersion: 1, rawLeaves: true, chunker: fixedSize({ chunkSize: LEAF }) })
  const root = await loadEntry(backend.blockstore, cid) as FileEntry
  const { decode } = await import('@ipld/dag-pb')
  return { cid, bytes, leaves: decode(root.block).Links.map(l => l.Hash) }
}

describe('a block that does not match its CID in the bucket', () => {
  it('is refused by every read (replaced, flipped, truncated, extended), and the bucket stays up', async () => {
    const good = randomBytes(300_000)
    const flipped = Buffer.from(good)
    flipped.writeUInt8(flipped.readUInt8(123_456) ^ 1, 123_456)
    const cases: Record<string, Uint8Array> = {
      replaced: randomBytes(good.byteLength),
      'one bit flipped': flipped,
      truncated: good.subarray(0, good.byteLength - 1),
      extended: Buffer.concat([good, Buffer.from([0])])
    }
    for (const [what, body] of Object.entries(cases)) {
      const cid = rawCid(randomBytes(16)) // a fresh name each time: nothing cached or remembered
      const real = Buffer.concat([good, cid.multihash.digest]) // the block the CID names
      const block = rawCid(real)
      await backend.write(block, real)
      expect(Buffer.from(await backend.read(block) as Uint8Array).equals(real), what).toBe(true)
      await replaceObject(block, Buffer.concat([body, cid.multihash.digest]))
      await expect(backend.read(block), what).rejects.toBeInstanceOf(CorruptBlockError)
      await expect(backend.readFromBucket(blockName(block)), what).rejects.toBeInstanceOf(CorruptBlockError)
      await expect((async () => { for await (const _ of backend.blockstore.get(block)) { /* drain */ } })(), what).rejects.toBeInstanceOf(CorruptBlockError)
      expect(backend.writable(), what).toBe(true)
      const r = await rawGet(`${base}/ipfs/${block}?format=raw`)
      expect(r.status, what).toBe(500)
      expect(Buffer.from(r.body).includes(Buffer.from(body).subarray(0, 64)), what).toBe(false)
    }
  })

  it('is not served by the gateway: a file cut before the bad block, a range starting in it refused, a CAR cut', async () => {
    const f = await storedFile()
    // the good file first: whole, a range, a CAR
    const whole = await rawGet(`${base}/ipfs/${f.cid}`)
    expect(whole.status).toBe(200)
    expect(whole.complete).toBe(true)
    expect(Buffer.from(whole.body).equals(f.bytes)).toBe(true)

    const bad = f.leaves[3] as CID
    const badBytes = randomBytes(LEAF)
    await replaceObject(bad, badBytes)
    const marker = badBytes.subarray(0, 64)

    const file = await cutGet(`${base}/ipfs/${f.cid}`)
    expect([0, 200]).toContain(file.status) // the status goes out with the first block (unless the cut came first)
    expect(file.complete).toBe(false) // then the connection is cut
    expect(file.body.byteLength).toBeLessThanOrEqual(3 * LEAF)
    expect(Buffer.from(file.body).equals(f.bytes.subarray(0, file.body.byteLength))).toBe(true)
    expect(Buffer.from(file.body).includes(marker)).toBe(false)

    // a range that starts in the bad block: refused before any status
    const ranged = await rawGet(`${base}/ipfs/${f.cid}`, { range: `bytes=${3 * LEAF + 10}-${4 * LEAF + 10}` })
    expect(ranged.status).toBe(500)
    expect(Buffer.from(ranged.body).includes(marker)).toBe(false)
    // a range before it is whole
    const before = await rawGet(`${base}/ipfs/${f.cid}`, { range: `bytes=0-${LEAF}` })
    expect(before.status).toBe(206)
    expect(Buffer.from(before.body).equals(f.bytes.subarray(0, LEAF + 1))).toBe(true)

    const car = await cutGet(`${base}/ipfs/${f.cid}?format=car`)
    expect(car.complete).toBe(false)
    expect(Buffer.from(car.body).includes(marker)).toBe(false)

    const raw = await rawGet(`${base}/ipfs/${bad}?format=raw`)
    expect(raw.status).toBe(500)
    expect(Buffer.from(raw.body).includes(marker)).toBe(false)
  })
})

describe('with --s3-verify-reads off (the default)', () => {
  it('is the default of the setting', () => {
    expect(backend.verifyReads).toBe(true)
    expect(trusting.verifyReads).toBe(false)
  })

  it('serves a replaced object as it is (trusted like a local datastore), yet migration\'s read-back refuses it', async () => {
    const real = randomBytes(300_000)
    const block = rawCid(real)
    await trusting.write(block, real)
    expect(Buffer.from(await trusting.read(block) as Uint8Array).equals(real)).toBe(true)
    for (const body of [randomBytes(real.byteLength), randomBytes(1000), randomBytes(real.byteLength + 1)]) {
      await replaceObject(block, body)
      expect(Buffer.from(await trusting.read(block) as Uint8Array).equals(body)).toBe(true)
      const r = await rawGet(`${trustingBase}/ipfs/${block}?format=raw`)
      expect(r.status).toBe(200)
      expect(Buffer.from(r.body).equals(body)).toBe(true)
      // what the verifying backend and migration's read-back make of the same object
      await expect(trusting.readFromBucket(blockName(block))).rejects.toBeInstanceOf(CorruptBlockError)
      await expect(backend.read(block)).rejects.toBeInstanceOf(CorruptBlockError)
      expect(trusting.writable()).toBe(true)
    }
  })

  it('still refuses an object larger than any block, without reading it', async () => {
    const block = rawCid(randomBytes(64))
    const huge = Buffer.alloc(16 * 1_048_576 + 1, 7)
    await replaceObject(block, huge)
    await expect(trusting.read(block)).rejects.toThrow(/more than any block/)
    await expect(trusting.read(block)).rejects.toBeInstanceOf(CorruptBlockError)
    const r = await rawGet(`${trustingBase}/ipfs/${block}?format=raw`)
    expect(r.status).toBe(500)
    expect(r.body.byteLength).toBeLessThan(1000)
    expect(trusting.writable()).toBe(true)
  })

  it('is what the configuration says: PIND_S3_VERIFY_READS=true opens a verifying backend', async () => {
    const { loadConfig } = await import('../../src/config/load.js')
    const { s3 } = await import('../helpers/backend.js')
    const server = s3()
    for (const [env, verifies] of [[undefined, false], ['true', true], ['false', false]] as const) {
      const { config, errors } = loadConfig({ flags: {}, env: { PIND_S3_VERIFY_READS: env }, scope: 'admin' })
      expect(errors).toEqual([])
      const b = await openS3Backend({ endpoint: server.endpoint, bucket, prefix: S3_PREFIX, region: server.region, forcePathStyle: true },
        { ...config as NonNullable<typeof config>, s3AccessKeyId: server.accessKeyId, s3SecretAccessKey: server.secretAccessKey },
        { blocksDir: '/nonexistent', cacheDir: '/nonexistent', log: silentLogger, requireReachable: true })
      try {
        const real = randomBytes(1000)
        const block = rawCid(real)
        await b.write(block, real)
        await replaceObject(block, randomBytes(1000))
        if (verifies) await expect(b.read(block), env).rejects.toBeInstanceOf(CorruptBlockError)
        else expect(Buffer.from(await b.read(block) as Uint8Array).equals(real), env).toBe(false)
      } finally {
        await b.close()
      }
    }
  })
})
