/**
 * The node:http server: routing, the request log line, error mapping and a
 * graceful close (stop accepting, let in-flight requests finish up to a
 * deadline, then cut what is left).
 */
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chmodSync, rmSync } from 'node:fs'
import { releaseBytes } from '../runtime/buffers.js'
import { ExpectationFailedError, HeadTooLargeError, InvalidInputError, NameTooLongError, OperationNotAllowedError, ShuttingDownError, UnavailableError } from '../kernel/errors.js'
import { errorAnswer } from './error-catalog.js'
import { randomUUID } from 'node:crypto'
import { logContext, type Logger } from '../kernel/log.js'
import { clientIp, normalize } from './client-ip.js'
import { limitConnections } from './connections.js'
import { applyCors, type CorsPolicy } from './cors.js'
import { sendError } from './error-response.js'
import type { Admission, RateLimiter } from './rate-limit.js'
import type { RequestContext, Router } from './router.js'
import { socketPath } from './unix-socket.js'

export interface HttpServer {
  server: Server
  listen(host: string, port: number): Promise<{ host: string, port: number }>
  /** listen on a Unix socket that only this user can open (mode 0600) */
  listenSocket(path: string): Promise<void>
  /** stop accepting; wait for in-flight requests up to `deadlineMs`, then close the rest */
  close(deadlineMs: number): Promise<void>
  inFlight(): number
  /**
   * from now on every response carries Connection: close, so a proxy opens a new connection
   * (which its balancing sends elsewhere once /ready fails) rather than reusing one to a server about to close
   */
  drain(): void
  draining(): boolean
  /** with `starting`: from now on requests are routed (until then every one answers 503) */
  ready(): void
}

export interface HttpServerOptions {
  cors?: CorsPolicy
  rateLimiter?: RateLimiter
  /** called once per finished request (metrics) */
  onRequest?: (r: { method: string, route: string, status: number, seconds: number, bytesIn: number, bytesOut: number }) => void
  /** a connection with no bytes moving for this long is closed; default 60 s; 0 = never */
  idleTimeoutMs?: number
  /** a connection's request head must arrive within this of its opening (or of its previous response); default 20 s */
  headTimeoutMs?: number
  /** open connections at most (src/http/connections.ts); default unlimited */
  maxConnections?: number
  /** open connections per client address at most; default unlimited */
  maxConnectionsPerClient?: number
  /** reverse proxies: their connections are not counted per client, and their X-Forwarded-For and X-Request-Id name the client and the request in the logs */
  trustedProxies?: string[]
  /**
   * The server listens before its routes are all added (it must know its port
   * first): until `ready()` every request answers 503 with Retry-After, never
   * a 404 from a half-built router.
   */
  starting?: boolean
}

/** a request's URL and parameters until it is routed (read only: one for all) */
const NO_URL = new URL('http://x/')
const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>

/** an X-Request-Id a trusted proxy sent is kept if it looks like one */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/

