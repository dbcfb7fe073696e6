/**
 * The client side of the bad-input suite (test/e2e/bad-input.test.ts): sends
 * requests with node:http (raw paths, any method, duplicated headers) or as
 * raw bytes over node:net (what no HTTP client will send), in parallel
 * batches, and checks every answer against the service's error contract:
 * a 4xx (or the statuses a case allows), and for every error with a body the
 * Pinning Service API shape {"error":{"reason","details"}}, JSON, no stack trace.
 */
import { Agent, request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http'
import { connect, type Socket } from 'node:net'

export interface HttpCase {
  category: string
  label: string
  method?: string
  path: string
  headers?: OutgoingHttpHeaders
  body?: string | Uint8Array
  /** the statuses this case may answer; default: any 4xx except 429 */
  expect?: number[]
}

export interface RawCase {
  category: string
  label: string
  /** the bytes sent as they are */
  raw: Uint8Array | string
  /** half-close after sending (the request is cut short: the server sees EOF) */
  end?: boolean
  expect?: number[]
  /** the method as the server will read it (HEAD answers have no body) */
  method?: string
}

export type Case = HttpCase | RawCase

export interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
  /** why there was no answer (connection reset, timeout …) */
  error?: string
}

export interface Violation {
  category: string
  label: string
  status: number
  problem: string
  body: string
}

const STACK = [/\bat .*\.(c?js|mjs|ts):\d+/, /node:internal/, /\n\s+at /]

/** What is wrong with this answer, or undefined when it honours the contract. */
export function problemWith (c: Case, a: Answer): string | undefined {
  if (a.error != null) return `no answer: ${a.error}`
  const allowed = c.expect
  if (allowed != null) {
    if (!allowed.includes(a.status)) return `status ${a.status}, expected ${allowed.join('/')}`
  } else if (a.status < 400 || a.status > 499 || a.status === 429) {
    return `status ${a.status}, expected a 4xx (not 429)`
  }
  if (a.status < 400) return undefined // an allowed success: its body is content, not an error
  if (a.status === 405 && (a.headers.allow == null || a.headers.allow === '')) return '405 without an Allow header'
  const method = ('method' in c && c.method != null) ? c.method.toUpperCase() : 'GET'
  if (method === 'HEAD') return a.body.length > 0 ? 'a HEAD answer with a body' : undefined
  if (a.body.length === 0) return `${a.status} with an empty body, not the spec error body`
  const text = a.body.toString('utf8')
  if (STACK.some(re => re.test(text))) return 'a stack trace in the body'
  const type = String(a.headers['content-type'] ?? '')
  if (!/^application\/json\b/i.test(type)) return `content-type "${type}", not application/json`
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return 'the body is not JSON'
  }
  const error = (parsed as { error?: { reason?: unknown, details?: unknown } } | null)?.error
  if (error == null || typeof error !== 'object') return 'the body has no "error" object'
  if (typeof error.reason !== 'string' || error.reason === '') return 'error.reason is not a non-empty string'
  if (typeof error.details !== 'string') return 'error.details is not a string'
  return undefined
}

export interface Target { host: string, port: number }

export function targetOf (url: string): Target {
  const u = new URL(url)
  return { host: u.hostname, port: Number(u.port) }
}

export class BadInputClient {
  readonly agent: Agent
  readonly counts = new Map<string, number>()
  readonly violations: Violation[] = []
  /** the slowest requests seen (ms, label) */
  readonly slowest: Array<{ ms: number, label: string }> = []
  /** sockets that have carried a request */
  private readonly used = new WeakSet<Socket>()

  constructor (readonly target: Target, readonly timeoutMs = 15_000, maxSockets = 32) {
    this.agent = new Agent({ keepAlive: true, maxSockets })
  }

  close (): void {
    this.agent.destroy()
  }

  /**
   * One request with node:http; never throws (a failure is an answer with
   * `error`). A kept-alive socket the server closed just before we reused it
   * (ECONNRESET before any answer) is retried once on a new one, as node's
   * documentation advises. "Reused" means the socket carried a request
   * before: node's `req.reusedSocket` is false for a request that waited in
   * the agent's queue and was handed the socket its previous request freed.
   */
  async send (c: Omit<HttpCase, 'category' | 'label'>): Promise<Answer> {
    const first = await this.sendOnce(c)
    // on a new connection of its own: the pool may hold more sockets the server closed meanwhile
    if (first.retry === true) return await this.sendOnce(c, false)
    return first
  }

