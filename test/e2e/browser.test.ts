/**
 * The test browser itself (test/helpers/browser.ts): Debian's chromium launches here through
 * playwright-core, renders a page from a node:http server on 127.0.0.1, reaches *.localhost
 * names on loopback with no DNS, cannot reach anything else (a host name and an IP literal
 * off loopback both land in the sink, and the page gets no answer from them), and leaves no
 * process behind when closed.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { launchBrowser, type TestBrowser } from '../helpers/browser.js'

let server: Server
let base: string
let port: number
const hosts: string[] = []
let tb: TestBrowser | undefined

beforeAll(async () => {
  server = createServer((req, res) => {
    hosts.push(req.headers.host ?? '')
    if (req.url === '/dot.svg') {
      res.writeHead(200, { 'content-type': 'image/svg+xml' }).end('<svg xmlns="http://www.w3.org/2000/svg" width="7" height="5"/>')
      return
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
      `<!doctype html><title>self-check</title><h1>served to ${req.headers.host ?? ''}</h1><img id=dot src=/dot.svg>`)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as AddressInfo).port
  base = `http://127.0.0.1:${port}`
  tb = await launchBrowser()
})

afterAll(async () => {
  await tb?.close()
  await new Promise(resolve => server?.close(resolve))
})

it('renders a page from 127.0.0.1 and from a *.localhost name, both on loopback', async () => {
  const page = await tb!.browser.newPage()
  const r = await page.goto(`${base}/`)
  expect(r?.status()).toBe(200)
  expect(await page.locator('h1').textContent()).toBe(`served to 127.0.0.1:${port}`)
  expect(await page.evaluate('document.getElementById("dot").naturalWidth')).toBe(7)

  const named = `http://bafyexample.ipfs.localhost:${port}/`
  await page.goto(named)
  expect(page.url()).toBe(named)
  expect(await page.locator('h1').textContent()).toBe(`served to bafyexample.ipfs.localhost:${port}`)
  expect(hosts).toContain(`bafyexample.ipfs.localhost:${port}`)
  await page.close()
})

it('anything off loopback goes to the sink, answered by nothing else: a host name and an IP literal', async () => {
  const page = await tb!.browser.newPage()
  // 192.0.2.0/24 is TEST-NET-1 (RFC 5737), routed nowhere; example.com would be on the internet.
  // Each is answered by the sink alone: an empty 502, which Chromium reports as a failed
  // response (had either gone anywhere else, the error would be another one: name not
  // resolved, connection refused or timed out).
  for (const url of ['http://192.0.2.7:8080/probe', 'http://example.com/probe']) {
    await expect(page.goto(url), url).rejects.toThrow(/net::ERR_HTTP_RESPONSE_CODE_FAILURE/)
  }
  const seen = tb!.offLoopback()
  expect(seen).toContain('GET http://192.0.2.7:8080/probe')
  expect(seen).toContain('GET http://example.com/probe')
  await page.close()
})

it('closes with no process of it left', async () => {
  const t = tb!
  expect(t.processes()).toContain(t.pid)
  await t.close()
  expect(t.processes()).toEqual([])
  tb = undefined
})