export function createHttpServer (router: Router, log: Logger, opts: HttpServerOptions = {}): HttpServer {
  let closing = false
  let draining = false
  let starting = opts.starting === true
  let inFlight = 0
  let idleWaiters: Array<() => void> = []
  const idleMs = opts.idleTimeoutMs ?? 60_000
  const logRequests = log.enabled('info')

  const proxies = new Set(opts.trustedProxies ?? [])
  const handle = async (req: IncomingMessage, res: ServerResponse, reqId: string, client: string): Promise<void> => {
    if (req.socket.destroyed) return // refused by the connection limits as its head arrived
    const started = process.hrtime.bigint()
    inFlight++
    let admission: Admission | undefined
    const ctx: RequestContext = { req, res, url: NO_URL, params: NO_PARAMS, log, route: '', countAsPaid: () => { admission?.refund() } }
    res.on('close', () => {
      admission?.done()
      inFlight--
      const ms = Number(process.hrtime.bigint() - started) / 1e6
      if (logRequests) {
        log.info('request', {
          reqId,
          client,
          method: req.method,
          path: ctx.url.pathname,
          route: ctx.route,
          status: res.statusCode,
          ms: Math.round(ms * 10) / 10,
          ...(res.writableFinished ? {} : { aborted: true })
        })
      }
      opts.onRequest?.({
        method: req.method ?? 'GET',
        route: ctx.route,
        status: res.statusCode,
        seconds: ms / 1000,
        bytesIn: Number(req.headers['content-length'] ?? 0) || 0,
        bytesOut: Number(res.getHeader('content-length') ?? 0) || 0
      })
      if (inFlight === 0 && idleWaiters.length > 0) {
        const waiters = idleWaiters
        idleWaiters = []
        for (const w of waiters) w()
      }
    })
    try {
      if (closing) {
        res.setHeader('connection', 'close')
        throw new ShuttingDownError('the server is shutting down; retry shortly', 5)
      }
      if (starting) throw new UnavailableError('the server is starting; retry shortly', 1)
      let hosts = 0
      for (let i = 0; i < req.rawHeaders.length; i += 2) if ((req.rawHeaders[i] as string).length === 4 && (req.rawHeaders[i] as string).toLowerCase() === 'host') hosts++
      if (hosts !== 1 && req.httpVersion !== '1.0') throw new InvalidInputError(hosts === 0 ? 'the Host header is required' : 'send the Host header once')
      if (opts.cors != null && applyCors(req, res, opts.cors)) return
      admission = opts.rateLimiter?.admit(req, client)
      ctx.url = parseUrl(req.url)
      const byHost = router.matchHost(req, ctx.url)
      if (byHost != null) {
        ctx.route = byHost.pattern
        await byHost.handler(ctx)
        return
      }
      const { handler, params, pattern } = router.match(req.method ?? 'GET', ctx.url.pathname)
      ctx.params = params
      ctx.route = pattern
      await handler(ctx)
    } catch (err) {
      sendError(res, err, log)
      discardBody(req, res, idleMs)
    }
  }

  // requestTimeout stays off (a 100 MB upload on a slow link is legitimate); a
  // connection that stops moving bytes is cut by the idle timeout instead. Node's
  // own head timeout is off too: src/http/connections.ts keeps its own, per socket.
  // The Keep-Alive header advertises how long an idle connection is kept: never longer than the head
  // timeout that cuts it (a client trusting a longer figure would send into a closing socket). The
  // connection is kept until that head timeout all the same, not node's advertised + 1 s: a client
  // that reuses it after the advertised time (its event loop busy when it should have let go)
  // writes into a live socket rather than one just closed (EPIPE on its side, its request lost;
  // docs/performance.md). Idle connections are the first evicted when the connection limits are
  // reached (./connections.ts).
  const headTimeoutMs = opts.headTimeoutMs ?? 20_000
  const keepAliveTimeout = Math.min(5000, headTimeoutMs)
  const server = createServer({ requestTimeout: 0, headersTimeout: 0, keepAliveTimeout, keepAliveTimeoutBuffer: headTimeoutMs - keepAliveTimeout, maxHeaderSize: 16 * 1024, requireHostHeader: false })
  limitConnections(server, {
    headTimeoutMs,
    maxConnections: opts.maxConnections ?? 0,
    maxPerClient: opts.maxConnectionsPerClient ?? 0,
    exempt: new Set(opts.trustedProxies ?? [])
  }, log)
  server.on('request', (req, res) => {
    const client = clientIp(req, proxies)
    const upstream = proxies.size > 0 && proxies.has(normalize(req.socket.remoteAddress ?? '')) ? req.headers['x-request-id'] : undefined
    const reqId = typeof upstream === 'string' && REQUEST_ID.test(upstream) ? upstream : randomUUID()
    res.setHeader('x-request-id', reqId)
    if (draining) closeAfterResponse(req, res)
    // every line logged while this request is handled (payments, pins, errors) names it and its client
    logContext.run({ reqId, client }, () => { void handle(req, res, reqId, client) })
  })
  // requests node:http would answer by itself (with an empty body) get the spec's error shape too
  server.on('checkExpectation', (req, res) => {
    const a = errorAnswer(new ExpectationFailedError(`Expect: ${String(req.headers.expect).slice(0, 50)} is not supported (only 100-continue)`))
    res.writeHead(a.status, { 'content-type': 'application/json', 'content-length': a.body.byteLength, connection: 'close' })
    res.end(a.body)
  })
  server.on('connect', (_req, socket) => {
    socket.on('error', () => {})
    socket.end(rawAnswer(new OperationNotAllowedError('CONNECT is not supported: this is not a proxy', 'GET, HEAD, POST, DELETE, OPTIONS')))
  })
  server.maxHeadersCount = 100
  if (idleMs > 0) server.setTimeout(idleMs, (socket) => { socket.destroy() })
  server.on('clientError', (err, socket) => {
    const code = (err as NodeJS.ErrnoException).code
    const refusal = code === 'HPE_HEADER_OVERFLOW'
      ? new HeadTooLargeError('the request headers are larger than 16 KiB or more than 100 fields')
      : new InvalidInputError('malformed HTTP request')
    if (socket.writable) socket.end(rawAnswer(refusal))
    else socket.destroy()
    log.debug('client error', { error: err.message })
  })

  return {
    server,
    inFlight: () => inFlight,
    ready: () => { starting = false },
    drain: () => { draining = true },
    draining: () => draining,
    listen: async (host, port) => {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, host, () => { server.off('error', reject); resolve() })
      })
      const addr = server.address() as AddressInfo
      return { host: addr.address, port: addr.port }
    },
    listenSocket: async (path) => {
      rmSync(path, { force: true }) // a socket file left by a crash
      const mask = process.umask(0o177)
      // kept open while listening: libuv unlinks the socket through the same path when it closes
      const at = socketPath(path)
      server.once('close', () => { at.close() })
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject)
          server.listen(at.path, () => { server.off('error', reject); resolve() })
        })
      } catch (err) {
        at.close()
        throw err
      } finally {
        process.umask(mask)
      }
      chmodSync(path, 0o600)
    },
    close: async (deadlineMs) => {
      closing = true
      const closed = new Promise<void>(resolve => { server.close(() => { resolve() }) })
      server.closeIdleConnections()
      if (inFlight > 0) {
        const drained = new Promise<void>(resolve => { idleWaiters.push(resolve) })
        let timer: NodeJS.Timeout | undefined
        const deadline = new Promise<void>(resolve => { timer = setTimeout(resolve, deadlineMs) })
        await Promise.race([drained, deadline])
        clearTimeout(timer)
        if (inFlight > 0) log.warn('shutdown deadline reached; closing in-flight requests', { inFlight })
      }
      server.closeAllConnections()
      await closed
    }
  }
}

