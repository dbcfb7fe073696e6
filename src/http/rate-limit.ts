/**
 * Per-client rate limits (token buckets keyed by client address, IPv6 by /64):
 *   - reads: GET, HEAD and OPTIONS (gateway, owner API);
 *   - unpaid writes: every other request, counted by what it turns out to
 *     be, not by the headers it carries. Each takes one unit when it arrives
 *     (so an empty allowance answers 429 before any work, however many such
 *     requests run at once) and gets it back only once it has turned out
 *     paid (a verified payment) or authorized (a valid token that needs no
 *     payment). A 402, an invalid payment, an invalid token, a sign-in
 *     challenge: all unpaid. A valid payment is its own limit.
 *     So that the paid retry of a client's last 402 is not refused, one
 *     request that carries a payment or a token may run ahead of an empty
 *     allowance, one at a time per client; if it turns out unpaid, the
 *     client owes its unit (the allowance goes below zero).
 * Over the limit: 429 with Retry-After, in the spec's error shape. Memory is
 * bounded: at most `maxClients` buckets, the idlest dropped first. And a
 * bucket unused for FULL_AFTER_MS is full again, the same as none: such
 * buckets are dropped as new clients come, so a client population
 * that passed by (an attacker's IPv6 /64s, ~110 bytes a bucket) is not kept
 * at the bound for the life of the process.
 */
import type { IncomingMessage } from 'node:http'
import { TooManyRequestsError } from '../kernel/errors.js'
import { clientIp, clientKey } from './client-ip.js'

export interface RateLimits {
  /** unpaid writes per client per minute (0 = unlimited) */
  unpaidPerMinute: number
  /** reads per client per minute (0 = unlimited) */
  readsPerMinute: number
  trustedProxies: string[]
  maxClients?: number
  /**
   * POST paths whose route admits each request itself, once it knows what the request is (the MCP
   * endpoint: one path for reads and writes): `admitWrite` or `admitRead`, not `admit`.
   */
  admittedByRoute?: string[]
}

interface Bucket {
  tokens: number
  at: number
  /** a request admitted ahead of an empty allowance is in flight */
  lent: boolean
}

/** What an admitted request holds: `refund()` returns its unit once it has turned out paid; `done()` when it ends. */
export interface Admission {
  refund(): void
  done(): void
}

const NOTHING: Admission = { refund () {}, done () {} }

/** unused this long, any bucket is full again (from the most it can owe, one unit, at one unit a minute or more) */
const FULL_AFTER_MS = 2 * 60_000

export class RateLimiter {
  private readonly unpaid = new Map<string, Bucket>()
  private readonly reads = new Map<string, Bucket>()
  private readonly proxies: ReadonlySet<string>
  private readonly max: number

  private readonly byRoute: ReadonlySet<string>

  constructor (private readonly limits: RateLimits, private readonly now: () => number = Date.now) {
    this.proxies = new Set(limits.trustedProxies)
    this.max = limits.maxClients ?? 100_000
    this.byRoute = new Set(limits.admittedByRoute ?? [])
  }

  /** the last address's key, kept: a keep-alive connection asks again and again */
  private lastIp = ''
  private lastKey = ''
  private keyOf (ip: string): string {
    if (ip !== this.lastIp) {
      this.lastKey = clientKey(ip)
      this.lastIp = ip
    }
    return this.lastKey
  }

  /** buckets kept (clients seen within FULL_AFTER_MS, about) */
  clients (): { unpaid: number, reads: number } {
    return { unpaid: this.unpaid.size, reads: this.reads.size }
  }

  /** Admits a request or throws a TooManyRequestsError when it is over its client's limit. `client`: its address, if known already (clientIp). */
  admit (req: IncomingMessage, client?: string): Admission {
    const method = req.method ?? 'GET'
    if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') {
      this.take(this.reads, this.limits.readsPerMinute, req, 'reads', false, client)
      return NOTHING
    }
    if (this.byRoute.size > 0 && this.byRoute.has(pathOf(req.url ?? ''))) return NOTHING
    const credentials = req.headers['payment-signature'] != null || req.headers['x-payment'] != null || req.headers.authorization != null
    return this.admitWrite(req, credentials, client)
  }

  /**
   * Admits a write (the unpaid-write limit): `credentials`, it carries a payment or a token (it may
   * run ahead of an empty allowance, one at a time). Throws a TooManyRequestsError over the limit.
   */
  admitWrite (req: IncomingMessage, credentials: boolean, client?: string): Admission {
    const perMinute = this.limits.unpaidPerMinute
    const taken = this.take(this.unpaid, perMinute, req, 'unpaid write requests', credentials, client)
    if (taken == null) return NOTHING
    const { bucket, lent } = taken
    let held = true
    let open = true
    return {
      refund: () => {
        if (!held) return
        held = false
        bucket.tokens = Math.min(perMinute, bucket.tokens + 1)
      },
      done: () => {
        if (!open) return
        open = false
        if (lent) bucket.lent = false
      }
    }
  }

  /** Takes one unit of the client's read limit (a request admitted by its route that reads); throws over it. */
  admitRead (req: IncomingMessage, client?: string): void {
    this.take(this.reads, this.limits.readsPerMinute, req, 'reads', false, client)
  }

  private take (buckets: Map<string, Bucket>, perMinute: number, req: IncomingMessage, what: string, mayBorrow: boolean, client?: string): { bucket: Bucket, lent: boolean } | undefined {
    if (perMinute <= 0) return undefined
    const key = this.keyOf(client ?? clientIp(req, this.proxies))
    const now = this.now()
    let b = buckets.get(key)
    if (b == null) {
      // least recently seen first: drop those that are full again (one in flight ahead of its allowance stays)
      for (const [k, old] of buckets) {
        if (now - old.at < FULL_AFTER_MS || old.lent) break
        buckets.delete(k)
      }
      if (buckets.size >= this.max) buckets.delete(buckets.keys().next().value as string)
      b = { tokens: perMinute, at: now, lent: false }
    } else {
      buckets.delete(key) // re-insert: Map order is then least recently seen first
      b.tokens = Math.min(perMinute, b.tokens + (now - b.at) * perMinute / 60_000)
      b.at = now
    }
    buckets.set(key, b)
    if (b.tokens >= 1) {
      b.tokens -= 1
      return { bucket: b, lent: false }
    }
    if (mayBorrow && !b.lent && b.tokens >= 0) {
      b.tokens -= 1
      b.lent = true
      return { bucket: b, lent: true }
    }
    const retry = Math.max(1, Math.ceil((1 - b.tokens) * 60 / perMinute))
    throw new TooManyRequestsError(`too many ${what} from this address (limit ${perMinute} per minute); retry in ${retry} s`, retry)
  }
}

/** a request target's path (before any query) */
function pathOf (url: string): string {
  const q = url.indexOf('?')
  return q < 0 ? url : url.slice(0, q)
}
