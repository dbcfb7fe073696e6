/**
 * Per-client rate limits (token buckets keyed by client address):
 *   - unpaid writes: POST requests with neither a payment nor a token, which
 *     answer 402 and cost the server a quote (and possibly a network probe);
 *   - reads: GET and HEAD (gateway, owner API).
 * Paid requests are not limited here: a valid payment is its own limit.
 * Over the limit: 429 with Retry-After, in the spec's error shape. Memory is
 * bounded: at most `maxClients` buckets, the idlest dropped first.
 */
import type { IncomingMessage } from 'node:http'
import { HttpError } from '../errors.js'
import { clientIp } from './client-ip.js'

export interface RateLimits {
  /** unpaid writes per client per minute (0 = unlimited) */
  unpaidPerMinute: number
  /** reads per client per minute (0 = unlimited) */
  readsPerMinute: number
  trustedProxies: string[]
  maxClients?: number
}

interface Bucket { tokens: number, at: number }

export class RateLimiter {
  private readonly unpaid = new Map<string, Bucket>()
  private readonly reads = new Map<string, Bucket>()
  private readonly proxies: ReadonlySet<string>
  private readonly max: number

  constructor (private readonly limits: RateLimits, private readonly now: () => number = Date.now) {
    this.proxies = new Set(limits.trustedProxies)
    this.max = limits.maxClients ?? 100_000
  }

  /** Throws a 429 HttpError when this request is over its client's limit. */
  check (req: IncomingMessage): void {
    const method = req.method ?? 'GET'
    if (method === 'GET' || method === 'HEAD') {
      this.take(this.reads, this.limits.readsPerMinute, req, 'reads')
    } else if (method === 'POST' && req.headers['payment-signature'] == null && req.headers['x-payment'] == null && req.headers.authorization == null) {
      this.take(this.unpaid, this.limits.unpaidPerMinute, req, 'unpaid write requests')
    }
  }

  private take (buckets: Map<string, Bucket>, perMinute: number, req: IncomingMessage, what: string): void {
    if (perMinute <= 0) return
    const ip = clientIp(req, this.proxies)
    const now = this.now()
    let b = buckets.get(ip)
    if (b == null) {
      if (buckets.size >= this.max) buckets.delete(buckets.keys().next().value as string)
      b = { tokens: perMinute, at: now }
    } else {
      buckets.delete(ip) // re-insert: Map order is then least recently seen first
      b.tokens = Math.min(perMinute, b.tokens + (now - b.at) * perMinute / 60_000)
      b.at = now
    }
    buckets.set(ip, b)
    if (b.tokens < 1) {
      const retry = Math.max(1, Math.ceil((1 - b.tokens) * 60 / perMinute))
      throw new HttpError(429, 'TOO_MANY_REQUESTS', `too many ${what} from this address (limit ${perMinute} per minute); retry in ${retry} s`, { 'retry-after': String(retry) })
    }
    b.tokens -= 1
  }
}
