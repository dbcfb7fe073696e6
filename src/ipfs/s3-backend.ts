/**
 * Blocks in an S3-compatible bucket: one object per block, the key being the
 * configured prefix + the block's name (its multihash in base32, as
 * blockstore-fs names its files), the body the block's bytes. Keys are
 * content addresses, so every write is idempotent.
 *
 * - Reads (`blockstore`, used by Helia, bitswap, the gateway, the fetcher and
 *   CAR export) go to the optional read cache first, then GetObject. With
 *   --s3-verify-reads a block from the bucket is hashed as its body arrives
 *   and refused (CorruptBlockError) unless it matches its CID: a damaged or
 *   replaced object is never served or cached. Without it (the default, as
 *   Kubo's Datastore.HashOnRead) the bucket this node wrote is trusted: only
 *   a body longer than any block or shorter than its Content-Length is
 *   refused. Migration's read-back is hashed either way.
 * - A commit PUTs each staged block (fsync'd on local disk until then: one
 *   staging log per import, see staging-log.ts), at most
 *   S3_TUNING.concurrency at once, each read by offset with its known size,
 *   and returns only when every PUT has succeeded; the ledger records the
 *   pin after that. Each stored block is copied into the read cache, if any
 *   (a block staged in a file of its own is moved in instead).
 * - gc lists the prefix with ListObjectsV2 (pages of 1000, sizes included)
 *   and deletes with DeleteObjects (batches of up to 1000).
 * - A bucket that cannot be reached makes reads and writes fail at once with
 *   503/504 until a probe finds it again (S3Connection); one that takes
 *   requests and answers none fails each within --s3-timeout.
 */
import { open, type FileHandle } from 'node:fs/promises'
import { finished, type Readable } from 'node:stream'
import {
  DeleteObjectCommand, DeleteObjectsCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand,
  type GetObjectCommandOutput, type HeadObjectCommandOutput, type ListObjectsV2CommandOutput, type DeleteObjectsCommandOutput
} from '@aws-sdk/client-s3'
import type { Blockstore, InputPair, Pair } from 'interface-blockstore'
import { base32upper } from 'multiformats/bases/base32'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { createHash, randomBytes } from 'node:crypto'
import { handOver } from '../runtime/buffers.js'
import { blockName, CorruptBlockError, notFound, StorageUnavailableError, type BlockBackend, type BlockBuffers, type StagedBlock, type StoredBlock } from './block-backend.js'
import { NODE_HASHES } from './codecs.js'
import { eachLimited } from './fs-backend.js'
import type { ReadCache } from './read-cache.js'
import { readFully } from './staging-log.js'
import { S3_TUNING, S3RequestError, withPayloadSha256, type S3Connection } from './s3-client.js'

/** a block's name: base32 (upper, with its multibase prefix B) of its multihash */
const NAME = /^B[A-Z2-7]+$/
/** names known to be in the bucket (saves a HEAD before most GETs); bounded */
const KNOWN_MAX = 20_000
/**
 * names found missing, for a while: a peer's wantlist or a fetch asking again
 * costs no request. A write through this process forgets the name here, and
 * so does one by another front end sharing the bucket once the ledger tells
 * of it (forget: serve drops the blocks another one's pins reference), so
 * this never hides a block a pin holds.
 */
const ABSENT_MAX = 10_000
const ABSENT_TTL_MS = 30_000
const RAW = 0x55
const SHA2_256 = 0x12

export class S3Backend implements BlockBackend {
  readonly kind = 's3' as const
  readonly blockstore: Blockstore
  private readonly known = new Set<string>()
  private readonly absent = new Map<string, number>()

  /** hash every block read from the bucket (--s3-verify-reads); migration's read-back is hashed regardless */
  readonly verifyReads: boolean

  constructor (readonly conn: S3Connection, readonly cache?: ReadCache, opts: { verifyReads?: boolean } = {}) {
    this.verifyReads = opts.verifyReads ?? false
    this.blockstore = new S3Blockstore(this)
  }

  describe (): string {
    const l = this.conn.location
    return `blocks in S3 bucket ${l.bucket}${l.prefix !== '' ? `, prefix ${l.prefix}` : ''}${l.endpoint != null ? ` at ${l.endpoint}` : ''}`
  }

  writable (): boolean {
    return this.conn.isUp()
  }

  async ready (): Promise<void> {
    if (!this.conn.isUp()) throw new StorageUnavailableError()
    await this.conn.check()
  }

