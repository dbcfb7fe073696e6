/**
 * The subdomain gateway (subdomain-gateway spec) over the real gateway routes and HTTP server:
 * content origins `{cid}.ipfs.localhost:{port}` served as websites (HTML inline, index.html,
 * `_redirects` per the web-redirects-file spec), canonical labels, CIDs too long for a DNS label,
 * the path gateway's move to the content origin, X-Forwarded-Host/Proto from trusted proxies only,
 * the URI router, and denials and the serve policy on the origin as on the path gateway.
 * Requests carry their Host header (node:http; fetch may not set it).
 */
import { unixfs } from '@helia/unixfs'
import { base36 } from 'multiformats/bases/base36'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha512 } from 'multiformats/hashes/sha2'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawGet, serve, type RawResponse, type Served } from './helpers.js'

const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
const text = (r: RawResponse): string => Buffer.from(r.body).toString('utf8')

const SITE: Record<string, string> = {
  'index.html': '<!doctype html><title>home</title><link rel="stylesheet" href="style.css"><a href="about.html">about</a>',
  'style.css': 'body { color: rgb(1, 2, 3) }',
  'about.html': '<!doctype html><title>about</title>',
  '404.html': '<!doctype html><title>not here</title>',
  'sub/index.html': '<!doctype html><title>sub</title>',
  'plain/a.txt': 'a\n',
  'secret.html': 'denied\n',
  _redirects: [
    '# moved pages',
    '/old /about.html 301',
    '/temp /about.html 302',
    '/spa/* /index.html 200',
    '/posts/:year/:slug /articles/:year/:slug',
    '/gone/* /404.html 410',
    '/* /404.html 404',
    ''
  ].join('\r\n')
}

let s: Served
let site: CID
let bare: CID
let broken: CID
let huge: CID
let long: CID

async function addSite (files: Record<string, string>): Promise<CID> {
  const ufs = unixfs({ blockstore: s.fixture.fs })
  let root: CID | undefined
  for await (const e of ufs.addAll(Object.entries(files).map(([path, content]) => ({ path: `s/${path}`, content: enc(content) })), { rawLeaves: true, cidVersion: 1 })) {
    if (e.path === 's') root = e.cid
  }
  if (root == null) throw new Error('no root')
  s.servable.add(root.toString())
  return root
}

beforeAll(async () => {
  s = await serve({
    sites: { domain: 'localhost', trustedProxies: new Set() },
    refusal: (root, path) => path === 'secret.html' ? { message: 'taken down' } : undefined
  })
  site = await addSite(SITE)
  bare = await addSite({ 'index.html': '<!doctype html><title>bare</title>' })
  broken = await addSite({ 'index.html': '<!doctype html><title>broken</title>', _redirects: '/a /b 301\n/c /d 299\n' })
  // over the spec's 64 KiB: refused by its size, before it is read
  huge = await addSite({ 'index.html': '<!doctype html><title>huge</title>', _redirects: '/a /b 301\n'.repeat(7000) })
  // a CID whose base32 form is longer than a DNS label (sha2-512)
  const bytes = enc('long hash\n')
  long = CID.createV1(raw.code, await sha512.digest(bytes))
  await s.fixture.fs.put(long, bytes)
  s.servable.add(long.toString())
}, 60_000)
afterAll(async () => { await s?.close() })

const at = (cid: CID | string): string => `${cid.toString()}.ipfs.localhost:${s.port}`
async function get (host: string, path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return await rawGet(`http://127.0.0.1:${s.port}${path}`, { host, ...headers })
}

