import * as dagPb from '@ipld/dag-pb'
import { CarBlockIterator } from '@ipld/car/iterator'
import { exporter } from 'ipfs-unixfs-exporter'
import type { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { describe, expect, it } from 'vitest'
import { readFile, loadEntry, type LocalBlockstore } from '../../../src/ipfs/content.js'
import { collect, rawGet, useServed, sha } from './helpers.js'

const s = useServed()

const get = async (path: string, init: RequestInit = {}): Promise<Response> => await fetch(`${s.base}${path}`, { redirect: 'manual', ...init })

interface ParsedCar { roots: CID[], blocks: Array<{ cid: CID, bytes: Uint8Array }> }

/** parses a CAR and checks every block's hash against its CID */
async function parseCar (body: Uint8Array): Promise<ParsedCar> {
  const it = await CarBlockIterator.fromBytes(body)
  const roots = await it.getRoots()
  const blocks: ParsedCar['blocks'] = []
  for await (const { cid, bytes } of it) {
    expect(cid.multihash.code).toBe(sha256.code)
    const digest = await sha256.digest(bytes)
    expect(Buffer.compare(Buffer.from(digest.digest), Buffer.from(cid.multihash.digest)), `hash of ${cid}`).toBe(0)
    blocks.push({ cid, bytes })
  }
  return { roots, blocks }
}

const getCar = async (path: string, init: RequestInit = {}): Promise<ParsedCar & { res: Response }> => {
  const res = await get(path, init)
  expect(res.status, path).toBe(200)
  const car = await parseCar(new Uint8Array(await res.arrayBuffer()))
  return { ...car, res }
}

/** a read-only store over CAR blocks: proves the CAR alone is enough */
function carStore (car: ParsedCar): LocalBlockstore {
  const map = new Map(car.blocks.map(b => [b.cid.toString(), b.bytes]))
  const lookup = (cid: CID): Uint8Array => {
    const bytes = map.get(cid.toString())
    if (bytes == null) throw Object.assign(new Error(`missing ${cid}`), { name: 'NotFoundError' })
    return bytes
  }
  return {
    has: async (cid: CID) => map.has(cid.toString()),
    get: async function * (cid: CID) { yield lookup(cid) }
  }
}

/** the big file's blocks in DFS order, straight from the blockstore */
async function dfs (cid: CID): Promise<string[]> {
  const out = [cid.toString()]
  if (cid.code !== dagPb.code) return out
  const node = dagPb.decode(await collect(s.fixture.fs.get(cid)))
  for (const l of node.Links) out.push(...await dfs(l.Hash))
  return out
}

/** the big file's layout: [root, internal nodes with their leaves] */
async function layout (): Promise<{ root: string, internals: Array<{ cid: string, leaves: string[] }> }> {
  const root = s.fixture.big.cid
  const node = dagPb.decode(await collect(s.fixture.fs.get(root)))
  const internals = []
  for (const l of node.Links) {
    const inner = dagPb.decode(await collect(s.fixture.fs.get(l.Hash)))
    internals.push({ cid: l.Hash.toString(), leaves: inner.Links.map(x => x.Hash.toString()) })
  }
  return { root: root.toString(), internals }
}

describe('raw blocks', () => {
  it('?format=raw returns the block, verifiable, with the spec headers', async () => {
    const { cid } = s.fixture.big
    const r = await get(`/ipfs/${cid}?format=raw`)
    expect(r.status).toBe(200)
    const body = new Uint8Array(await r.arrayBuffer())
    expect(Buffer.compare(Buffer.from((await sha256.digest(body)).digest), Buffer.from(cid.multihash.digest))).toBe(0)
    expect(r.headers.get('content-type')).toBe('application/vnd.ipld.raw')
    expect(r.headers.get('content-disposition')).toBe(`attachment; filename="${cid}.bin"`)
    expect(r.headers.get('etag')).toBe(`"${cid}.raw"`)
    expect(r.headers.get('x-content-type-options')).toBe('nosniff')
    expect(r.headers.get('cache-control')).toBe('public, max-age=29030400, immutable')
    expect(r.headers.get('content-length')).toBe(String(body.byteLength))
    expect(r.headers.get('content-location')).toBeNull()
  })

  it('Accept: application/vnd.ipld.raw negotiates raw and sends Content-Location', async () => {
    const { cid } = s.fixture.rawLeaf
    const r = await get(`/ipfs/${cid}`, { headers: { accept: 'application/vnd.ipld.raw' } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('application/vnd.ipld.raw')
    expect(r.headers.get('content-location')).toBe(`/ipfs/${cid}?format=raw`)
    expect(sha(new Uint8Array(await r.arrayBuffer()))).toBe(sha(s.fixture.rawLeaf.bytes))
  })

  it('format wins over Accept', async () => {
    const { cid } = s.fixture.rawLeaf
    const r = await get(`/ipfs/${cid}?format=raw`, { headers: { accept: 'application/vnd.ipld.car' } })
    expect(r.headers.get('content-type')).toBe('application/vnd.ipld.raw')
    expect(r.headers.get('content-location')).toBe(`/ipfs/${cid}?format=raw`)
    await r.arrayBuffer()
    const c = await get(`/ipfs/${cid}?format=car`, { headers: { accept: 'application/vnd.ipld.raw' } })
    expect(c.headers.get('content-type')).toContain('application/vnd.ipld.car')
    await c.arrayBuffer()
  })

  it('304 on the raw ETag, 400 with a path, 404 when absent', async () => {
    const { cid } = s.fixture.big
    const r = await get(`/ipfs/${cid}?format=raw`, { headers: { 'if-none-match': `"${cid}.raw"` } })
    expect(r.status).toBe(304)
    const p = await get(`/ipfs/${s.fixture.root}/hello.txt?format=raw`)
    expect(p.status).toBe(400)
    expect(((await p.json()) as { error: { reason: string } }).error.reason).toBe('BAD_REQUEST')
    const absent = 'bafkreiaxnnnb7qz2focittuqq3ya25q7rcv3bqynnczfzako47346wosmu'
    s.servable.add(absent)
    const a = await get(`/ipfs/${absent}?format=raw`)
    expect(a.status).toBe(404)
    await a.arrayBuffer()
  })

  it('typed block formats only for their own codec', async () => {
    const { cid } = s.fixture.jsonBlock
    const ok = await get(`/ipfs/${cid}?format=json`)
    expect(ok.status).toBe(200)
    expect(ok.headers.get('content-type')).toBe('application/json')
    expect(await ok.json()).toEqual({ hello: 'json' })
    const no = await get(`/ipfs/${cid}?format=dag-json`)
    expect(no.status).toBe(406)
    await no.arrayBuffer()
  })
})

describe('probe', () => {
  it('bafkqaaa: raw 200 empty, CAR with roots [bafkqaaa] and no blocks, HEAD 200', async () => {
    const raw = await get('/ipfs/bafkqaaa?format=raw')
    expect(raw.status).toBe(200)
    expect((await raw.arrayBuffer()).byteLength).toBe(0)
    const car = await getCar('/ipfs/bafkqaaa?format=car')
    expect(car.roots.map(String)).toEqual(['bafkqaaa'])
    expect(car.blocks).toHaveLength(0)
    const head = await get('/ipfs/bafkqaaa', { method: 'HEAD', headers: { accept: 'application/vnd.ipld.raw' } })
    expect(head.status).toBe(200)
  })
})

describe('CAR', () => {
  it('headers: content type with version/order/dups, attachment, strong etag per params', async () => {
    const { cid } = s.fixture.big
    const { res } = await getCar(`/ipfs/${cid}?format=car`)
    expect(res.headers.get('content-type')).toBe('application/vnd.ipld.car; version=1; order=dfs; dups=n')
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${cid}.car"`)
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('cache-control')).toBe('public, max-age=29030400, immutable')
    expect(res.headers.get('content-length')).toBeNull() // streamed
    const etag = res.headers.get('etag') ?? ''
    expect(etag).toMatch(new RegExp(`^"${cid.toString()}\\.car\\.[A-Za-z0-9_-]+"$`))
    const block = await get(`/ipfs/${cid}?format=car&dag-scope=block`)
    expect(block.headers.get('etag')).not.toBe(etag)
    await block.arrayBuffer()
    const eb = await get(`/ipfs/${cid}?format=car&entity-bytes=0:10`)
    expect(eb.headers.get('etag')).not.toBe(etag)
    expect(eb.headers.get('etag')).not.toBe(block.headers.get('etag'))
    await eb.arrayBuffer()
    const nm = await get(`/ipfs/${cid}?format=car`, { headers: { 'if-none-match': etag } })
    expect(nm.status).toBe(304)
  })

  it('Accept with CAR parameters: dups=y honoured, Content-Location names them', async () => {
    const { cid } = s.fixture.rawLeaf
    const { res } = await getCar(`/ipfs/${cid}`, { headers: { accept: 'application/vnd.ipld.car; version=1; order=dfs; dups=y' } })
    expect(res.headers.get('content-type')).toBe('application/vnd.ipld.car; version=1; order=dfs; dups=y')
    const loc = new URL(res.headers.get('content-location') ?? '', s.base)
    expect(loc.pathname).toBe(`/ipfs/${cid}`)
    expect(loc.searchParams.get('format')).toBe('car')
    expect(loc.searchParams.get('car-dups')).toBe('y')
    expect(loc.searchParams.get('car-order')).toBe('dfs')
    expect(loc.searchParams.get('car-version')).toBe('1')
    // order=unk is accepted (we send dfs, which satisfies it)
    const unk = await getCar(`/ipfs/${cid}?format=car&car-order=unk`)
    expect(unk.res.headers.get('content-type')).toContain('order=dfs')
  })

  it('dag-scope=block / entity / all on a two-level file: roots and blocks right, DFS order', async () => {
    const { cid, bytes } = s.fixture.big
    const all = await dfs(cid)
    const block = await getCar(`/ipfs/${cid}?format=car&dag-scope=block`)
    expect(block.roots.map(String)).toEqual([cid.toString()])
    expect(block.blocks.map(b => b.cid.toString())).toEqual([cid.toString()])

    for (const scope of ['entity', 'all']) {
      const car = await getCar(`/ipfs/${cid}?format=car&dag-scope=${scope}`)
      expect(car.roots.map(String)).toEqual([cid.toString()])
      expect(car.blocks.map(b => b.cid.toString()), scope).toEqual(all)
      // the CAR alone rebuilds the file
      const store = carStore(car)
      const entry = await loadEntry(store, cid)
      if (entry.kind !== 'file') throw new Error('not a file')
      expect(sha(await collect(readFile(store, entry)))).toBe(sha(bytes))
    }
    // default scope is all
    const def = await getCar(`/ipfs/${cid}?format=car`)
    expect(def.blocks.map(b => b.cid.toString())).toEqual(all)
  })

  it('entity-bytes returns only the blocks covering the range', async () => {
    const { cid, bytes } = s.fixture.big
    const { root, internals } = await layout()
    const [i0, i1] = internals as [{ cid: string, leaves: string[] }, { cid: string, leaves: string[] }]
    const cases: Array<[string, string[], number, number]> = [
      ['0:9999', [root, i0.cid, i0.leaves[0] as string], 0, 9999],
      ['0:10000', [root, i0.cid, i0.leaves[0] as string, i0.leaves[1] as string], 0, 10000],
      // crosses from the last leaf of the first internal node into the second
      ['1739000:1741000', [root, i0.cid, i0.leaves[173] as string, i1.cid, i1.leaves[0] as string], 1_739_000, 1_741_000],
      ['-500:*', [root, internals.at(-1)?.cid as string, internals.at(-1)?.leaves.at(-1) as string], bytes.byteLength - 500, bytes.byteLength - 1],
      [`10:${bytes.byteLength + 999}`, await dfs(cid), 10, bytes.byteLength - 1]
    ]
    for (const [eb, expected, from, to] of cases) {
      const car = await getCar(`/ipfs/${cid}?format=car&entity-bytes=${eb}`)
      expect(car.roots.map(String)).toEqual([cid.toString()])
      expect(car.blocks.map(b => b.cid.toString()), eb).toEqual(expected)
      const store = carStore(car)
      const entry = await loadEntry(store, cid)
      if (entry.kind !== 'file') throw new Error('not a file')
      const got = await collect(readFile(store, entry, { offset: BigInt(from), length: BigInt(to - from + 1) }))
      expect(Buffer.compare(Buffer.from(got), Buffer.from(bytes.subarray(from, to + 1))), eb).toBe(0)
    }
    // zero-length range: the root block alone
    const empty = await getCar(`/ipfs/${cid}?format=car&entity-bytes=-10:-20`)
    expect(empty.blocks.map(b => b.cid.toString())).toEqual([root])
    // entirely outside: 400
    const outside = await get(`/ipfs/${cid}?format=car&entity-bytes=${bytes.byteLength}:*`)
    expect(outside.status).toBe(400)
    await outside.arrayBuffer()
  })

  it('dups=y repeats a block each time the walk meets it, dups=n sends it once', async () => {
    const { cid, leaf } = s.fixture.huge
    const mib = 1024 * 1024
    const y = await getCar(`/ipfs/${cid}?format=car&car-dups=y&entity-bytes=0:${3 * mib - 1}`)
    expect(y.res.headers.get('content-type')).toContain('dups=y')
    expect(y.blocks.map(b => b.cid.toString())).toEqual([cid, leaf, leaf, leaf].map(String))
    const n = await getCar(`/ipfs/${cid}?format=car&car-dups=n&entity-bytes=0:${3 * mib - 1}`)
    expect(n.blocks.map(b => b.cid.toString())).toEqual([cid, leaf].map(String))
    // the whole 1 GiB DAG with dups=n is two blocks
    const all = await getCar(`/ipfs/${cid}?format=car`)
    expect(all.blocks.map(b => b.cid.toString())).toEqual([cid, leaf].map(String))
  })

  it('a path CAR carries the blocks that verify each segment, then the terminus', async () => {
    const root = s.fixture.root
    const c = s.fixture.cids
    const path = `/ipfs/${root}/nested/deep/file.txt?format=car`
    const car = await getCar(path)
    expect(car.roots.map(String)).toEqual([root.toString()])
    expect(car.blocks.map(b => b.cid.toString())).toEqual([root, c['root/nested'], c['root/nested/deep'], c['root/nested/deep/file.txt']].map(String))
    expect(car.res.headers.get('x-ipfs-roots')).toBe([root, c['root/nested'], c['root/nested/deep'], c['root/nested/deep/file.txt']].join(','))
    // a verifier can walk the path with only these blocks
    const entry = await exporter(`/ipfs/${root}/nested/deep/file.txt`, carStore(car))
    expect(entry.cid.toString()).toBe(c['root/nested/deep/file.txt']?.toString())
  })

  it('HAMT: path through shards, entity = the shard blocks only', async () => {
    const hamt = s.fixture.hamt
    const car = await getCar(`/ipfs/${hamt}/f17.txt?format=car&dag-scope=block`)
    const entry = await exporter(`/ipfs/${hamt}/f17.txt`, carStore(car))
    if (entry.type !== 'raw' && entry.type !== 'file') throw new Error(`unexpected ${entry.type}`)
    expect(new TextDecoder().decode(await collect(entry.content()))).toBe('file 17\n')

    const entity = await getCar(`/ipfs/${hamt}?format=car&dag-scope=entity`)
    expect(entity.blocks.every(b => b.cid.code === dagPb.code)).toBe(true) // no file blocks
    const dir = await exporter(hamt, carStore(entity))
    if (dir.type !== 'directory') throw new Error('not a dir')
    const names = []
    for await (const e of dir.entries()) names.push(e.name)
    expect(names.sort()).toEqual(Array.from({ length: 40 }, (_, i) => `f${String(i).padStart(2, '0')}.txt`))

    const all = await getCar(`/ipfs/${hamt}?format=car`)
    expect(all.blocks.length).toBe(entity.blocks.length + 40)
  })

  it('a directory with dag-scope=entity is its block alone; all is the whole tree', async () => {
    const root = s.fixture.root
    const entity = await getCar(`/ipfs/${root}?format=car&dag-scope=entity`)
    expect(entity.blocks.map(b => b.cid.toString())).toEqual([root.toString()])
    const all = await getCar(`/ipfs/${root}?format=car`)
    const cids = new Set(all.blocks.map(b => b.cid.toString()))
    for (const c of Object.values(s.fixture.cids)) expect(cids.has(c.toString())).toBe(true)
  })

  it('a missing child block cuts the CAR stream; a missing root is a 404', async () => {
    const r = await rawGet(`${s.base}/ipfs/${s.fixture.broken.cid}?format=car`)
    expect(r.status).toBe(200)
    expect(r.complete).toBe(false)
    const absent = 'bafkreiaxnnnb7qz2focittuqq3ya25q7rcv3bqynnczfzako47346wosmu'
    s.servable.add(absent)
    const a = await get(`/ipfs/${absent}?format=car`)
    expect(a.status).toBe(404)
    await a.arrayBuffer()
  })

  it('400 for bad parameters, 406 for unsupported CAR variants', async () => {
    const { cid } = s.fixture.big
    for (const q of ['dag-scope=everything', 'entity-bytes=abc', 'entity-bytes=10:5', 'car-dups=maybe', 'dag-scope=all&entity-bytes=0:1']) {
      const r = await get(`/ipfs/${cid}?format=car&${q}`)
      expect(r.status, q).toBe(q.startsWith('car-dups') ? 406 : 400)
      await r.arrayBuffer()
    }
    for (const q of ['car-version=2', 'car-order=bfs']) {
      const r = await get(`/ipfs/${cid}?format=car&${q}`)
      expect(r.status, q).toBe(406)
      expect(((await r.json()) as { error: { reason: string } }).error.reason).toBe('NOT_ACCEPTABLE')
    }
  })

  it('no open block iterators are left behind', async () => {
    await s.tracker.settled()
    expect(s.fixture.store.open).toBe(0)
  })
})