  private get bucket (): string {
    return this.conn.location.bucket
  }

  forget (cids?: CID[]): void {
    if (cids == null) {
      this.known.clear()
      this.absent.clear()
      return
    }
    for (const cid of cids) {
      const name = blockName(cid)
      this.known.delete(name)
      this.absent.delete(name)
    }
  }

  async has (cid: CID, signal?: AbortSignal): Promise<boolean> {
    const name = blockName(cid)
    if (this.known.has(name) || this.cache?.has(name) === true) return true
    if ((this.absent.get(name) ?? 0) > Date.now()) return false
    const head = await this.conn.send<HeadObjectCommandOutput>('HeadObject', new HeadObjectCommand({ Bucket: this.bucket, Key: this.conn.key(name) }), { signal, allowMissing: true })
    if (head == null) {
      this.missing(name)
      return false
    }
    this.remember(name)
    return true
  }

  async read (cid: CID, signal?: AbortSignal): Promise<Uint8Array | undefined> {
    const pieces = await this.readPieces(cid, signal)
    return pieces == null ? undefined : joinPieces(pieces)
  }

  /**
   * A block's bytes as they arrived (the body's pieces, not copied into one
   * buffer: the gateway writes them to its client as they are), from the
   * read cache or else from the bucket (verified against the CID there with
   * --s3-verify-reads).
   */
  async readPieces (cid: CID, signal?: AbortSignal): Promise<Uint8Array[] | undefined> {
    const name = blockName(cid)
    const cached = await this.cache?.get(name)
    if (cached != null) return [cached]
    const ticket = this.cache?.ticket() ?? 0
    const pieces = await this.piecesFromBucket(name, this.verifyReads, signal)
    if (pieces != null && this.cache != null) void this.cache.put(name, pieces, ticket)
    return pieces
  }

  /** GetObject, past the cache, always verified (migration reads every block back from the bucket to check it). */
  async readFromBucket (name: string, signal?: AbortSignal): Promise<Uint8Array | undefined> {
    const pieces = await this.piecesFromBucket(name, true, signal)
    return pieces == null ? undefined : joinPieces(pieces)
  }

  /**
   * GetObject: the body's pieces; `verify`: hashed as they arrive and checked
   * against the multihash the name is (CorruptBlockError when they differ: a
   * damaged or replaced object is never served).
   */
  private async piecesFromBucket (name: string, verify: boolean, signal?: AbortSignal): Promise<Uint8Array[] | undefined> {
    const pieces = await this.conn.send<GetObjectCommandOutput, Uint8Array[]>('GetObject', new GetObjectCommand({ Bucket: this.bucket, Key: this.conn.key(name) }), { signal, allowMissing: true },
      async (out) => await bodyPieces(out, name, verify))
    if (pieces == null) {
      this.known.delete(name)
      this.missing(name)
      return undefined
    }
    this.remember(name)
    return pieces
  }

  async write (cid: CID, bytes: Uint8Array, signal?: AbortSignal): Promise<void> {
    const name = blockName(cid)
    this.absent.delete(name)
    // the request signature covers the body's SHA-256, and the store checks the body against it:
    // a sha2-256 block's CID is that hash already, so it is given instead of computed again
    const body = cid.multihash.code === SHA2_256 ? withPayloadSha256(bytes, Buffer.from(cid.multihash.digest).toString('hex')) : bytes
    const put = new PutObjectCommand({ Bucket: this.bucket, Key: this.conn.key(name), Body: body, ContentLength: bytes.byteLength })
    await this.conn.send('PutObject', put, { signal })
    this.remember(name)
  }

  /** One block from memory: a PUT (always made: a name known to be in the bucket may have been deleted since by gc in another process). */
  async put (cid: CID, bytes: Uint8Array, signal?: AbortSignal): Promise<boolean> {
    const name = blockName(cid)
    const knownBefore = this.known.has(name)
    // taken before the write: a removal meanwhile keeps the copy out of the cache
    const ticket = this.cache?.ticket()
    await this.write(cid, bytes, signal)
    // in the bucket: a copy for the read cache, as a commit keeps (an upload's first reads hit it)
    if (this.cache != null && ticket != null) await this.cache.put(name, [bytes], ticket)
    return !knownBefore
  }

