/**
 * Shared fixtures for the gateway tests: a block store filled with
 * @helia/unixfs — a temp FsBlockstore, or, in the vitest project `s3`, the S3
 * backend on a bucket of the run's Ceph RADOS Gateway (test/helpers/backend.ts)
 * — a counting wrapper around it (open `get` iterators, reads), a real server
 * on 127.0.0.1:0, and a tracker that lets a test await the end of every
 * gateway handler (no sleeps).
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { unixfs } from '@helia/unixfs'
import * as dagPb from '@ipld/dag-pb'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { UnixFS } from 'ipfs-unixfs'
import type { CID } from 'multiformats/cid'
import { CID as CIDClass } from 'multiformats/cid'
import * as json from 'multiformats/codecs/json'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import type { Blockstore } from 'interface-blockstore'
import { afterAll, beforeAll } from 'vitest'
import { BLOCKSTORE, s3Backend } from '../../helpers/backend.js'
import { Router, type Handler } from '../../../src/http/router.js'
import { createHttpServer, type HttpServer } from '../../../src/http/server.js'
import { gatewayRoutes, type GatewayDeps } from '../../../src/http/routes/gateway.js'
import { silentLogger } from '../../../src/kernel/log.js'
import { ServePolicy } from '../../../src/service/serving/serve-policy.js'

export const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

/** Wraps the store: counts reads and the `get` iterators currently open. */
export class CountingBlockstore implements Pick<Blockstore, 'get' | 'has'> {
  open = 0
  reads = 0
  constructor (readonly inner: Pick<Blockstore, 'get' | 'has'>) {}
  /** the store's read-ahead hint (content.ts), passed through */
  get readAhead (): number | undefined {
    return (this.inner as { readAhead?: number }).readAhead
  }

  async has (cid: CID, options?: { signal?: AbortSignal }): Promise<boolean> {
    return await this.inner.has(cid, options)
  }

  async * get (cid: CID, options?: { signal?: AbortSignal }): AsyncGenerator<Uint8Array> {
    this.open++
    this.reads++
    try {
      yield * this.inner.get(cid, options)
    } finally {
      this.open--
    }
  }
}

/** fixed-size chunker (ipfs-unixfs-importer's Chunker shape) */
function chunker (size: number) {
  return async function * (source: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
    let buf = new Uint8Array(0)
    for await (const chunk of source) {
      const next = new Uint8Array(buf.byteLength + chunk.byteLength)
      next.set(buf, 0)
      next.set(chunk, buf.byteLength)
      buf = next
      while (buf.byteLength >= size) {
        yield buf.slice(0, size)
        buf = buf.slice(size)
      }
    }
    if (buf.byteLength > 0) yield buf
  }
}

export interface Fixture {
  dir: string
  /** the block store under test (on disk, or the S3 backend's) */
  fs: Blockstore
  store: CountingBlockstore
  /** a few MiB, 10 000-byte chunks, 174 links per node: two DAG levels, CIDv1 raw leaves */
  big: { cid: CID, bytes: Uint8Array }
  /** one raw block (bafk…) */
  rawLeaf: { cid: CID, bytes: Uint8Array }
  /** CIDv0 dag-pb with dag-pb leaves */
  v0: { cid: CID, bytes: Uint8Array }
  /** directory tree, see files */
  root: CID
  files: Record<string, Uint8Array>
  cids: Record<string, CID>
  /** HAMT-sharded directory with 40 files f00.txt … f39.txt */
  hamt: CID
  /** 1 GiB virtual file: 1024 links to one 1 MiB leaf (2 blocks on disk) */
  huge: { cid: CID, leaf: CID, size: number }
  /** a json-codec block */
  jsonBlock: { cid: CID, bytes: Uint8Array }
  /** held locally but NOT servable */
  unservable: CID
  /** servable, root present, one middle leaf deleted */
  broken: { cid: CID, bytes: Uint8Array, missingLeafIndex: number }
  close(): Promise<void>
}

