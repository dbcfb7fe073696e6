/**
 * CORS for browser x402 clients, and connection limits (a client that stops
 * sending is cut off; oversized headers are refused).
 */
import { Agent, get } from 'node:http'
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPind, type PindProcess } from '../helpers/pind.js'

let open: PindProcess
let listed: PindProcess

beforeAll(async () => {
  // a short head timeout, so the slowloris test below need not wait the default 20 s
  open = await startPind({ args: ['--http-head-timeout', '2'] })
  listed = await startPind({ args: ['--cors-origins', 'https://app.example.com'] })
})
afterAll(async () => {
  await open?.stop()
  await listed?.stop()
})

describe('CORS', () => {
  it('answers preflights for paid writes and exposes the payment and token headers', async () => {
    const pre = await fetch(`${open.url}/upload`, { method: 'OPTIONS', headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'payment-signature, content-type' } })
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-origin')).toBe('*')
    expect(pre.headers.get('access-control-allow-headers')).toMatch(/payment-signature/)
    expect(pre.headers.get('access-control-allow-methods')).toMatch(/POST/)
    const r = await fetch(`${open.url}/health`, { headers: { origin: 'https://anywhere.example' } })
    expect(r.headers.get('access-control-expose-headers')).toMatch(/payment-required.*payment-response.*x-wallet-auth-token/)
  })

  it('allows only the configured origins when a list is set', async () => {
    const ok = await fetch(`${listed.url}/health`, { headers: { origin: 'https://app.example.com' } })
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example.com')
    expect(ok.headers.get('vary')).toMatch(/Origin/)
    const other = await fetch(`${listed.url}/health`, { headers: { origin: 'https://evil.example' } })
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
  })
})

describe('connection limits', () => {
  it('refuses oversized headers with 431 and keeps serving', async () => {
    const r = await fetch(`${open.url}/health`, { headers: { 'x-big': 'a'.repeat(20_000) } })
    expect(r.status).toBe(431)
    expect((await fetch(`${open.url}/health`)).status).toBe(200)
  })

  it('never advertises a keep-alive longer than the head timeout that closes an idle connection', async () => {
    // a client trusting `timeout=5` would send its next request into a socket cut after 2 s
    const keepAlive = await new Promise<string | undefined>((resolve, reject) => {
      get(`${open.url}/health`, { agent: new Agent({ keepAlive: true }) }, (res) => {
        res.resume()
        resolve(res.headers['keep-alive'] as string | undefined)
      }).on('error', reject)
    })
    expect(keepAlive).toBe('timeout=2')
  })

  it('closes a connection whose request head never completes (slowloris)', async () => {
    const port = Number(new URL(open.url).port)
    let answer = ''
    const closed = await new Promise<number>((resolve) => {
      const t0 = Date.now()
      const s = connect(port, '127.0.0.1', () => { s.write('GET /health HTTP/1.1\r\nhost: x\r\n') })
      s.on('data', (b: Buffer) => { answer += b.toString() })
      s.on('close', () => { resolve(Date.now() - t0) })
    })
    expect(closed).toBeGreaterThan(1500)
    expect(closed).toBeLessThan(10_000)
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
    expect(answer).toMatch(/"reason":"BAD_REQUEST"/)
  })
})
