/**
 * Connection limits of the public HTTP server, which node:http does not hold
 * by itself under load (its own headersTimeout check skips a connection that
 * never sent a byte, and once it fires on one that has, the socket's idle
 * timer no longer cuts it):
 *
 *   - head timeout: a connection must deliver a complete request head within
 *     `headTimeoutMs` of opening, and of the end of its previous response
 *     (keep-alive). Otherwise it is answered 408 (if it sent part of a head)
 *     and closed.
 *   - at most `maxConnections` open. Past that, a new connection closes the
 *     connection that has waited longest for a request head (an idle or
 *     slow-header one: requests in flight are never cut); when every
 *     connection is busy with a request, the new one is answered 503 and
 *     closed. `server.maxConnections` is set a little higher as a backstop,
 *     so the process never runs out of file descriptors on sockets.
 *   - at most `maxPerClient` open per client address (IPv6: per /64), with
 *     the same policy among that client's own connections; connections from
 *     trusted proxies are not counted per client (they carry many clients).
 *
 * The idle timeout (no byte moving either way) is node's socket timeout,
 * set by the server (src/http/server.ts).
 */
import { readFileSync } from 'node:fs'
import type { IncomingMessage, Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Logger } from '../kernel/log.js'
import { clientKey, normalize } from './client-ip.js'

export interface ConnectionLimits {
  headTimeoutMs: number
  /** 0 = unlimited */
  maxConnections?: number
  /** 0 = unlimited */
  maxPerClient?: number
  /** peers not counted per client (reverse proxies) */
  exempt?: ReadonlySet<string>
}

/** Extra sockets node:http itself may hold past `maxConnections` (closing ones) before it drops new ones. */
const BACKSTOP_MARGIN = 64

interface Conn {
  socket: Socket
  client?: ClientConns
  /** requests whose head arrived and whose response has not ended */
  busy: number
  timer?: NodeJS.Timeout
  /** waiting for a request head (in `waiting`) */
  waiting: boolean
  readAtWait: number
  released: boolean
}

interface ClientConns { key: string, count: number, waiting: Set<Conn> }

/** a response's connection (set as its head arrives) */
const CONN = Symbol('pind.connection')
/** the request a response answers (set beside CONN) */
const REQ = Symbol('pind.request')

