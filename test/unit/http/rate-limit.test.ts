/**
 * Rate limits per client address, with X-Forwarded-For believed only from
 * configured proxies.
 */
import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { clientIp } from '../../../src/http/client-ip.js'
import { RateLimiter } from '../../../src/http/rate-limit.js'
import { HttpError } from '../../../src/errors.js'

const req = (method: string, from: string, headers: Record<string, string> = {}): IncomingMessage =>
  ({ method, headers, socket: { remoteAddress: from } }) as unknown as IncomingMessage

describe('clientIp', () => {
  it('ignores X-Forwarded-For unless the peer is a trusted proxy', () => {
    const spoof = req('GET', '203.0.113.9', { 'x-forwarded-for': '1.2.3.4' })
    expect(clientIp(spoof, new Set())).toBe('203.0.113.9')
    expect(clientIp(spoof, new Set(['10.0.0.1']))).toBe('203.0.113.9')
    const proxied = req('GET', '::ffff:10.0.0.1', { 'x-forwarded-for': '1.2.3.4, 198.51.100.7, 10.0.0.2' })
    expect(clientIp(proxied, new Set(['10.0.0.1', '10.0.0.2']))).toBe('198.51.100.7')
  })
})

describe('RateLimiter', () => {
  it('limits unpaid writes and reads per client, refilling over time, with Retry-After', () => {
    let now = 0
    const rl = new RateLimiter({ unpaidPerMinute: 2, readsPerMinute: 3, trustedProxies: [] }, () => now)
    const a = (m: string, h: Record<string, string> = {}): IncomingMessage => req(m, '198.51.100.1', h)
    rl.check(a('POST'))
    rl.check(a('POST'))
    let err: unknown
    try { rl.check(a('POST')) } catch (e) { err = e }
    expect(err).toBeInstanceOf(HttpError)
    expect((err as HttpError).status).toBe(429)
    expect((err as HttpError).reason).toBe('TOO_MANY_REQUESTS')
    expect(Number((err as HttpError).headers['retry-after'])).toBeGreaterThanOrEqual(1)
    // paid or authenticated writes are not counted; another client has its own bucket
    rl.check(a('POST', { 'payment-signature': 'x' }))
    rl.check(a('POST', { authorization: 'Bearer x' }))
    rl.check(req('POST', '198.51.100.2'))
    for (let i = 0; i < 3; i++) rl.check(a('GET'))
    expect(() => { rl.check(a('HEAD')) }).toThrow(/too many reads/)
    now += 30_000 // half a minute refills one unpaid write
    rl.check(a('POST'))
    expect(() => { rl.check(a('POST')) }).toThrow(/retry in/)
  })

  it('keeps at most maxClients buckets', () => {
    const rl = new RateLimiter({ unpaidPerMinute: 1, readsPerMinute: 0, trustedProxies: [], maxClients: 2 })
    rl.check(req('POST', '192.0.2.1'))
    rl.check(req('POST', '192.0.2.2'))
    rl.check(req('POST', '192.0.2.3')) // evicts .1
    rl.check(req('POST', '192.0.2.1')) // a fresh bucket again
    for (let i = 0; i < 100; i++) rl.check(req('GET', '192.0.2.9')) // reads unlimited
  })
})