  /** exactly one attempt, no retry (to observe a stuck kept-alive connection) */
  async sendOnceForTest (c: Omit<HttpCase, 'category' | 'label'>): Promise<Answer> {
    return await this.sendOnce(c)
  }

  private async sendOnce (c: Omit<HttpCase, 'category' | 'label'>, agent: Agent | false = this.agent): Promise<Answer & { retry?: boolean }> {
    return await new Promise<Answer & { retry?: boolean }>((resolve) => {
      let done = false
      const finish = (a: Answer & { retry?: boolean }): void => { if (!done) { done = true; clearTimeout(timer); resolve(a) } }
      const timer = setTimeout(() => { req.destroy(); finish({ status: 0, headers: {}, body: Buffer.alloc(0), error: 'timed out' }) }, this.timeoutMs)
      // large response heads are allowed: the check is on the server's answer, not on node's client defaults
      const req = request({ ...this.target, agent, method: c.method ?? 'GET', path: c.path, headers: c.headers ?? {}, maxHeaderSize: 1024 * 1024 }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (d: Buffer) => { chunks.push(d) })
        res.on('error', (err) => { finish({ status: 0, headers: {}, body: Buffer.alloc(0), error: err.message }) })
        res.on('end', () => { finish({ status: res.statusCode ?? 0, headers: res.headers as IncomingHttpHeaders, body: Buffer.concat(chunks) }) })
      })
      let reused = false
      req.once('socket', (socket: Socket) => {
        reused = req.reusedSocket || this.used.has(socket)
        this.used.add(socket)
      })
      req.on('error', (err: NodeJS.ErrnoException) => {
        const on = `${reused ? 'a kept-alive' : 'a new'} connection${agent === false ? ', retried' : ''}`
        finish({ status: 0, headers: {}, body: Buffer.alloc(0), error: `${err.message} (${on})`, ...(reused && err.code === 'ECONNRESET' ? { retry: true } : {}) })
      })
      if (c.body != null) req.write(c.body)
      req.end()
    })
  }

  /** Raw bytes on a fresh connection; reads one response (1xx skipped). */
  async sendRaw (c: Omit<RawCase, 'category' | 'label'>): Promise<Answer> {
    return await rawExchange(this.target, c.raw, { halfClose: c.end === true, timeoutMs: this.timeoutMs, head: c.method?.toUpperCase() === 'HEAD' })
  }

  async run (c: Case): Promise<{ answer: Answer, problem?: string }> {
    const t0 = performance.now()
    const answer = 'raw' in c ? await this.sendRaw(c) : await this.send(c)
    const ms = performance.now() - t0
    if (this.slowest.length < 10 || ms > (this.slowest[this.slowest.length - 1]?.ms ?? 0)) {
      this.slowest.push({ ms, label: `[${c.category}] ${c.label}` })
      this.slowest.sort((a, b) => b.ms - a.ms)
      this.slowest.length = Math.min(this.slowest.length, 10)
    }
    this.counts.set(c.category, (this.counts.get(c.category) ?? 0) + 1)
    const problem = problemWith(c, answer)
    if (problem != null) {
      this.violations.push({ category: c.category, label: c.label, status: answer.status, problem, body: answer.body.toString('utf8').slice(0, 300) })
    }
    return { answer, ...(problem != null ? { problem } : {}) }
  }

  /**
   * Runs the cases `concurrency` at a time, in batches; after each batch the
   * service must still answer GET /health with 200.
   */
  async runAll (cases: Case[], opts: { concurrency?: number, batch?: number } = {}): Promise<void> {
    const concurrency = opts.concurrency ?? 32
    const batch = opts.batch ?? 256
    for (let start = 0; start < cases.length; start += batch) {
      const slice = cases.slice(start, start + batch)
      let next = 0
      await Promise.all(Array.from({ length: Math.min(concurrency, slice.length) }, async () => {
        while (next < slice.length) {
          const c = slice[next++] as Case
          await this.run(c)
        }
      }))
      await this.assertHealthy(`after ${slice[0]?.category ?? ''} batch ${start / batch + 1}`)
    }
  }

  async assertHealthy (when: string): Promise<void> {
    const h = await this.send({ path: '/health' })
    if (h.status !== 200) {
      this.violations.push({ category: 'health', label: when, status: h.status, problem: `GET /health answered ${h.status}${h.error != null ? ` (${h.error})` : ''}`, body: h.body.toString('utf8').slice(0, 300) })
    }
  }

  /** The violations of one category, formatted for an assertion message. */
  report (category?: string): string[] {
    return this.violations
      .filter(v => category == null || v.category === category)
      .map(v => `[${v.category}] ${v.label}: ${v.problem}${v.body !== '' ? ` — ${v.body.slice(0, 160)}` : ''}`)
  }
}