export function limitConnections (server: Server, limits: ConnectionLimits, log: Logger): void {
  const max = limits.maxConnections ?? 0
  const perClient = limits.maxPerClient ?? 0
  const exempt = limits.exempt ?? new Set<string>()
  const conns = new Map<Socket, Conn>()
  /** connections waiting for a request head, longest waiting first */
  const waiting = new Set<Conn>()
  const clients = new Map<string, ClientConns>()
  if (max > 0) server.maxConnections = max + BACKSTOP_MARGIN

  // a connection's one timer is started again for each wait (refresh: no new timer per request); it
  // may go off while the connection is not waiting (busy with a request): then it does nothing
  const unwait = (c: Conn): void => {
    if (!c.waiting) return
    c.waiting = false
    waiting.delete(c)
    c.client?.waiting.delete(c)
  }

  const wait = (c: Conn): void => {
    unwait(c)
    c.waiting = true
    waiting.add(c)
    c.client?.waiting.add(c)
    c.readAtWait = c.socket.bytesRead
    if (c.timer == null) {
      c.timer = setTimeout(() => { if (c.waiting) headTimedOut(c) }, limits.headTimeoutMs)
      c.timer.unref()
    } else {
      c.timer.refresh()
    }
  }

  const release = (c: Conn): void => {
    if (c.released) return
    c.released = true
    unwait(c)
    clearTimeout(c.timer)
    conns.delete(c.socket)
    if (c.client != null) {
      c.client.count--
      if (c.client.count === 0) clients.delete(c.client.key)
    }
  }

  const headTimedOut = (c: Conn): void => {
    release(c)
    if (c.socket.bytesRead > c.readAtWait) answerAndClose(c.socket, 408, 'Request Timeout', 'BAD_REQUEST', `the request head did not arrive within ${Math.round(limits.headTimeoutMs / 1000)} s`)
    else c.socket.destroy()
  }

  /** Makes room for one more connection among `pool`: closes the one waiting longest, if any. */
  const evictFrom = (pool: Set<Conn>): boolean => {
    const oldest = pool.values().next().value
    if (oldest == null) return false
    release(oldest)
    oldest.socket.destroy()
    return true
  }

  server.on('connection', (socket: Socket) => {
    const peer = socket.remoteAddress != null ? normalize(socket.remoteAddress) : undefined
    const key = peer != null && perClient > 0 && !exempt.has(peer) ? clientKey(peer) : undefined
    let client = key != null ? clients.get(key) : undefined
    if (client != null && client.count >= perClient && !evictFrom(client.waiting)) {
      log.debug('connection refused: per-client limit', { client: key })
      answerAndClose(socket, 503, 'Service Unavailable', 'SERVICE_UNAVAILABLE', `too many connections from this address (at most ${perClient}, all busy); retry shortly`)
      return
    }
    if (max > 0 && conns.size >= max && !evictFrom(waiting)) {
      log.debug('connection refused: server connection limit', { open: conns.size })
      answerAndClose(socket, 503, 'Service Unavailable', 'SERVICE_UNAVAILABLE', 'the server has as many connections as it takes, all busy; retry shortly')
      return
    }
    if (key != null) {
      client ??= { key, count: 0, waiting: new Set() }
      clients.set(key, client)
      client.count++
    }
    const c: Conn = { socket, busy: 0, waiting: false, readAtWait: 0, released: false, ...(client != null ? { client } : {}) }
    conns.set(socket, c)
    wait(c)
    socket.once('close', () => { release(c) })
  })

  // registered before the server's request handler (src/http/server.ts), so it sees each head first
  server.on('request', (req, res) => {
    const c = conns.get(req.socket)
    if (c == null) {
      // a connection refused or cut a moment ago whose head was already read
      req.socket.destroy()
      return
    }
    unwait(c)
    c.busy++
    // one listener function for every response (no closure per request): the response carries its connection
    ;(res as unknown as Record<symbol, Conn>)[CONN] = c
    ;(res as unknown as Record<symbol, IncomingMessage>)[REQ] = req
    res.on('close', ended)
  })

  function ended (this: object): void {
    const c = (this as Record<symbol, Conn>)[CONN] as Conn
    c.busy--
    if (c.busy !== 0 || c.released || c.socket.destroyed) return
    // an early answer (402, 400, 413) to a body still arriving: the next head cannot come before the
    // body's end, so the head timer starts then; started now, it would cut a client still sending
    const req = (this as Record<symbol, IncomingMessage>)[REQ] as IncomingMessage
    if (!req.complete && !req.destroyed) {
      req.once('end', () => { if (c.busy === 0 && !c.released && !c.socket.destroyed) wait(c) })
      return
    }
    wait(c)
  }
}

/** Answers on a connection with no request to answer (the spec's error shape), then closes it. */
function answerAndClose (socket: Socket, status: number, text: string, reason: string, details: string): void {
  socket.on('error', () => {})
  if (!socket.writable) {
    socket.destroy()
    return
  }
  const body = JSON.stringify({ error: { reason, details } })
  const retry = status === 503 ? 'retry-after: 5\r\n' : ''
  socket.end(`HTTP/1.1 ${status} ${text}\r\nconnection: close\r\n${retry}content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`, () => { socket.destroy() })
  // the callback waits for the bytes to reach the kernel; a peer that reads nothing cannot hold the socket
  setTimeout(() => { socket.destroy() }, 1000).unref()
}

/** The process's open-file limit (RLIMIT_NOFILE, soft; Node raises it to the hard limit at start), from /proc. */
export function openFileLimit (): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    if (m == null) return undefined
    return m[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(m[1])
  } catch {
    return undefined
  }
}

/**
 * The limits in force: what the operator set, else sized to the
 * file-descriptor limit: HTTP connections may use half of it (the rest is for
 * the ledger, block files, staging, libp2p), and one client an eighth of that.
 */
export function connectionLimits (set: { maxConnections?: number | undefined, maxPerClient?: number | undefined }, fdLimit = openFileLimit() ?? 1024): { maxConnections: number, maxPerClient: number } {
  const maxConnections = set.maxConnections ?? Math.max(64, Math.min(Math.floor(fdLimit / 2), 1_000_000))
  return { maxConnections, maxPerClient: set.maxPerClient ?? Math.max(16, Math.floor(maxConnections / 8)) }
}
