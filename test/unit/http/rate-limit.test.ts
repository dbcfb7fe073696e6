/**
 * Rate limits per client address, with X-Forwarded-For believed only from
 * configured proxies; writes counted by what they turn out to be.
 */
import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { clientIp, clientKey } from '../../../src/http/client-ip.js'
import { RateLimiter } from '../../../src/http/rate-limit.js'
import { TooManyRequestsError } from '../../../src/kernel/errors.js'
import { errorAnswer } from '../../../src/http/error-catalog.js'

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

describe('clientKey', () => {
  it('counts an IPv4 address as itself and an IPv6 address by its /64', () => {
    expect(clientKey('198.51.100.7')).toBe('198.51.100.7')
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64')
    expect(clientKey('2001:db8:1:2:ffff:ffff:ffff:fffe')).toBe('2001:db8:1:2::/64')
    expect(clientKey('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(clientKey('::1')).toBe('0:0:0:0::/64')
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64')
    expect(clientKey('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64')
    expect(clientKey('2001:db8:1:3::1')).not.toBe(clientKey('2001:db8:1:2::1'))
  })
})

describe('RateLimiter', () => {
  it('limits unpaid writes and reads per client, refilling over time, with Retry-After', () => {
    let now = 0
    const rl = new RateLimiter({ unpaidPerMinute: 2, readsPerMinute: 3, trustedProxies: [] }, () => now)
    const a = (m: string, h: Record<string, string> = {}): IncomingMessage => req(m, '198.51.100.1', h)
    rl.admit(a('POST'))
    rl.admit(a('POST'))
    let err: unknown
    try { rl.admit(a('POST')) } catch (e) { err = e }
    expect(err).toBeInstanceOf(TooManyRequestsError)
    expect(errorAnswer(err).status).toBe(429)
    expect(errorAnswer(err).reason).toBe('TOO_MANY_REQUESTS')
    expect(Number(errorAnswer(err).headers['retry-after'])).toBeGreaterThanOrEqual(1)
    // another client has its own bucket
    rl.admit(req('POST', '198.51.100.2'))
    for (let i = 0; i < 3; i++) rl.admit(a('GET'))
    expect(() => { rl.admit(a('HEAD')) }).toThrow(/too many reads/)
    now += 30_000 // half a minute refills one unpaid write
    rl.admit(a('POST'))
    expect(() => { rl.admit(a('POST')) }).toThrow(/retry in/)
  })

  it('counts a write by what it turns out to be, not by its headers: only a paid one gets its unit back', () => {
    let now = 0
    const rl = new RateLimiter({ unpaidPerMinute: 3, readsPerMinute: 0, trustedProxies: [] }, () => now)
    const a = (h: Record<string, string> = {}): IncomingMessage => req('POST', '198.51.100.1', h)
    // headers alone change nothing: each of these is counted on arrival
    rl.admit(a({ 'payment-signature': 'garbage' })).done()
    rl.admit(a({ 'x-payment': 'x' })).done()
    const paid = rl.admit(a({ authorization: 'Bearer x' }))
    expect(() => rl.admit(a())).toThrow(/too many unpaid/)
    // the one that turned out paid gives its unit back (once)
    paid.refund()
    paid.refund()
    paid.done()
    rl.admit(a()).done()
    expect(() => rl.admit(a())).toThrow(/too many unpaid/)
    // DELETE and any other non-read method is a write
    const rl2 = new RateLimiter({ unpaidPerMinute: 1, readsPerMinute: 0, trustedProxies: [] }, () => 0)
    rl2.admit(req('DELETE', '198.51.100.3'))
    expect(() => rl2.admit(req('PUT', '198.51.100.3'))).toThrow(/too many unpaid/)
  })

  it('lets one request with a payment run ahead of an empty allowance (the paid retry of the last 402), one at a time, owed if unpaid', () => {
    let now = 0
    const rl = new RateLimiter({ unpaidPerMinute: 1, readsPerMinute: 0, trustedProxies: [] }, () => now)
    const a = (h: Record<string, string> = {}): IncomingMessage => req('POST', '198.51.100.4', h)
    rl.admit(a()).done() // the 402: the allowance is empty now
    const retry = rl.admit(a({ 'payment-signature': 'signed' }))
    // one at a time: a second one meanwhile is refused, with or without a payment
    expect(() => rl.admit(a({ 'payment-signature': 'another' }))).toThrow(/too many unpaid/)
    expect(() => rl.admit(a())).toThrow(/too many unpaid/)
    retry.refund() // it was paid
    retry.done()
    const forged = rl.admit(a({ 'payment-signature': 'forged' }))
    forged.done() // it turned out unpaid: the client owes it
    expect(() => rl.admit(a({ 'payment-signature': 'forged' }))).toThrow(/retry in 120 s/)
    now += 60_000 // pays the debt back, no more
    expect(() => rl.admit(a({ 'payment-signature': 'forged' }))).not.toThrow()
  })

  it('counts the addresses of one IPv6 /64 as one client', () => {
    const rl = new RateLimiter({ unpaidPerMinute: 2, readsPerMinute: 0, trustedProxies: [] }, () => 0)
    expect(() => rl.admit(req('POST', '2001:db8:1:2::1'))).not.toThrow()
    expect(() => rl.admit(req('POST', '2001:db8:1:2::2'))).not.toThrow()
    expect(() => rl.admit(req('POST', '2001:db8:1:2:ffff::3'))).toThrow(/too many unpaid/)
    // the next /64 is another client, with its own allowance
    expect(() => rl.admit(req('POST', '2001:db8:1:3::1'))).not.toThrow()
    expect(() => rl.admit(req('POST', '2001:db8:1:3::2'))).not.toThrow()
    expect(() => rl.admit(req('POST', '2001:db8:1:3::3'))).toThrow(/too many unpaid/)
  })

  it('keeps at most maxClients buckets', () => {
    const rl = new RateLimiter({ unpaidPerMinute: 1, readsPerMinute: 0, trustedProxies: [], maxClients: 2 })
    const admit = (from: string): (() => void) => () => { rl.admit(req('POST', from)) }
    expect(admit('192.0.2.1')).not.toThrow()
    expect(admit('192.0.2.2')).not.toThrow()
    // both buckets are kept while there is room: each client's allowance is spent
    expect(admit('192.0.2.1')).toThrow(/too many unpaid/)
    expect(admit('192.0.2.2')).toThrow(/too many unpaid/)
    // a third client evicts the least recently seen bucket (.1), not the newest
    expect(admit('192.0.2.3')).not.toThrow()
    expect(admit('192.0.2.2')).toThrow(/too many unpaid/)
    expect(admit('192.0.2.1')).not.toThrow() // a fresh bucket again (and .3's is evicted now)
    expect(admit('192.0.2.3')).not.toThrow()
    // reads with readsPerMinute 0 are unlimited and keep no bucket
    expect(() => { for (let i = 0; i < 100; i++) rl.admit(req('GET', '192.0.2.9')) }).not.toThrow()
  })

  it('lets go of the buckets of clients gone for two minutes (full again) as new clients come, not only at the bound', () => {
    let now = 0
    const rl = new RateLimiter({ unpaidPerMinute: 1, readsPerMinute: 5, trustedProxies: [] }, () => now)
    // a passing population: 1000 IPv6 /64s, one write and one read each
    for (let i = 0; i < 1000; i++) {
      rl.admit(req('POST', `2001:db8:${i}::1`))
      rl.admit(req('GET', `2001:db8:${i}::1`))
    }
    expect(rl.clients()).toEqual({ unpaid: 1000, reads: 1000 })
    now += 60_000
    const staying = req('POST', '198.51.100.1')
    rl.admit(staying)
    expect(rl.clients().unpaid).toBe(1001) // a minute: a bucket may still be owed
    now += 60_000
    rl.admit(req('POST', '198.51.100.2'))
    rl.admit(req('GET', '198.51.100.2'))
    expect(rl.clients()).toEqual({ unpaid: 2, reads: 1 }) // before: 1002 and 1001, kept up to maxClients (100,000)
    // the one seen a minute ago keeps its (spent) allowance
    expect(() => { rl.admit(staying) }).not.toThrow()
    expect(() => { rl.admit(staying) }).toThrow(/too many unpaid/)
    // one admitted ahead of an empty allowance and still in flight keeps its bucket
    const borrower = (): IncomingMessage => req('POST', '198.51.100.3', { authorization: 'Bearer x' })
    rl.admit(borrower())
    const inFlight = rl.admit(borrower())
    now += 5 * 60_000
    rl.admit(req('POST', '198.51.100.4'))
    expect(rl.clients().unpaid).toBe(2)
    inFlight.done()
    now += 5 * 60_000
    rl.admit(req('POST', '198.51.100.5'))
    expect(rl.clients().unpaid).toBe(1)
  })

  it('leaves the paths admitted by their route to it: admitWrite and admitRead take from the same buckets as admit', () => {
    const limiter = new RateLimiter({ unpaidPerMinute: 2, readsPerMinute: 2, trustedProxies: [], admittedByRoute: ['/mcp'] }, () => 0)
    const post = (url: string): IncomingMessage => Object.assign(req('POST', '198.51.100.7'), { url })
    // not counted on arrival, whatever it is
    for (let i = 0; i < 5; i++) limiter.admit(post('/mcp?x=1')).done()
    // the route's writes and the client's other writes share one allowance; a refund gives a unit back
    limiter.admitWrite(post('/mcp'), false).refund()
    limiter.admitWrite(post('/mcp'), false)
    limiter.admit(post('/pins'))
    expect(() => limiter.admitWrite(post('/mcp'), false)).toThrow(TooManyRequestsError)
    expect(() => limiter.admit(post('/pins'))).toThrow(TooManyRequestsError)
    // one call with credentials may run ahead of the empty allowance, one at a time
    const ahead = limiter.admitWrite(post('/mcp'), true)
    expect(() => limiter.admitWrite(post('/mcp'), true)).toThrow(TooManyRequestsError)
    ahead.done()
    // reads: their own allowance, shared with GETs
    limiter.admitRead(post('/mcp'))
    limiter.admit(req('GET', '198.51.100.7'))
    expect(() => limiter.admitRead(post('/mcp'))).toThrow(TooManyRequestsError)
  })
})