export async function makeFixture (): Promise<Fixture> {
  const dir = await mkdtemp(join(tmpdir(), 'pind-gw-'))
  let fsStore: Blockstore
  let closeStore: () => Promise<void>
  if (BLOCKSTORE === 's3') {
    const backend = await s3Backend()
    fsStore = backend.blockstore
    closeStore = async () => { await backend.close() }
  } else {
    // the node's own disk store: its reads are handed over to the gateway, which frees them once written
    const disk = new FsBackend(join(dir, 'blocks'))
    await disk.open()
    fsStore = disk.blockstore
    closeStore = async () => { await disk.close() }
  }
  const store = new CountingBlockstore(fsStore)
  const ufs = unixfs({ blockstore: fsStore })

  const bigBytes = randomBytes(3 * 1024 * 1024 + 12345)
  // profile v0 gives 174 links per node; we keep CIDv1 + raw leaves
  const bigCid = await ufs.addBytes(bigBytes, {
    profile: 'unixfs-v0-2015', cidVersion: 1, rawLeaves: true, layout: undefined, chunker: chunker(10_000)
  })

  const rawBytes = randomBytes(1000)
  const rawCid = await ufs.addBytes(rawBytes, { rawLeaves: true })

  const v0Bytes = randomBytes(300_000)
  const v0Cid = await ufs.addBytes(v0Bytes, { cidVersion: 0, rawLeaves: false, chunker: chunker(65_536) })

  const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89])
  const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
  const files: Record<string, Uint8Array> = {
    'hello.txt': enc('hello world\n'),
    'page.html': enc('<!doctype html><html><body><script>alert(1)</script></body></html>'),
    'img.svg': enc('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
    'nested/deep/file.txt': enc('deep inside\n'),
    'weird <b>&"name".txt': enc('weird\n'),
    'site/index.html': enc('<!doctype html><title>site</title>'),
    'site/other.txt': enc('other\n'),
    noext: png,
    textnoext: enc('just some text, no extension\n'),
    'data.json': enc('{"a":1}'),
    'ünï.txt': enc('unicode name\n')
  }
  const cids: Record<string, CID> = {}
  let root: CID | undefined
  for await (const entry of ufs.addAll(Object.entries(files).map(([path, content]) => ({ path: `root/${path}`, content })), { rawLeaves: true })) {
    cids[entry.path ?? ''] = entry.cid
    if (entry.path === 'root') root = entry.cid
  }
  if (root == null) throw new Error('no root dir')

  let hamt: CID | undefined
  const hamtFiles = Array.from({ length: 40 }, (_, i) => ({ path: `hamt/f${String(i).padStart(2, '0')}.txt`, content: enc(`file ${i}\n`) }))
  for await (const entry of ufs.addAll(hamtFiles, { shardSplitThresholdBytes: 1, rawLeaves: true })) {
    if (entry.path === 'hamt') hamt = entry.cid
  }
  if (hamt == null) throw new Error('no hamt dir')

  // 1 GiB of the same 1 MiB leaf, two blocks on disk
  const leafBytes = randomBytes(1024 * 1024)
  const leaf = CIDClass.createV1(raw.code, await sha256.digest(leafBytes))
  await fsStore.put(leaf, leafBytes)
  const hugeFs = new UnixFS({ type: 'file', blockSizes: Array.from({ length: 1024 }, () => BigInt(leafBytes.byteLength)) })
  const hugeBlock = dagPb.encode(dagPb.prepare({ Data: hugeFs.marshal(), Links: Array.from({ length: 1024 }, () => ({ Hash: leaf, Tsize: leafBytes.byteLength })) }))
  const hugeCid = CIDClass.createV1(dagPb.code, await sha256.digest(hugeBlock))
  await fsStore.put(hugeCid, hugeBlock)

  const jsonBytes = json.encode({ hello: 'json' })
  const jsonCid = CIDClass.createV1(json.code, await sha256.digest(jsonBytes))
  await fsStore.put(jsonCid, jsonBytes)

  const unservable = await ufs.addBytes(enc('secret, held but not pinned'))

  const brokenBytes = randomBytes(200_000)
  const brokenCid = await ufs.addBytes(brokenBytes, { rawLeaves: true, chunker: chunker(10_000) })
  const brokenRoot = dagPb.decode(await collect(fsStore.get(brokenCid)))
  const missingLeafIndex = 10
  await fsStore.delete((brokenRoot.Links[missingLeafIndex] as dagPb.PBLink).Hash)

  return {
    dir,
    fs: fsStore,
    store,
    big: { cid: bigCid, bytes: bigBytes },
    rawLeaf: { cid: rawCid, bytes: rawBytes },
    v0: { cid: v0Cid, bytes: v0Bytes },
    root,
    files,
    cids,
    hamt,
    huge: { cid: hugeCid, leaf, size: 1024 * leafBytes.byteLength },
    jsonBlock: { cid: jsonCid, bytes: jsonBytes },
    unservable,
    broken: { cid: brokenCid, bytes: brokenBytes, missingLeafIndex },
    close: async () => {
      await closeStore()
      await rm(dir, { recursive: true, force: true })
    }
  }
}

