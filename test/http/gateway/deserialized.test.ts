import * as dagPb from '@ipld/dag-pb'
import { describe, expect, it } from 'vitest'
import { collect, rawGet, serve, useServed, sha } from './helpers.js'

const s = useServed()

const get = async (path: string, init: RequestInit = {}): Promise<Response> => await fetch(`${s.base}${path}`, { redirect: 'manual', ...init })
const bytesOf = async (r: Response): Promise<Uint8Array> => new Uint8Array(await r.arrayBuffer())

/** headers that legitimately differ between GET and HEAD or between two requests */
const VOLATILE = new Set(['x-request-id', 'date', 'connection', 'keep-alive', 'transfer-encoding'])
const stable = (h: Headers): Record<string, string> => Object.fromEntries([...h.entries()].filter(([k]) => !VOLATILE.has(k)))

describe('files', () => {
  it('streams a multi-block file (two DAG levels, CIDv1, raw leaves) byte-exact', async () => {
    const { cid, bytes } = s.fixture.big
    // the fixture really has an intermediate dag-pb level
    const rootNode = dagPb.decode(await collect(s.fixture.fs.get(cid)))
    expect(rootNode.Links.length).toBeGreaterThan(1)
    expect(rootNode.Links[0]?.Hash.code).toBe(dagPb.code)

    const r = await get(`/ipfs/${cid}`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-length')).toBe(String(bytes.byteLength))
    expect(r.headers.get('content-type')).toBe('application/octet-stream')
    expect(r.headers.get('etag')).toBe(`"${cid}"`)
    expect(r.headers.get('cache-control')).toBe('public, max-age=29030400, immutable')
    expect(r.headers.get('x-content-type-options')).toBe('nosniff')
    expect(r.headers.get('accept-ranges')).toBe('bytes')
    expect(r.headers.get('vary')).toBe('Accept')
    expect(r.headers.get('x-ipfs-path')).toBe(`/ipfs/${cid}`)
    expect(r.headers.get('x-ipfs-roots')).toBe(cid.toString())
    expect(r.headers.get('content-location')).toBeNull()
    expect(sha(await bytesOf(r))).toBe(sha(bytes))
  })

  it('serves a raw-codec block and a CIDv0 dag-pb file', async () => {
    const raw = await get(`/ipfs/${s.fixture.rawLeaf.cid}`)
    expect(raw.status).toBe(200)
    expect(sha(await bytesOf(raw))).toBe(sha(s.fixture.rawLeaf.bytes))

    const { cid, bytes } = s.fixture.v0
    expect(cid.version).toBe(0)
    const v0 = await get(`/ipfs/${cid}`)
    expect(v0.status).toBe(200)
    expect(v0.headers.get('etag')).toBe(`"${cid}"`)
    expect(sha(await bytesOf(v0))).toBe(sha(bytes))
  })

  it('HEAD has the same headers as GET and no body', async () => {
    for (const path of [`/ipfs/${s.fixture.big.cid}`, `/ipfs/${s.fixture.root}/hello.txt`, `/ipfs/${s.fixture.root}/`, `/ipfs/${s.fixture.big.cid}?format=car`]) {
      const g = await get(path)
      await g.arrayBuffer()
      const h = await get(path, { method: 'HEAD' })
      expect(h.status).toBe(g.status)
      expect(stable(h.headers)).toEqual(stable(g.headers))
      expect((await bytesOf(h)).byteLength).toBe(0)
    }
    // and for a range
    const g = await get(`/ipfs/${s.fixture.big.cid}`, { headers: { range: 'bytes=100-199' } })
    await g.arrayBuffer()
    const h = await get(`/ipfs/${s.fixture.big.cid}`, { method: 'HEAD', headers: { range: 'bytes=100-199' } })
    expect(h.status).toBe(206)
    expect(stable(h.headers)).toEqual(stable(g.headers))
  })

  it('answers If-None-Match with 304', async () => {
    const { cid } = s.fixture.big
    const r = await get(`/ipfs/${cid}`, { headers: { 'if-none-match': `"${cid}"` } })
    expect(r.status).toBe(304)
    expect(r.headers.get('etag')).toBe(`"${cid}"`)
    expect(r.headers.get('cache-control')).toContain('immutable')
    expect((await bytesOf(r)).byteLength).toBe(0)
    const list = await get(`/ipfs/${cid}`, { headers: { 'if-none-match': `"other", W/"${cid}"` } })
    expect(list.status).toBe(304)
    const miss = await get(`/ipfs/${cid}`, { headers: { 'if-none-match': '"nope"' } })
    expect(miss.status).toBe(200)
    await miss.arrayBuffer()
  })
})

describe('ranges', () => {
  const size = (): number => s.fixture.big.bytes.byteLength
  const expectRange = async (range: string, start: number, endInclusive: number): Promise<void> => {
    const { cid, bytes } = s.fixture.big
    const r = await get(`/ipfs/${cid}`, { headers: { range } })
    expect(r.status, range).toBe(206)
    expect(r.headers.get('content-range')).toBe(`bytes ${start}-${endInclusive}/${bytes.byteLength}`)
    expect(r.headers.get('content-length')).toBe(String(endInclusive - start + 1))
    expect(r.headers.get('etag')).toBe(`"${cid}"`)
    const body = await bytesOf(r)
    expect(Buffer.compare(Buffer.from(body), Buffer.from(bytes.subarray(start, endInclusive + 1))), range).toBe(0)
  }

  it('start, middle across block and node boundaries, end', async () => {
    await expectRange('bytes=0-0', 0, 0)
    await expectRange('bytes=0-9999', 0, 9999) // exactly one leaf
    await expectRange('bytes=9990-10010', 9990, 10010) // across two leaves
    // across the boundary between the two intermediate nodes (174 leaves each)
    await expectRange('bytes=1739000-1741000', 1_739_000, 1_741_000)
    await expectRange(`bytes=1000000-${size() - 1}`, 1_000_000, size() - 1)
    await expectRange(`bytes=${size() - 1}-${size() - 1}`, size() - 1, size() - 1)
  })

  it('suffix and open-ended ranges, and an end past the size is clamped', async () => {
    await expectRange('bytes=-500', size() - 500, size() - 1)
    await expectRange(`bytes=-${size() + 10}`, 0, size() - 1)
    await expectRange('bytes=3000000-', 3_000_000, size() - 1)
    await expectRange(`bytes=5-${size() + 1000}`, 5, size() - 1)
  })

  it('416 with Content-Range bytes */size beyond the end', async () => {
    const { cid } = s.fixture.big
    for (const range of [`bytes=${size()}-`, `bytes=${size() + 5}-${size() + 10}`, 'bytes=-0']) {
      const r = await get(`/ipfs/${cid}`, { headers: { range } })
      expect(r.status, range).toBe(416)
      expect(r.headers.get('content-range')).toBe(`bytes */${size()}`)
      const body = await r.json() as { error: { reason: string } }
      expect(body.error.reason).toBe('RANGE_NOT_SATISFIABLE')
    }
  })

  it('multi-range and unparseable ranges get the whole entity with 200', async () => {
    const { cid, bytes } = s.fixture.big
    for (const range of ['bytes=0-9,20-29', 'bytes=abc', 'items=0-5', 'bytes=10-5']) {
      const r = await get(`/ipfs/${cid}`, { headers: { range } })
      expect(r.status, range).toBe(200)
      expect(sha(await bytesOf(r))).toBe(sha(bytes))
    }
  })

  it('If-Range with a different ETag ignores the range', async () => {
    const { cid, bytes } = s.fixture.big
    const r = await get(`/ipfs/${cid}`, { headers: { range: 'bytes=0-9', 'if-range': '"other"' } })
    expect(r.status).toBe(200)
    expect((await bytesOf(r)).byteLength).toBe(bytes.byteLength)
    const ok = await get(`/ipfs/${cid}`, { headers: { range: 'bytes=0-9', 'if-range': `"${cid}"` } })
    expect(ok.status).toBe(206)
    expect((await bytesOf(ok)).byteLength).toBe(10)
  })

  it('ranges on a CIDv0 file with dag-pb leaves', async () => {
    const { cid, bytes } = s.fixture.v0
    const r = await get(`/ipfs/${cid}`, { headers: { range: 'bytes=65530-131080' } })
    expect(r.status).toBe(206)
    expect(Buffer.compare(Buffer.from(await bytesOf(r)), Buffer.from(bytes.subarray(65530, 131081)))).toBe(0)
  })
})

describe('directories and paths', () => {
  it('301 to the trailing-slash form, keeping the query', async () => {
    const r = await get(`/ipfs/${s.fixture.root}?x=1`)
    expect(r.status).toBe(301)
    expect(r.headers.get('location')).toBe(`/ipfs/${s.fixture.root}/?x=1`)
    const nested = await get(`/ipfs/${s.fixture.root}/nested`)
    expect(nested.status).toBe(301)
    expect(nested.headers.get('location')).toBe(`/ipfs/${s.fixture.root}/nested/`)
  })

  it('generated listing: names, sizes, CIDs, HTML-escaped, strict CSP', async () => {
    const r = await get(`/ipfs/${s.fixture.root}/`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(r.headers.get('content-security-policy')).toContain("default-src 'none'")
    expect(r.headers.get('content-disposition')).toBeNull()
    expect(r.headers.get('etag')).toMatch(new RegExp(`^"DirIndex-.+_CID-${s.fixture.root.toString()}"$`))
    const html = await r.text()
    expect(html).toContain('hello.txt')
    expect(html).toContain(s.fixture.cids['root/hello.txt']?.toString())
    expect(html).toContain('weird &lt;b&gt;&amp;&quot;name&quot;.txt')
    expect(html).not.toContain('<b>&')
    expect(html).toContain('href="./weird%20%3Cb%3E%26%22name%22.txt"')
    expect(html).toContain('ünï.txt')
    expect(html).not.toMatch(/<script/i)
    // the escaped link resolves
    const weird = await get(`/ipfs/${s.fixture.root}/weird%20%3Cb%3E%26%22name%22.txt`)
    expect(await weird.text()).toBe('weird\n')
    const uni = await get(`/ipfs/${s.fixture.root}/${encodeURIComponent('ünï.txt')}`)
    expect(await uni.text()).toBe('unicode name\n')
  })

  it('index.html wins over the listing (as an attachment unless active content is allowed)', async () => {
    const r = await get(`/ipfs/${s.fixture.root}/site/`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(r.headers.get('content-disposition')).toBe('attachment; filename="index.html"')
    expect(r.headers.get('x-ipfs-roots')).toBe(`${s.fixture.root},${s.fixture.cids['root/site']}`)
    expect(await r.text()).toBe('<!doctype html><title>site</title>')
  })

  it('nested paths, with X-Ipfs-Roots one CID per segment', async () => {
    const path = `/ipfs/${s.fixture.root}/nested/deep/file.txt`
    const r = await get(path)
    expect(r.status).toBe(200)
    expect(await r.text()).toBe('deep inside\n')
    expect(r.headers.get('x-ipfs-path')).toBe(path)
    expect(r.headers.get('x-ipfs-roots')).toBe([s.fixture.root, s.fixture.cids['root/nested'], s.fixture.cids['root/nested/deep'], s.fixture.cids['root/nested/deep/file.txt']].join(','))
    expect(r.headers.get('etag')).toBe(`"${s.fixture.cids['root/nested/deep/file.txt']}"`)
  })

  it('HAMT-sharded directory: listing and path resolution', async () => {
    const list = await get(`/ipfs/${s.fixture.hamt}/`)
    expect(list.status).toBe(200)
    const html = await list.text()
    for (let i = 0; i < 40; i++) expect(html).toContain(`f${String(i).padStart(2, '0')}.txt`)
    const f = await get(`/ipfs/${s.fixture.hamt}/f17.txt`)
    expect(f.status).toBe(200)
    expect(await f.text()).toBe('file 17\n')
    const missing = await get(`/ipfs/${s.fixture.hamt}/nope.txt`)
    expect(missing.status).toBe(404)
  })
})

describe('content types and active content', () => {
  const typeOf = async (name: string): Promise<Response> => {
    const r = await get(`/ipfs/${s.fixture.root}/${name}`)
    await r.arrayBuffer()
    return r
  }

  it('by name, by sniffing, text fallback', async () => {
    expect((await typeOf('hello.txt')).headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect((await typeOf('data.json')).headers.get('content-type')).toBe('application/json')
    expect((await typeOf('noext')).headers.get('content-type')).toBe('image/png')
    expect((await typeOf('textnoext')).headers.get('content-type')).toBe('text/plain; charset=utf-8')
    // a CID without a name: sniffed
    s.servable.add(String(s.fixture.cids['root/img.svg']))
    const bare = await get(`/ipfs/${s.fixture.cids['root/img.svg']}`)
    await bare.arrayBuffer()
    expect(bare.headers.get('content-type')).toBe('image/svg+xml')
    expect(bare.headers.get('content-disposition')).toBe('attachment')
  })

  it('HTML and SVG are attachments, passive types are inline', async () => {
    const html = await typeOf('page.html')
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(html.headers.get('content-disposition')).toBe('attachment; filename="page.html"')
    expect(html.headers.get('x-content-type-options')).toBe('nosniff')
    const svg = await typeOf('img.svg')
    expect(svg.headers.get('content-type')).toBe('image/svg+xml')
    expect(svg.headers.get('content-disposition')).toBe('attachment; filename="img.svg"')
    const txt = await typeOf('hello.txt')
    expect(txt.headers.get('content-disposition')).toBeNull()
    const png = await typeOf('noext')
    expect(png.headers.get('content-disposition')).toBeNull()
  })

  it('?filename and ?download', async () => {
    const r = await get(`/ipfs/${s.fixture.root}/hello.txt?filename=${encodeURIComponent('тест.txt')}`)
    await r.arrayBuffer()
    expect(r.headers.get('content-disposition')).toBe('inline; filename="____.txt"; filename*=UTF-8\'\'%D1%82%D0%B5%D1%81%D1%82.txt')
    const d = await get(`/ipfs/${s.fixture.root}/hello.txt?download=true`)
    await d.arrayBuffer()
    expect(d.headers.get('content-disposition')).toBe('attachment; filename="hello.txt"')
  })

  it('a json-codec block is served as application/json', async () => {
    const r = await get(`/ipfs/${s.fixture.jsonBlock.cid}`)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('application/json')
    expect(await r.json()).toEqual({ hello: 'json' })
  })

  it('bafkqaaa (empty identity CID) answers 200 empty', async () => {
    const r = await get('/ipfs/bafkqaaa')
    expect(r.status).toBe(200)
    expect((await bytesOf(r)).byteLength).toBe(0)
  })

  it('with allowActiveContent HTML is inline', async () => {
    const other = await serve({ allowActiveContent: true }, s.fixture)
    try {
      const r = await fetch(`${other.base}/ipfs/${s.fixture.root}/page.html`)
      await r.arrayBuffer()
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(r.headers.get('content-disposition')).toBeNull()
    } finally {
      await other.close()
    }
  })
})

describe('errors', () => {
  const expectError = async (path: string, status: number, reason: string, init: RequestInit = {}): Promise<void> => {
    const r = await get(path, init)
    expect(r.status, path).toBe(status)
    expect(r.headers.get('content-type')).toContain('application/json')
    expect(r.headers.get('x-content-type-options')).toBe('nosniff')
    const body = await r.json() as { error: { reason: string, details: string } }
    expect(body.error.reason).toBe(reason)
    expect(typeof body.error.details).toBe('string')
    expect(body.error.details).not.toMatch(/\n\s+at /) // never a stack trace
  }

  it('400 for a malformed CID, path or parameter', async () => {
    await expectError('/ipfs/not-a-cid', 400, 'BAD_REQUEST')
    await expectError('/ipfs/', 400, 'BAD_REQUEST')
    await expectError(`/ipfs/${s.fixture.root}/%E0%A4%A`, 400, 'BAD_REQUEST')
    await expectError(`/ipfs/${s.fixture.root}?format=bogus`, 400, 'BAD_REQUEST')
    await expectError(`/ipfs/${s.fixture.root}/`, 400, 'BAD_REQUEST', { headers: { 'service-worker': 'script' } })
  })

  it('404 when not servable (without reading a block), not local, or no such path', async () => {
    const before = s.fixture.store.reads
    await expectError(`/ipfs/${s.fixture.unservable}`, 404, 'NOT_FOUND')
    expect(s.fixture.store.reads).toBe(before)
    s.servable.add('bafkreiaxnnnb7qz2focittuqq3ya25q7rcv3bqynnczfzako47346wosmu')
    await expectError('/ipfs/bafkreiaxnnnb7qz2focittuqq3ya25q7rcv3bqynnczfzako47346wosmu', 404, 'NOT_FOUND')
    await expectError(`/ipfs/${s.fixture.root}/no/such/file`, 404, 'NOT_FOUND')
    await expectError(`/ipfs/${s.fixture.root}/hello.txt/below-a-file`, 404, 'NOT_FOUND')
  })

  it('a missing block mid-file cuts the connection; a missing first block is a 404', async () => {
    const { cid, bytes } = s.fixture.broken
    const r = await rawGet(`${s.base}/ipfs/${cid}`)
    expect(r.status).toBe(200)
    expect(r.headers['content-length']).toBe(String(bytes.byteLength))
    expect(r.complete).toBe(false)
    expect(r.body.byteLength).toBe(s.fixture.broken.missingLeafIndex * 10_000)
    const ranged = await get(`/ipfs/${cid}`, { headers: { range: 'bytes=100000-100100' } })
    expect(ranged.status).toBe(404)
    await ranged.arrayBuffer()
    const fine = await get(`/ipfs/${cid}`, { headers: { range: 'bytes=0-99' } })
    expect(fine.status).toBe(206)
    expect(Buffer.compare(Buffer.from(await bytesOf(fine)), Buffer.from(s.fixture.broken.bytes.subarray(0, 100)))).toBe(0)
  })

  it('only-if-cached: 412 when the root is not here, 200 when it is', async () => {
    const absent = 'bafkreiaxnnnb7qz2focittuqq3ya25q7rcv3bqynnczfzako47346wosmu'
    s.servable.add(absent)
    const miss = await get(`/ipfs/${absent}`, { method: 'HEAD', headers: { 'cache-control': 'only-if-cached' } })
    expect(miss.status).toBe(412)
    const hit = await get(`/ipfs/${s.fixture.big.cid}`, { method: 'HEAD', headers: { 'cache-control': 'only-if-cached' } })
    expect(hit.status).toBe(200)
  })

  it('a browser Accept header gets the deserialized file', async () => {
    const r = await get(`/ipfs/${s.fixture.root}/hello.txt`, { headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8' } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-location')).toBeNull()
    expect(await r.text()).toBe('hello world\n')
  })

  it('406 for formats we do not produce', async () => {
    await expectError(`/ipfs/${s.fixture.root}?format=tar`, 406, 'NOT_ACCEPTABLE')
    await expectError(`/ipfs/${s.fixture.root}`, 406, 'NOT_ACCEPTABLE', { headers: { accept: 'application/x-tar' } })
    await expectError(`/ipfs/${s.fixture.big.cid}`, 406, 'NOT_ACCEPTABLE', { headers: { accept: 'application/vnd.ipld.dag-json' } })
    await expectError(`/ipfs/${s.fixture.big.cid}?format=dag-cbor`, 406, 'NOT_ACCEPTABLE')
    await expectError(`/ipfs/${s.fixture.big.cid}`, 406, 'NOT_ACCEPTABLE', { headers: { accept: 'application/vnd.ipld.car; version=2' } })
  })

  it('no open block iterators are left behind', async () => {
    await s.tracker.settled()
    expect(s.fixture.store.open).toBe(0)
  })
})