  async commit (blocks: StagedBlock[], signal?: AbortSignal, buffers?: BlockBuffers): Promise<{ added: number, addedBytes: number }> {
    let added = 0
    let addedBytes = 0
    const logs = new StagedFiles()
    const wholes: StagedBlock[] = []
    try {
      await eachLimited(blocks, async (b) => {
        signal?.throwIfAborted()
        // read into a reused buffer (the import's chunk buffers, idle by now): a 100 MB upload would
        // otherwise leave 100 MB of read buffers for the garbage collector, resident meanwhile
        const staged = await readStaged(b, logs, buffers ?? ownBuffers)
        const name = blockName(b.cid)
        const knownBefore = this.known.has(name)
        try {
          await this.write(b.cid, staged.bytes, signal)
          // in the bucket: the staged copy becomes a cached one (a whole file is moved in below, once all are stored)
          if (this.cache != null && !b.whole) await this.cache.put(name, [staged.bytes], this.cache.ticket())
        } finally {
          staged.release()
        }
        if (b.whole) wholes.push(b)
        if (!knownBefore) {
          added++
          addedBytes += b.size
        }
      }, S3_TUNING.concurrency)
    } finally {
      await logs.close()
    }
    if (this.cache != null) for (const b of wholes) await this.cache.adopt(blockName(b.cid), b.path, b.size)
    return { added, addedBytes }
  }

  async * list (signal?: AbortSignal): AsyncIterable<StoredBlock[]> {
    const prefix = this.conn.location.prefix
    let token: string | undefined
    do {
      const page = await this.conn.send<ListObjectsV2CommandOutput>('ListObjectsV2', new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, MaxKeys: 1000, ContinuationToken: token }), { signal, deadlineMs: S3_TUNING.batchTimeoutMs }) as ListObjectsV2CommandOutput
      const blocks: StoredBlock[] = []
      for (const o of page.Contents ?? []) {
        const name = o.Key?.slice(prefix.length)
        if (name != null && NAME.test(name)) blocks.push({ name, ...(o.Size != null ? { size: o.Size } : {}) })
      }
      if (blocks.length > 0) yield blocks
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
    } while (token != null)
  }

  async sizeOf (block: StoredBlock): Promise<number | undefined> {
    if (block.size != null) return block.size
    const head = await this.conn.send<HeadObjectCommandOutput>('HeadObject', new HeadObjectCommand({ Bucket: this.bucket, Key: this.conn.key(block.name) }), { allowMissing: true })
    return head?.ContentLength
  }

  async remove (blocks: StoredBlock[]): Promise<{ removed: number, freedBytes: number }> {
    let removed = 0
    let freedBytes = 0
    for (let i = 0; i < blocks.length; i += 1000) {
      const batch = blocks.slice(i, i + 1000)
      // forget first: a read racing the delete must not put the block back in the cache
      for (const b of batch) {
        this.known.delete(b.name)
        await this.cache?.drop(b.name)
      }
      const out = await this.conn.send<DeleteObjectsCommandOutput>('DeleteObjects', new DeleteObjectsCommand({
        Bucket: this.bucket,
        Delete: { Objects: batch.map(b => ({ Key: this.conn.key(b.name) })), Quiet: true }
      }), { deadlineMs: S3_TUNING.batchTimeoutMs }) as DeleteObjectsCommandOutput
      const failed = new Set((out.Errors ?? []).map(e => e.Key))
      if (failed.size > 0) {
        const first = out.Errors?.[0]
        throw new S3RequestError(`DeleteObjects: ${failed.size} of ${batch.length} keys were not deleted (${first?.Code ?? 'error'}); run gc again`)
      }
      removed += batch.length
      for (const b of batch) freedBytes += b.size ?? 0
    }
    return { removed, freedBytes }
  }

  async usage (): Promise<{ blocks: number, bytes: number }> {
    let blocks = 0
    let bytes = 0
    for await (const page of this.list()) {
      blocks += page.length
      for (const b of page) bytes += b.size ?? 0
    }
    return { blocks, bytes }
  }

  async probe (): Promise<void> {
    if (!this.conn.isUp()) throw new Error(this.conn.downReason())
    const key = this.conn.key(`.health-${randomBytes(6).toString('hex')}`)
    try {
      await this.conn.send('PutObject', new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: 'ok' }))
      await this.conn.send('DeleteObject', new DeleteObjectCommand({ Bucket: this.bucket, Key: key }))
    } catch (err) {
      throw new Error(`the S3 bucket does not take a write: ${err instanceof S3RequestError ? err.message : this.conn.failure()}`)
    }
  }

  async close (): Promise<void> {
    this.conn.close()
  }

  private remember (name: string): void {
    this.absent.delete(name)
    if (this.known.size >= KNOWN_MAX) this.known.delete(this.known.values().next().value as string)
    this.known.add(name)
  }

  private missing (name: string): void {
    if (this.absent.size >= ABSENT_MAX) this.absent.delete(this.absent.keys().next().value as string)
    this.absent.set(name, Date.now() + ABSENT_TTL_MS)
  }
}