/**
 * Sends `data` on a new TCP connection and parses one HTTP/1.x response
 * (interim 1xx responses are skipped). Resolves when the response is
 * complete, the peer closes, or the deadline passes.
 */
export async function rawExchange (target: Target, data: Uint8Array | string, opts: { halfClose?: boolean, timeoutMs?: number, head?: boolean } = {}): Promise<Answer> {
  const { halfClose = false, timeoutMs = 15_000, head = false } = opts
  return await new Promise<Answer>((resolve) => {
    const socket = connect(target.port, target.host)
    let buf = Buffer.alloc(0)
    let done = false
    const finish = (a: Answer): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resolve(a)
    }
    const timer = setTimeout(() => {
      const parsed = parseResponse(buf, true, head)
      finish(parsed ?? { status: 0, headers: {}, body: Buffer.alloc(0), error: `timed out${buf.length > 0 ? ` with ${buf.length} bytes of an incomplete response` : ''}` })
    }, timeoutMs)
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk])
      const parsed = parseResponse(buf, false, head)
      if (parsed != null) finish(parsed)
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      const parsed = parseResponse(buf, true, head)
      finish(parsed ?? { status: 0, headers: {}, body: Buffer.alloc(0), error: buf.length === 0 ? 'the server closed the connection without answering' : `an unparseable response: ${JSON.stringify(buf.toString('latin1').slice(0, 120))}` })
    })
    socket.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data)
    if (halfClose) socket.end()
  })
}

/** One complete response in `buf`, or undefined if more bytes are needed (unless `eof`). */
function parseResponse (input: Buffer, eof: boolean, head: boolean): Answer | undefined {
  let buf = input
  for (;;) {
    const headEnd = buf.indexOf('\r\n\r\n')
    if (headEnd < 0) return undefined
    const lines = buf.subarray(0, headEnd).toString('latin1').split('\r\n')
    const m = /^HTTP\/\d\.\d (\d{3})/.exec(lines[0] ?? '')
    if (m == null) return undefined
    const status = Number(m[1])
    const headers: Record<string, string | string[] | undefined> = {}
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':')
      if (i <= 0) continue
      const k = line.slice(0, i).trim().toLowerCase()
      const v = line.slice(i + 1).trim()
      const had = headers[k]
      headers[k] = had == null ? v : Array.isArray(had) ? [...had, v] : [had, v]
    }
    let rest = buf.subarray(headEnd + 4)
    if (status >= 100 && status < 200) { buf = rest; continue }
    if (head || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) }
    const length = headers['content-length']
    if (typeof length === 'string') {
      const n = Number(length)
      if (rest.length < n) return eof ? { status, headers, body: rest, error: `the body was cut short (${rest.length} of ${n} bytes)` } : undefined
      return { status, headers, body: rest.subarray(0, n) }
    }
    if (/chunked/i.test(String(headers['transfer-encoding'] ?? ''))) {
      const body: Buffer[] = []
      for (;;) {
        const lineEnd = rest.indexOf('\r\n')
        if (lineEnd < 0) return eof ? { status, headers, body: Buffer.concat(body), error: 'a chunked body was cut short' } : undefined
        const size = parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16)
        if (Number.isNaN(size)) return { status, headers, body: Buffer.concat(body), error: 'a malformed chunked body' }
        if (size === 0) return { status, headers, body: Buffer.concat(body) }
        if (rest.length < lineEnd + 2 + size + 2) return eof ? { status, headers, body: Buffer.concat(body), error: 'a chunked body was cut short' } : undefined
        body.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size))
        rest = rest.subarray(lineEnd + 2 + size + 2)
      }
    }
    // neither: the body runs to the end of the connection
    return eof ? { status, headers, body: rest } : undefined
  }
}
