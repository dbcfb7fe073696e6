/**
 * Issue 37: websites on the subdomain gateway, in a real browser. The real pind (bundle) on
 * the dev chain with `--gateway-domain localhost`; two small sites uploaded and paid for
 * with @x402/fetch (POST /upload?format=directory, each `file` part named by its path);
 * Debian's chromium through playwright-core (test/helpers/browser.ts: nothing it does
 * leaves loopback) opens them at http://<cid>.ipfs.localhost:<port>/ (Chromium resolves
 * *.localhost to loopback itself). Site A: HTML, a stylesheet and a PNG under a
 * subdirectory, a relative link, a `_redirects` file (a 301 and a catch-all 404 page).
 * What is checked is what the browser does with them: the text rendered, the CSS applied
 * (computed style), the image decoded (its natural size), the link followed, the redirect
 * followed to its final URL, the 404 page shown with status 404, a path-gateway URL
 * redirected to the site's own origin, and each site's localStorage out of the other's
 * reach (a script on A reads nothing of B's, even holding B's window in an iframe).
 *
 * Artefact: a screenshot of site A is saved to test-results/website-a.png under the
 * repository (git-ignored); the test prints its path. One chain, one pind, one browser.
 */
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { crc32, deflateSync } from 'node:zlib'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { launchBrowser, type TestBrowser } from '../helpers/browser.js'
import { chainArgs, payingFetch } from '../helpers/paying-client.js'
import { ROOT, startPind, type PindProcess } from '../helpers/pind.js'

const SCREENSHOT = join(ROOT, 'test-results', 'website-a.png')

let chain: DevChain
let pind: PindProcess
let tb: TestBrowser
let context: BrowserContext
let page: Page
let port: string
/** every URL the pages asked for (frames included) */
const requested: string[] = []
let rootA: string
let rootB: string
const origin = (cid: string): string => `http://${cid}.ipfs.localhost:${port}`

/** A real PNG: 8-bit RGB, one IDAT (zlib), CRCs by node:zlib. */
function png (width: number, height: number, pixel: (x: number, y: number) => [number, number, number]): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
    const head = Buffer.alloc(4)
    head.writeUInt32BE(data.length)
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(crc32(body))
    return Buffer.concat([head, body, crc])
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 2 // colour type: truecolour
  const raw = Buffer.alloc((1 + 3 * width) * height)
  for (let y = 0; y < height; y++) {
    const row = y * (1 + 3 * width) // each row starts with its filter byte: 0, none
    for (let x = 0; x < width; x++) raw.set(pixel(x, y), row + 1 + 3 * x)
  }
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))])
}

const LOGO = { width: 24, height: 16 }

/** site B: stores its own secret in its own localStorage, and shows what it finds there */
const siteB = (): Array<[string, string | Buffer]> => [
  ['index.html', '<!doctype html><html lang=en><meta charset=utf-8><title>Site B</title><h1>Site B</h1><p id=stored>…</p><script src=b.js></script></html>'],
  ['b.js', `if (localStorage.getItem('secret') === null) localStorage.setItem('secret', 'kept by B')
document.getElementById('stored').textContent = 'B has ' + localStorage.getItem('secret')
`]
]

/** site A: the website under test; its script looks for B's secret in its own storage and in B's window, then stores its own */
const siteA = (originB: string): Array<[string, string | Buffer]> => [
  ['index.html', `<!doctype html>
<html lang=en>
<head><meta charset=utf-8><title>Site A</title><link rel=stylesheet href=assets/style.css></head>
<body>
<h1 id=title>Welcome to site A</h1>
<p><img id=logo src=assets/logo.png alt="site A logo"></p>
<p><a id=about href=about.html>About this site</a></p>
<p id=storage>checking storage…</p>
<script src=assets/probe.js></script>
</body>
</html>
`],
  ['about.html', '<!doctype html><html lang=en><meta charset=utf-8><title>About site A</title><link rel=stylesheet href=assets/style.css><h1 id=title>About site A</h1><p><a href=./>Home</a></p></html>'],
  ['404.html', '<!doctype html><html lang=en><meta charset=utf-8><title>Not found</title><link rel=stylesheet href=/assets/style.css><h1 id=title>Nothing here</h1></html>'],
  ['assets/style.css', 'body { background-color: rgb(240, 248, 255) }\nh1 { color: rgb(200, 30, 40); font-family: sans-serif }\n'],
  ['assets/logo.png', png(LOGO.width, LOGO.height, (x, y) => (x + y) % 2 === 0 ? [200, 30, 40] : [30, 60, 200])],
  ['assets/probe.js', `const out = document.getElementById('storage')
const own = localStorage.getItem('secret')
const frame = document.createElement('iframe')
frame.title = 'site B'
frame.addEventListener('load', () => {
  let theirs
  try { theirs = 'read ' + frame.contentWindow.localStorage.getItem('secret') } catch (e) { theirs = e.name }
  localStorage.setItem('secret', 'kept by A')
  out.textContent = 'own: ' + own + '; site B: ' + theirs
})
frame.src = ${JSON.stringify(`${originB}/`)}
document.body.append(frame)
`],
  ['_redirects', '# web-redirects-file: first match wins\n/old /about.html 301\n/* /404.html 404\n']
]