/** read buffers of commits given none (1 MiB each, as many as are in flight at most) */
const ownBuffers: BlockBuffers = (() => {
  const idle: Uint8Array[] = []
  const chunkSize = 1_048_576
  return {
    chunkSize,
    take: () => idle.pop() ?? new Uint8Array(chunkSize),
    give: (bytes) => { if (bytes.buffer.byteLength === chunkSize && idle.length < S3_TUNING.concurrency) idle.push(new Uint8Array(bytes.buffer, 0, chunkSize)) }
  }
})()

/** The staging logs a commit reads from, each opened once (a whole staged file is opened for its one read). */
class StagedFiles {
  private readonly open = new Map<string, Promise<FileHandle>>()

  async handle (path: string): Promise<FileHandle> {
    let fh = this.open.get(path)
    if (fh == null) {
      fh = open(path, 'r')
      this.open.set(path, fh)
    }
    return await fh
  }

  async close (): Promise<void> {
    await Promise.all([...this.open.values()].map(async fh => { await (await fh.catch(() => undefined))?.close() }))
  }
}

/** A staged block's bytes in a reused buffer (larger blocks get their own); release() gives it back once sent. */
async function readStaged (b: StagedBlock, logs: StagedFiles, buffers: BlockBuffers): Promise<{ bytes: Uint8Array, release: () => void }> {
  const pooled = b.size <= buffers.chunkSize
  const buf = pooled ? buffers.take() : new Uint8Array(b.size)
  let released = false
  const release = (): void => {
    if (released) return
    released = true
    if (pooled) buffers.give(buf)
  }
  const bytes = buf.subarray(0, b.size)
  try {
    if (b.whole) {
      const fh = await open(b.path, 'r')
      try {
        await readFully(fh, bytes, b.offset)
      } finally {
        await fh.close()
      }
    } else {
      await readFully(await logs.handle(b.path), bytes, b.offset)
    }
  } catch (err) {
    release()
    throw err
  }
  return { bytes, release }
}

/** a body longer than this is refused without reading it (no block is near it) */
const MAX_OBJECT_BYTES = 16 * 1_048_576

/**
 * A GetObject body as the pieces it arrived in (no copy into one buffer). A
 * body longer than its Content-Length or than any block is a
 * CorruptBlockError, one that ends short an error, and nothing of it is
 * returned. `verify`: also hashed piece by piece as they come (each is still
 * in the CPU's cache) and checked against the multihash that `name` encodes
 * (CorruptBlockError when it does not match).
 */
async function bodyPieces (out: GetObjectCommandOutput, name: string, verify: boolean): Promise<Uint8Array[]> {
  try {
    return await readBody(out, name, verify)
  } catch (err) {
    // a body not read to its end must not hold its connection
    (out.Body as { destroy?: () => void } | undefined)?.destroy?.()
    throw err
  }
}

async function readBody (out: GetObjectCommandOutput, name: string, verify: boolean): Promise<Uint8Array[]> {
  const mh = verify ? Digest.decode(base32upper.decode(name)) : undefined
  const algorithm = mh != null ? NODE_HASHES.get(mh.code) : undefined
  if (mh != null && algorithm == null) throw new CorruptBlockError(`block ${name} uses hash 0x${mh.code.toString(16)}, which this node cannot verify; it is not served`)
  const length = out.ContentLength
  if (length != null && length > MAX_OBJECT_BYTES) throw new CorruptBlockError(`block ${name} is stored as ${length} bytes, more than any block; it is not served`)
  const hash = algorithm != null ? createHash(algorithm) : undefined
  const pieces: Uint8Array[] = []
  let at = 0
  const take = (piece: Uint8Array): void => {
    at += piece.byteLength
    if (at > (length ?? MAX_OBJECT_BYTES)) throw new CorruptBlockError(`block ${name}: the object's body is longer than ${length ?? MAX_OBJECT_BYTES} bytes`)
    hash?.update(piece)
    pieces.push(piece)
  }
  const body = out.Body as unknown as Partial<Readable> & { transformToByteArray: () => Promise<Uint8Array> }
  if (typeof body.on === 'function') await eachPiece(body as Readable, take)
  else take(await body.transformToByteArray()) // a handler whose body is not a Node stream: one piece
  if (length != null && at !== length) throw new Error(`the object's body ended after ${at} of ${length} bytes`)
  if (hash != null && mh != null && !hash.digest().equals(mh.digest)) throw new CorruptBlockError(`block ${name} in the bucket does not match its hash (a damaged or replaced object); it is not served`)
  return pieces
}