/**
 * Connection: close on this response, unless the request's body is still arriving (an early 402 or 413):
 * node destroys a closing socket once the response is written, and a client still sending gets a reset
 * in place of the answer. That connection stays open, its body read, and the next response closes it.
 */
function closeAfterResponse (req: IncomingMessage, res: ServerResponse): void {
  const writeHead = res.writeHead
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    // a request without a body may not be marked complete yet when a synchronous handler answers
    const bodyArriving = !req.complete && (req.headers['transfer-encoding'] != null || Number(req.headers['content-length'] ?? 0) > 0)
    if (!bodyArriving && !this.hasHeader('connection')) this.setHeader('connection', 'close')
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args)
  } as typeof res.writeHead
}

/** An error's answer as raw HTTP/1.1 bytes, for a socket node:http no longer writes responses on; the connection closes after it. */
function rawAnswer (err: Error): Buffer {
  const a = errorAnswer(err)
  const head = [`HTTP/1.1 ${a.status} ${STATUS_CODES[a.status] ?? ''}`, ...Object.entries(a.headers).map(([k, v]) => `${k}: ${v}`),
    'connection: close', 'content-type: application/json', `content-length: ${a.body.byteLength}`]
  return Buffer.concat([Buffer.from(head.join('\r\n') + '\r\n\r\n'), a.body])
}

/** Largest unread request body drained (so the client reads our answer) rather than cut off. */
const MAX_DRAIN_BYTES = 128 * 1024 * 1024

/**
 * After an early answer (402, 400, 413…) the client may still be sending its
 * body (x402 clients send it with the unpaid request too). Drain a bounded
 * amount so the client reads the answer; past that, close the connection.
 */
function discardBody (req: IncomingMessage, res: ServerResponse, idleMs: number): void {
  if (req.complete || req.readableEnded) return
  let seen = 0
  req.on('data', (chunk: Buffer) => {
    seen += chunk.length
    // read only to be dropped: free it now rather than at the next GC (an x402 client
    // that cannot stop sending, like fetch, sends its whole file with the unpaid request),
    // unless a parser still piped to the request was handed the same bytes
    if (req.listenerCount('data') === 1) releaseBytes(chunk)
    if (seen > MAX_DRAIN_BYTES) req.destroy()
  })
  req.on('error', () => {})
  req.resume()
  res.on('finish', () => {
    if (req.complete) return
    if (seen > MAX_DRAIN_BYTES) req.socket?.destroy()
    // node gives the connection its keep-alive timeout once the answer is written (≤ 6 s): this body is
    // still arriving, so the idle timeout stays until its end (else a client pausing, or this process
    // busy, for a few seconds is cut mid-body: EPIPE on its side, the answer unread)
    else if (idleMs > 0) req.socket?.setTimeout(idleMs)
  })
}

/** the longest request target accepted (a CID path with a long file path fits many times over) */
export const MAX_URL_LENGTH = 8192

/**
 * Request targets parsed lately (short ones): the cheap paths (/health, POST /pins) name the same
 * few again and again. Their URLs are shared by the requests naming them: read only (no route
 * changes its URL; one that wants another makes a new one).
 */
const parsedUrls = new Map<string, URL>()
const MAX_PARSED_URLS = 256
const MAX_KEPT_URL_LENGTH = 128

function parseUrl (raw: string | undefined): URL {
  if (raw == null || raw.charCodeAt(0) !== 47 /* / */) throw new InvalidInputError('the request target must be an absolute path')
  const kept = parsedUrls.get(raw)
  if (kept != null) return kept
  if (raw.length > MAX_URL_LENGTH) throw new NameTooLongError(`the request target is longer than ${MAX_URL_LENGTH} characters`)
  let url: URL
  try {
    url = new URL(raw, 'http://localhost')
  } catch {
    throw new InvalidInputError('the request target is not a valid URL path')
  }
  if (raw.length <= MAX_KEPT_URL_LENGTH) {
    if (parsedUrls.size >= MAX_PARSED_URLS) parsedUrls.delete(parsedUrls.keys().next().value as string)
    parsedUrls.set(raw, url)
  }
  return url
}
