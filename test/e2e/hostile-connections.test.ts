/**
 * Issue 13, finding 8: connection limits under a hostile client's load, with
 * raw sockets against the real server. A connection that never sends a byte,
 * 200 slow-header connections, a body that stops, and 1,100 idle sockets
 * against a process started with a 1024-descriptor limit (from one address,
 * then from twenty). The timeouts are settings, so the suite uses short ones
 * and still opens the full numbers of sockets.
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BUNDLE, startPind, type PindProcess } from '../helpers/pind.js'
import { clientAt, dribbleHead, openFds, openSockets, shellWrapper, stillOpen } from '../helpers/hostile.js'

let quick: PindProcess
let idle: PindProcess
let port: number

beforeAll(async () => {
  // the head timeout well below the idle timeout, as by default (20 s, 60 s): what cuts is the head timer
  quick = await startPind({ args: ['--http-head-timeout', '2', '--http-idle-timeout', '30'] })
  port = Number(new URL(quick.url).port)
  idle = await startPind({ args: ['--http-idle-timeout', '2'] })
})
afterAll(async () => {
  await quick?.stop()
  await idle?.stop()
})

describe('sockets that hold a connection without a request', () => {
  it('cuts a connection that never sends a byte at the head timeout', async () => {
    const [s] = await openSockets(port, 1)
    const ms = await s!.closed
    expect(ms).toBeGreaterThan(1500)
    expect(ms).toBeLessThan(10_000)
    expect(s!.received()).toBe('')
  })

  it('cuts 200 slow-header connections (a header line every 500 ms) at the head timeout, each with a 408', async () => {
    const socks = await openSockets(port, 200, { onConnect: (s) => { dribbleHead(s, 500) } })
    const times = await Promise.all(socks.map(async s => await s.closed))
    expect(Math.min(...times)).toBeGreaterThan(1500)
    expect(Math.max(...times)).toBeLessThan(15_000)
    for (const s of socks) {
      expect(s.received()).toMatch(/^HTTP\/1\.1 408 /)
      expect(JSON.parse(s.received().split('\r\n\r\n')[1] as string)).toEqual({ error: { reason: 'BAD_REQUEST', details: 'the request head did not arrive within 2 s' } })
    }
    expect((await fetch(`${quick.url}/health`)).status).toBe(200)
  })

  it('cuts a request whose body stops arriving at the idle timeout', async () => {
    const [s] = await openSockets(Number(new URL(idle.url).port), 1, {
      onConnect: (sock) => { sock.write('POST /pins HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"cid":') }
    })
    const ms = await s!.closed
    expect(ms).toBeGreaterThan(1500)
    expect(ms).toBeLessThan(10_000)
  })

  it('gives a keep-alive connection a fresh head timeout after each response, not one from its opening', async () => {
    const [s] = await openSockets(port, 1)
    let answers = 0
    s!.socket.on('data', () => { answers++ })
    // a request every 1.5 s for 4.5 s: each head arrives within 2 s of the previous response
    for (let i = 0; i < 3; i++) {
      s!.socket.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n')
      await new Promise(resolve => setTimeout(resolve, 1500))
    }
    expect(answers).toBe(3)
    expect(s!.socket.destroyed).toBe(false)
    const ms = await s!.closed
    expect(ms).toBeGreaterThan(4000)
  })
})

describe('1,100 idle sockets against a 1024-descriptor limit', () => {
  let small: PindProcess
  let smallPort: number

  beforeAll(async () => {
    const wrapper = shellWrapper('ulimit -n 1024', [process.execPath, BUNDLE])
    small = await startPind({ binary: wrapper, args: ['--http-head-timeout', '3'] })
    smallPort = Number(new URL(small.url).port)
    expect(readFileSync(`/proc/${small.pid}/limits`, 'utf8')).toMatch(/^Max open files\s+1024\s+1024/m)
  })
  afterAll(async () => { await small?.stop() })

  const healthFrom = async (address: string): Promise<{ status: number, body: any }> => {
    const c = clientAt(address, 1)
    try {
      const r = await c.request(`${small.url}/health`)
      return { status: r.statusCode, body: await r.body.json() }
    } finally {
      await c.close()
    }
  }

  it('from one address: that address holds its share, everyone else is served, nothing runs out of descriptors', async () => {
    const socks = await openSockets(smallPort, 1100, { localAddress: '127.0.0.1' })
    // the server keeps at most its per-address share of them (64 at this limit) and closes the rest
    expect(openFds(small.pid)).toBeLessThan(1024 - 256)
    const h = await healthFrom('127.0.0.2')
    expect(h.status).toBe(200)
    expect(h.body.status).toBe('ok')
    await Promise.all(socks.map(async s => await s.closed))
    expect(stillOpen(socks)).toBe(0)
    // the attacker's own address is served again, and nothing stuck
    expect((await healthFrom('127.0.0.1')).status).toBe(200)
    expect(small.stderr()).not.toMatch(/EMFILE|too many open files/i)
  })

  it('from twenty addresses: the server holds at most its connection limit, closing the longest idle to serve a new client', async () => {
    const socks = (await Promise.all(Array.from({ length: 20 }, async (_, i) =>
      await openSockets(smallPort, 55, { localAddress: `127.0.1.${i + 1}` })))).flat()
    expect(socks.length).toBe(1100)
    expect(openFds(small.pid)).toBeLessThan(1024 - 256)
    // a new client is served at once: its connection takes the place of the longest idle one
    const h = await healthFrom('127.0.0.2')
    expect(h.status).toBe(200)
    expect(h.body.checks.blockstore).toEqual({ ok: true })
    const challenge = await clientAt('127.0.0.3', 1).request(`${small.url}/auth/challenge`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ address: '0x' + '11'.repeat(20) })
    })
    expect(challenge.statusCode).toBe(200)
    await challenge.body.dump()
    await Promise.all(socks.map(async s => await s.closed))
    expect((await healthFrom('127.0.1.1')).status).toBe(200)
    expect(small.stderr()).not.toMatch(/EMFILE|too many open files/i)
  })
})