/**
 * Calls `take` with each piece of a Node stream as it comes, and resolves at
 * its end. 'data' events rather than `for await`: the async iterator's promise
 * per piece is a measurable share of the read's CPU (docs/internals.md,
 * s3-backend.ts). A `take` that throws stops the stream and rejects with its
 * error; so does a stream that fails or closes early.
 */
async function eachPiece (stream: Readable, take: (piece: Uint8Array) => void): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    let failed = false
    stream.on('data', (piece: Uint8Array) => {
      if (failed) return
      try {
        take(piece)
      } catch (err) {
        failed = true
        stream.destroy()
        reject(err)
      }
    })
    finished(stream, (err) => {
      if (failed) return
      if (err != null) reject(err)
      else resolve()
    })
  })
}

/** one buffer of a block's pieces (no copy when there is one) */
function joinPieces (pieces: Uint8Array[]): Uint8Array {
  return pieces.length === 1 ? pieces[0] as Uint8Array : Buffer.concat(pieces)
}

async function collect (bytes: InputPair['bytes']): Promise<Uint8Array> {
  if (bytes instanceof Uint8Array) return bytes
  const chunks: Uint8Array[] = []
  for await (const c of bytes as AsyncIterable<Uint8Array>) chunks.push(c)
  return Buffer.concat(chunks)
}

/** interface-blockstore over the bucket (what Helia and bitswap are given). */
class S3Blockstore implements Blockstore {
  /** blocks a gateway reader keeps in flight (content.ts): a GET is a round trip */
  readonly readAhead = S3_TUNING.readAhead

  constructor (private readonly b: S3Backend) {}

  async has (cid: CID, options?: { signal?: AbortSignal }): Promise<boolean> {
    return await this.b.has(cid, options?.signal)
  }

  async put (cid: CID, bytes: InputPair['bytes'], options?: { signal?: AbortSignal }): Promise<CID> {
    await this.b.write(cid, await collect(bytes), options?.signal)
    return cid
  }

  async * putMany (source: Iterable<InputPair> | AsyncIterable<InputPair>, options?: { signal?: AbortSignal }): AsyncGenerator<CID> {
    for await (const { cid, bytes } of source) yield await this.put(cid, bytes, options)
  }

  /**
   * The block in the pieces its body arrived in (verified before the first is
   * yielded): readers that want one buffer join them. Without a read cache
   * nothing else keeps a piece from the bucket, so each is handed over to the
   * reader (runtime/buffers.ts), which frees it once written rather than leave
   * it to the garbage collector. With a cache the pieces are being written to it.
   */
  async * get (cid: CID, options?: { signal?: AbortSignal }): AsyncGenerator<Uint8Array> {
    const pieces = await this.b.readPieces(cid, options?.signal)
    if (pieces == null) throw notFound(cid)
    if (this.b.cache == null) for (const p of pieces) yield handOver(p)
    else yield * pieces
  }

  async * getMany (source: Iterable<CID> | AsyncIterable<CID>, options?: { signal?: AbortSignal }): AsyncGenerator<Pair> {
    for await (const cid of source) yield { cid, bytes: this.get(cid, options) }
  }

  async delete (cid: CID): Promise<void> {
    await this.b.remove([{ name: blockName(cid) }])
  }

  async * deleteMany (source: Iterable<CID> | AsyncIterable<CID>): AsyncGenerator<CID> {
    for await (const cid of source) {
      await this.delete(cid)
      yield cid
    }
  }

  async * getAll (options?: { signal?: AbortSignal }): AsyncGenerator<Pair> {
    for await (const page of this.b.list(options?.signal)) {
      for (const block of page) {
        const cid = CID.createV1(RAW, Digest.decode(base32upper.decode(block.name)))
        yield { cid, bytes: this.get(cid, options) }
      }
    }
  }
}