describe('content origins', () => {
  it('serve a site: its index.html at /, HTML and CSS inline with their types', async () => {
    const home = await get(at(site), '/')
    expect(home.status).toBe(200)
    expect(text(home)).toBe(SITE['index.html'])
    expect(home.headers['content-type']).toMatch(/^text\/html/)
    expect(home.headers['content-disposition']).toBeUndefined()
    expect(home.headers['content-security-policy']).toBeUndefined()
    expect(home.headers['x-ipfs-path']).toBe(`/ipfs/${site.toString()}/`)
    const css = await get(at(site), '/style.css')
    expect(css.headers['content-type']).toMatch(/^text\/css/)
    expect(text(css)).toBe(SITE['style.css'])
    const sub = await get(at(site), '/sub')
    expect(sub.status).toBe(301)
    expect(sub.headers.location).toBe('/sub/')
    expect(text(await get(at(site), '/sub/'))).toBe(SITE['sub/index.html'])
  })

  it('keep the path gateway\'s HTML an attachment on any other host', async () => {
    const r = await get(`127.0.0.1:${s.port}`, `/ipfs/${site.toString()}/about.html`)
    expect(r.status).toBe(200)
    expect(r.headers['content-disposition']).toMatch(/^attachment/)
    expect(r.headers['content-security-policy']).toBe('sandbox')
  })

  it('follow _redirects for paths the site does not have, and never for those it has', async () => {
    const moved = await get(at(site), '/old?ref=x')
    expect(moved.status).toBe(301)
    expect(moved.headers.location).toBe('/about.html?ref=x')
    expect((await get(at(site), '/temp')).status).toBe(302)
    const post = await get(at(site), '/posts/2024/hello')
    expect(post.status).toBe(301)
    expect(post.headers.location).toBe('/articles/2024/hello')
    const spa = await get(at(site), '/spa/deep/route')
    expect(spa.status).toBe(200)
    expect(text(spa)).toBe(SITE['index.html'])
    const missing = await get(at(site), '/nowhere', { range: 'bytes=0-3' })
    expect(missing.status).toBe(404)
    expect(missing.headers['content-type']).toMatch(/^text\/html/)
    expect(text(missing)).toBe(SITE['404.html'])
    const gone = await get(at(site), '/gone/x')
    expect(gone.status).toBe(410)
    expect(text(gone)).toBe(SITE['404.html'])
    // an existing file is served as it is, the catch-all notwithstanding
    expect(text(await get(at(site), '/about.html'))).toBe(SITE['about.html'])
    // and the path gateway never reads _redirects (no origin of the site's own)
    expect((await get(`127.0.0.1:${s.port}`, `/ipfs/${site.toString()}/old`)).status).toBe(404)
  })

  it('answer a path a site without _redirects lacks with 404, and a broken _redirects with 500 naming its line', async () => {
    const none = await get(at(bare), '/nowhere')
    expect(none.status).toBe(404)
    expect(JSON.parse(text(none)).error.reason).toBe('NOT_FOUND')
    const bad = await get(at(broken), '/a')
    expect(bad.status).toBe(500)
    expect(JSON.parse(text(bad)).error.details).toMatch(/line 2/)
    expect((await get(at(broken), '/')).status).toBe(200)
    const big = await get(at(huge), '/a')
    expect(big.status).toBe(500)
    expect(JSON.parse(text(big)).error.details).toMatch(/70000 bytes; it may be 65536 at most/)
  })

  it('hold denials and the serve policy as the path gateway does', async () => {
    const denied = await get(at(site), '/secret.html')
    expect(denied.status).toBe(410)
    expect(JSON.parse(text(denied)).error.reason).toBe('GONE')
    const unpinned = await get(at(s.fixture.unservable.toV1()), '/')
    expect(unpinned.status).toBe(404)
  })

  it('redirect a label in another encoding to the canonical one, and refuse names that hold no CID', async () => {
    const b36 = await get(`${site.toString(base36)}.ipfs.localhost:${s.port}`, '/about.html?x=1')
    expect(b36.status).toBe(301)
    expect(b36.headers.location).toBe(`http://${at(site)}/about.html?x=1`)
    for (const host of [`${long.toString()}.ipfs.localhost:${s.port}`, `k51abc.ipns.localhost:${s.port}`, `x.${site.toString()}.ipfs.localhost:${s.port}`, `notacid.ipfs.localhost:${s.port}`]) {
      const r = await get(host, '/')
      expect(r.status, host).toBe(400)
      expect(JSON.parse(text(r)).error.reason).toBe('BAD_REQUEST')
    }
    expect(JSON.parse(text(await get(`${long.toString()}.ipfs.localhost:${s.port}`, '/'))).error.details).toMatch(/DNS label/)
  })

  it('take GET, HEAD and OPTIONS only (and the domain moves only those)', async () => {
    const { request } = await import('node:http')
    const post = async (host: string, path: string): Promise<number> => await new Promise<number>((resolve, reject) => {
      request(`http://127.0.0.1:${s.port}${path}`, { method: 'POST', headers: { host }, agent: false }, (res) => { res.resume(); resolve(res.statusCode ?? 0) }).on('error', reject).end()
    })
    expect(await post(at(site), '/')).toBe(405)
    expect(await post(`localhost:${s.port}`, `/ipfs/${site.toString()}/`)).toBe(405)
  })

  it('list a directory without index.html with CID links to their own origins', async () => {
    const r = await get(at(site), '/plain/')
    expect(r.status).toBe(200)
    const file = (await (async () => { for await (const e of unixfs({ blockstore: s.fixture.fs }).ls(site, { path: 'plain' })) return e.cid })()) as CID
    expect(text(r)).toContain(`href="http://${at(file)}/"`)
  })
})

describe('the path gateway on the domain', () => {
  it('moves /ipfs/{cid}/{path}?{query} to the content origin, in base32', async () => {
    const r = await get(`localhost:${s.port}`, `/ipfs/${site.toString(base36)}/about.html?a=1`)
    expect(r.status).toBe(301)
    expect(r.headers.location).toBe(`http://${at(site)}/about.html?a=1`)
    const bare = await get(`localhost:${s.port}`, `/ipfs/${site.toString()}`)
    expect(bare.headers.location).toBe(`http://${at(site)}/`)
    // a CID that has no origin is a 400, not a redirect to a name DNS cannot hold
    expect((await get(`localhost:${s.port}`, `/ipfs/${long.toString()}`)).status).toBe(400)
    // the API on the domain is routed as usual
    expect((await get(`localhost:${s.port}`, '/nothing-here')).status).toBe(404)
  })

  it('ignores X-Forwarded-Proto and X-Forwarded-Host from a client that is not a trusted proxy', async () => {
    // (a trusted proxy's are believed: test/unit/http/site-host.test.ts)
    const untrusted = await get(`localhost:${s.port}`, `/ipfs/${site.toString()}/`, { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'example.com' })
    expect(untrusted.headers.location).toBe(`http://${at(site)}/`)
  })

  it('routes ipfs:// URIs (registerProtocolHandler) to their content path', async () => {
    const r = await get(`127.0.0.1:${s.port}`, `/ipfs/?uri=${encodeURIComponent(`ipfs://${site.toString()}/about.html?x=1`)}`)
    expect(r.status).toBe(301)
    expect(r.headers.location).toBe(`/ipfs/${site.toString()}/about.html?x=1`)
    expect((await get(`127.0.0.1:${s.port}`, `/ipfs/?uri=${encodeURIComponent('ipns://example.com')}`)).status).toBe(400)
    expect((await get(`127.0.0.1:${s.port}`, '/ipfs/?uri=https%3A%2F%2Fevil.example')).status).toBe(400)
  })
})
