/**
 * The HTTP server's drain (serve's --shutdown-drain): requests are still
 * served, each response closing its connection, except an early answer to a
 * request whose body is still arriving (closing then would reset the client
 * before it reads the answer): that connection is closed by its next response.
 */
import { connect, type Socket } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { InvalidInputError } from '../../../src/kernel/errors.js'
import { silentLogger } from '../../../src/kernel/log.js'
import { Router } from '../../../src/http/router.js'
import { createHttpServer, type HttpServer } from '../../../src/http/server.js'
import { waitFor } from '../../helpers/ports.js'

let http: HttpServer | undefined
afterEach(async () => { await http?.close(0) })

async function started (opts: { headTimeoutMs?: number } = {}): Promise<{ http: HttpServer, port: number }> {
  const router = new Router()
  router.add('GET', '/x', ({ res }) => { res.end('ok') })
  // answers before reading the body, as a 402 or 413 does
  router.add('POST', '/early', () => { throw new InvalidInputError('refused before the body') })
  http = createHttpServer(router, silentLogger, opts)
  return { http, port: (await http.listen('127.0.0.1', 0)).port }
}

/** a raw connection: what it has received, and whether the server ended or reset it */
async function raw (port: number): Promise<{ socket: Socket, received: () => string, ended: () => boolean, errors: Error[] }> {
  const socket = connect(port, '127.0.0.1')
  await new Promise(resolve => socket.once('connect', resolve))
  let data = ''
  let ended = false
  const errors: Error[] = []
  socket.on('data', (b: Buffer) => { data += b.toString('latin1') })
  socket.on('end', () => { ended = true })
  socket.on('error', (err) => { errors.push(err) })
  return { socket, received: () => data, ended: () => ended, errors }
}

const GET = 'GET /x HTTP/1.1\r\nHost: t\r\n\r\n'

it('keeps connections open until the drain, then closes each after its response', async () => {
  const { http, port } = await started()
  const before = await raw(port)
  before.socket.write(GET)
  await waitFor(() => before.received().endsWith('ok') ? true : undefined, 'the answer')
  expect(before.received()).not.toMatch(/connection: close/i)

  http.drain()
  expect(http.draining()).toBe(true)
  // the connection opened before the drain too: its next response closes it
  before.socket.write(GET)
  await waitFor(() => before.ended() ? true : undefined, 'the server to close the connection')
  expect(before.received().split('HTTP/1.1 200').length).toBe(3)
  expect(before.received()).toMatch(/connection: close/i)
  before.socket.destroy()
})

it('while draining, an early answer to a body still arriving leaves the connection open; the next response closes it', async () => {
  const { http, port } = await started()
  http.drain()
  const c = await raw(port)
  const size = 200_000
  c.socket.write(`POST /early HTTP/1.1\r\nHost: t\r\nContent-Length: ${size}\r\n\r\n`)
  c.socket.write(Buffer.alloc(1000))
  await waitFor(() => c.received().includes('\r\n\r\n') ? true : undefined, 'the early answer')
  expect(c.received()).toMatch(/^HTTP\/1.1 400/)
  expect(c.received()).not.toMatch(/connection: close/i)
  // the rest of the body is read, not reset, and the connection still answers
  c.socket.write(Buffer.alloc(size - 1000))
  c.socket.write(GET)
  await waitFor(() => c.ended() ? true : undefined, 'the server to close the connection')
  expect(c.errors).toEqual([])
  expect(c.received()).toMatch(/HTTP\/1.1 200[^]*connection: close[^]*ok$/i)
  c.socket.destroy()
})

it('an early answer to a body that takes longer than the head timeout to arrive, with a pause longer than the keep-alive timeout: the body is read to its end, then the connection is used again', async () => {
  // the head timer is for the next request's head: it starts once this body is in, not at the answer;
  // and node's keep-alive timeout (here 300 ms + 1 s), set once the answer is written, is not the body's
  // (before, a client still sending after a 402 or 400 was answered 408, or cut by that timeout: EPIPE on its side)
  const { port } = await started({ headTimeoutMs: 300 })
  const c = await raw(port)
  const chunks = 10
  const size = chunks * 10_000
  c.socket.write(`POST /early HTTP/1.1\r\nHost: t\r\nContent-Length: ${size}\r\n\r\n`)
  for (let i = 0; i < chunks; i++) {
    c.socket.write(Buffer.alloc(10_000))
    // 10 × 100 ms: the body takes three head timeouts to arrive; halfway, a pause past the keep-alive timeout
    await new Promise(resolve => setTimeout(resolve, i === 5 ? 1600 : 100))
  }
  expect(c.received()).toMatch(/^HTTP\/1.1 400/)
  expect(c.ended()).toBe(false)
  c.socket.write(GET)
  await waitFor(() => c.received().endsWith('ok') ? true : undefined, 'the next answer on the same connection')
  expect(c.errors).toEqual([])
  expect(c.received()).not.toMatch(/ 408 /)
  // idle now: the head timeout applies again
  await waitFor(() => c.ended() ? true : undefined, 'the idle connection to be closed by the head timeout')
  c.socket.destroy()
})

it('an idle connection is kept past the Keep-Alive timeout it advertises, until the head timeout: a client back late is answered, not cut', async () => {
  // node alone closes an idle connection 1 s after the advertised timeout; a client whose event loop was
  // busy past both reuses the socket as it closes, and loses its request (EPIPE on its side)
  const { port } = await started({ headTimeoutMs: 8000 })
  const c = await raw(port)
  c.socket.write(GET)
  await waitFor(() => c.received().endsWith('ok') ? true : undefined, 'the first answer')
  expect(c.received()).toMatch(/\r\nkeep-alive: timeout=5\r\n/i)
  await new Promise(resolve => setTimeout(resolve, 6500))
  expect(c.ended()).toBe(false)
  c.socket.write(GET)
  await waitFor(() => c.received().split('HTTP/1.1 200').length === 3 ? true : undefined, 'the second answer on the same connection')
  expect(c.errors).toEqual([])
  // (that the head timeout closes it once idle again: the test above)
  c.socket.destroy()
}, 30_000)