async function upload (files: Array<[string, string | Buffer]>): Promise<string> {
  const form = new FormData()
  for (const [path, content] of files) form.append('file', new Blob([typeof content === 'string' ? Buffer.from(content) : content]), path)
  const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload?format=directory`, { method: 'POST', body: form })
  expect(r.status, await r.clone().text()).toBe(201)
  const { cid, site_url: site } = await r.json() as { cid: string, site_url?: string }
  expect(cid).toMatch(/^bafy[a-z2-7]+$/) // CIDv1 base32: a valid DNS label
  // the upload answers where the site is: the origin the browser opens below
  expect(site).toBe(`${origin(cid)}/`)
  return cid
}

const text = async (selector: string): Promise<string | null> => await page.locator(selector).textContent()
const style = async (selector: string, property: string): Promise<string> => await page.evaluate(`getComputedStyle(document.querySelector(${JSON.stringify(selector)})).${property}`)

beforeAll(async () => {
  chain = await startDevChain({ payers: 1 })
  const { args, env } = chainArgs(chain)
  pind = await startPind({ args: [...args, '--gateway-domain', 'localhost'], env })
  port = new URL(pind.url).port
  rootB = await upload(siteB())
  rootA = await upload(siteA(origin(rootB)))
  tb = await launchBrowser()
  context = await tb.browser.newContext()
  context.on('request', req => { requested.push(req.url()) })
  page = await context.newPage()
})

afterAll(async () => {
  await tb?.close()
  await pind?.stop()
  await chain?.stop()
})

describe('a website on the subdomain gateway, in Chromium', () => {
  it('site B, on its own origin, keeps its secret in its own localStorage', async () => {
    const r = await page.goto(`${origin(rootB)}/`)
    expect(r?.status()).toBe(200)
    expect(await text('#stored')).toBe('B has kept by B')
    expect(await page.evaluate("localStorage.getItem('secret')")).toBe('kept by B')
  })

  it('site A renders: its text, its stylesheet applied, its image decoded; a screenshot is saved', async () => {
    const r = await page.goto(`${origin(rootA)}/`)
    expect(r?.status()).toBe(200)
    expect(r?.headers()['content-type']).toMatch(/^text\/html/)
    expect(await page.title()).toBe('Site A')
    expect(await text('#title')).toBe('Welcome to site A')
    expect(await style('h1', 'color')).toBe('rgb(200, 30, 40)')
    expect(await style('body', 'backgroundColor')).toBe('rgb(240, 248, 255)')
    expect(await page.evaluate("[document.getElementById('logo').complete, document.getElementById('logo').naturalWidth, document.getElementById('logo').naturalHeight]")).toEqual([true, LOGO.width, LOGO.height])

    mkdirSync(join(ROOT, 'test-results'), { recursive: true })
    await page.screenshot({ path: SCREENSHOT, fullPage: true })
    expect(readFileSync(SCREENSHOT).subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    console.log(`screenshot of site A: ${SCREENSHOT}`)
  })

  it('a script on site A reads nothing of site B\'s localStorage, neither in its own storage nor through B\'s window', async () => {
    // the probe writes its result once B's iframe has loaded; the page (and so its frames) has loaded by now
    expect(await page.locator('#storage', { hasText: /^own:/ }).textContent()).toBe('own: null; site B: SecurityError')
    expect(page.frames().map(f => f.url())).toContain(`${origin(rootB)}/`)
    expect(await page.evaluate("localStorage.getItem('secret')")).toBe('kept by A')
    // and what A stored went nowhere near B's
    await page.goto(`${origin(rootB)}/`)
    expect(await text('#stored')).toBe('B has kept by B')
    expect(await page.evaluate('localStorage.length')).toBe(1)
  })

  it('the relative link leads to the next page', async () => {
    await page.goto(`${origin(rootA)}/`)
    await Promise.all([page.waitForURL(`${origin(rootA)}/about.html`), page.click('#about')])
    expect(await text('#title')).toBe('About site A')
    expect(await style('h1', 'color')).toBe('rgb(200, 30, 40)')
  })

  it('a _redirects 301 rule is followed to its target', async () => {
    const r = await page.goto(`${origin(rootA)}/old`)
    expect(page.url()).toBe(`${origin(rootA)}/about.html`)
    expect(r?.status()).toBe(200)
    const hop = r?.request().redirectedFrom()
    expect(hop?.url()).toBe(`${origin(rootA)}/old`)
    expect((await hop?.response())?.status()).toBe(301)
    expect(await text('#title')).toBe('About site A')
  })

  it('a missing path shows the site\'s 404 page, with status 404, at the URL asked for', async () => {
    const r = await page.goto(`${origin(rootA)}/no/such/page`)
    expect(r?.status()).toBe(404)
    expect(page.url()).toBe(`${origin(rootA)}/no/such/page`)
    expect(await page.title()).toBe('Not found')
    expect(await text('#title')).toBe('Nothing here')
    // its stylesheet, by an absolute path, resolves against the site's own root
    expect(await style('h1', 'color')).toBe('rgb(200, 30, 40)')
  })

  it('a path-gateway URL on the gateway domain redirects to the site\'s own origin', async () => {
    const pathUrl = `http://localhost:${port}/ipfs/${rootA}/about.html`
    const r = await page.goto(pathUrl)
    expect(page.url()).toBe(`${origin(rootA)}/about.html`)
    const hop = r?.request().redirectedFrom()
    expect(hop?.url()).toBe(pathUrl)
    expect((await hop?.response())?.status()).toBe(301)
    expect(await text('#title')).toBe('About site A')
  })

  it('every request the pages made stayed on the gateway, on loopback', () => {
    const allowed = [`http://localhost:${port}/`, `${origin(rootA)}/`, `${origin(rootB)}/`]
    expect(requested.length).toBeGreaterThan(0)
    expect(requested.filter(u => !allowed.some(a => u.startsWith(a)))).toEqual([])
  })
})
