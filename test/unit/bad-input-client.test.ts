/**
 * The bad-input suite's HTTP client (test/helpers/bad-input/client.ts) must
 * tell a server that answers nothing from a kept-alive connection the server
 * closed as the client reused it: the second is retried once on a new
 * connection, the first is reported. CI once reported "MKCOL /pins/{A}: no
 * answer: socket hang up": a request that had waited in the agent's queue
 * and was handed a freed socket, for which node's `req.reusedSocket` is
 * false, so the client did not retry it.
 */
import { createServer, type Server } from 'node:http'
import type { Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { BadInputClient } from '../helpers/bad-input/client.js'

let server: Server | undefined
let client: BadInputClient | undefined

afterEach(async () => {
  client?.close()
  server?.closeAllConnections()
  await new Promise<void>(resolve => { if (server == null) resolve(); else server.close(() => { resolve() }) })
  server = undefined
  client = undefined
})

/** A server that answers each connection's first request and cuts the connection at its second (a keep-alive close racing the client's reuse). */
async function cutsSecondRequests (): Promise<{ port: number, connections: () => number }> {
  const seen = new WeakMap<Socket, number>()
  let connections = 0
  server = createServer((req, res) => {
    const n = (seen.get(req.socket) ?? 0) + 1
    seen.set(req.socket, n)
    if (n > 1) { req.socket.destroy(); return }
    res.end('ok')
  })
  server.on('connection', () => { connections++ })
  await new Promise<void>(resolve => { server!.listen(0, '127.0.0.1', () => { resolve() }) })
  const addr = server.address()
  if (addr == null || typeof addr === 'string') throw new Error('no port')
  return { port: addr.port, connections: () => connections }
}

describe('bad-input client: kept-alive connections closed under it', () => {
  it('retries a request that waited in the agent queue for a socket the server then closed', async () => {
    const { port, connections } = await cutsSecondRequests()
    client = new BadInputClient({ host: '127.0.0.1', port }, 5000, 1)
    // one socket: the second and third requests wait in the agent's queue and each gets the socket the one before freed
    const answers = await Promise.all([client.send({ path: '/a' }), client.send({ path: '/b' }), client.send({ path: '/c' })])
    expect(answers.map(a => a.error ?? a.status)).toEqual([200, 200, 200])
    expect(connections()).toBeGreaterThanOrEqual(3)
  })

  it('reports a new connection closed without an answer, and says so', async () => {
    server = createServer((req) => { req.socket.destroy() })
    await new Promise<void>(resolve => { server!.listen(0, '127.0.0.1', () => { resolve() }) })
    const addr = server.address()
    if (addr == null || typeof addr === 'string') throw new Error('no port')
    client = new BadInputClient({ host: '127.0.0.1', port: addr.port }, 5000, 1)
    const a = await client.send({ path: '/x' })
    expect(a.status).toBe(0)
    expect(a.error).toMatch(/socket hang up \(a new connection\)/)
  })
})