export async function collect (source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  for await (const c of source) chunks.push(c)
  return Buffer.concat(chunks)
}

/** Wraps Router.add so a test can await the end of every handler started so far. */
export function trackHandlers (router: Router): { settled(): Promise<void>, finished: boolean[] } {
  const active = new Set<Promise<void>>()
  const finished: boolean[] = []
  const add = router.add.bind(router)
  router.add = (method: string, pattern: string, handler: Handler) => add(method, pattern, async (ctx) => {
    const run = (async () => {
      try {
        await handler(ctx)
      } finally {
        finished.push(ctx.res.writableFinished)
      }
    })()
    active.add(run)
    try {
      await run
    } finally {
      active.delete(run)
    }
  })
  return {
    finished,
    settled: async () => {
      while (active.size > 0) await Promise.allSettled([...active])
    }
  }
}

export interface Served {
  fixture: Fixture
  server: HttpServer
  base: string
  port: number
  tracker: ReturnType<typeof trackHandlers>
  servable: Set<string>
  close(): Promise<void>
}

export async function serve (options: Partial<GatewayDeps> = {}, fixture?: Fixture): Promise<Served> {
  const fx = fixture ?? await makeFixture()
  const servable = new Set<string>([
    fx.big.cid, fx.rawLeaf.cid, fx.v0.cid, fx.root, fx.hamt, fx.huge.cid, fx.jsonBlock.cid, fx.broken.cid
  ].map(c => c.toString()))
  const router = new Router()
  const tracker = trackHandlers(router)
  // the real policy (identity CIDs, denials), over this set instead of a ledger
  const policy = new ServePolicy({ pins: { isPinnedBlock: (c) => servable.has(c.toString()), hasLivePin: () => false }, scope: 'pinned' })
  gatewayRoutes(router, {
    blockstore: fx.store,
    isServable: (root) => policy.mayServe(root, 'gateway'),
    ...options
  })
  const server = createHttpServer(router, silentLogger)
  const { port } = await server.listen('127.0.0.1', 0)
  return {
    fixture: fx,
    server,
    base: `http://127.0.0.1:${port}`,
    port,
    tracker,
    servable,
    close: async () => {
      await server.close(1000)
      if (fixture == null) await fx.close()
    }
  }
}

export interface RawResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Uint8Array
  /** false when the server cut the connection before the end of the body */
  complete: boolean
}

/** A GET with node:http on a fresh connection, reporting an incomplete body instead of failing. */
export async function rawGet (url: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  const { request } = await import('node:http')
  return await new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      let complete = false
      res.on('data', (c: Buffer) => { chunks.push(c) })
      res.on('end', () => { complete = res.complete })
      res.on('error', () => {})
      res.on('close', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), complete: complete && res.complete })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

/**
 * Serves the fixture for the whole test file: the returned object is filled
 * in before the first test and closed after the last.
 */
export function useServed (options: Partial<GatewayDeps> = {}): Served {
  const served = {} as Served
  beforeAll(async () => { Object.assign(served, await serve(options)) }, 60_000)
  afterAll(async () => { await served.close?.() })
  return served
}
