/**
 * The subdomain gateway's reading of Host, X-Forwarded-Host and X-Forwarded-Proto
 * (src/http/gateway/site-host.ts): what names a content origin, the domain or neither,
 * and whose forwarded headers are believed.
 */
import type { IncomingMessage } from 'node:http'
import { base36 } from 'multiformats/bases/base36'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256, sha512 } from 'multiformats/hashes/sha2'
import { describe, expect, it } from 'vitest'
import { routeHost, siteUrlFor, type HostRoute, type SiteHosts } from '../../../src/http/gateway/site-host.js'

const cid = CID.createV1(raw.code, await sha256.digest(new TextEncoder().encode('site')))
const long = CID.createV1(raw.code, await sha512.digest(new TextEncoder().encode('site')))
const hosts = (proxies: string[] = []): SiteHosts => ({ domain: 'example.net', trustedProxies: new Set(proxies) })
const req = (headers: Record<string, string>, peer = '203.0.113.9'): IncomingMessage =>
  ({ headers, socket: { remoteAddress: peer } }) as unknown as IncomingMessage
const route = (headers: Record<string, string>, h = hosts(), peer?: string, path = '/a?b=1'): HostRoute =>
  routeHost(req(headers, peer), new URL(path, 'http://x'), h)

describe('routeHost', () => {
  it('names a content origin by its base32 label, with or without a port or a final dot', () => {
    for (const host of [`${cid}.ipfs.example.net`, `${cid}.ipfs.example.net:8080`, `${cid}.ipfs.EXAMPLE.net.`]) {
      const r = route({ host })
      expect(r.kind, host).toBe('site')
      if (r.kind === 'site') expect(r.root.equals(cid)).toBe(true)
    }
  })

  it('moves another encoding of the CID to its base32 label, keeping port, path and query', () => {
    expect(route({ host: `${cid.toString(base36)}.ipfs.example.net:8080` })).toEqual({ kind: 'moved', location: `http://${cid}.ipfs.example.net:8080/a?b=1` })
  })

  it('is the domain for the domain itself, and nothing for other hosts', () => {
    expect(route({ host: 'example.net:80' }).kind).toBe('domain')
    expect(route({ host: '127.0.0.1:80' }).kind).toBe('other')
    expect(route({ host: 'notexample.net' }).kind).toBe('other')
    expect(route({ host: 'example.net.evil.com' }).kind).toBe('other')
    expect(route({ host: 'api.example.net' }).kind).toBe('other')
    expect(route({ host: 'a.b.example.net' }).kind).toBe('other')
    expect(route({}).kind).toBe('other')
  })

  it('refuses names under the domain that hold no content path (400)', () => {
    for (const host of [`${long}.ipfs.example.net`, 'k51x.ipns.example.net', `z.${cid}.ipfs.example.net`, 'nope.ipfs.example.net']) {
      expect(() => route({ host }), host).toThrow(expect.objectContaining({ name: 'InvalidInputError' }))
    }
  })

  it('believes X-Forwarded-Host and X-Forwarded-Proto from trusted proxies only', () => {
    const fwd = { host: 'example.net', 'x-forwarded-host': 'other.org', 'x-forwarded-proto': 'https' }
    expect(route(fwd)).toEqual({ kind: 'domain', at: { proto: 'http', host: 'example.net' } })
    expect(route(fwd, hosts(['10.0.0.1']), '::ffff:10.0.0.1')).toEqual({ kind: 'domain', at: { proto: 'https', host: 'other.org' } })
    // the proxy may carry a content origin in X-Forwarded-Host, whatever Host says
    const r = route({ host: 'internal:8080', 'x-forwarded-host': `${cid}.ipfs.example.net` }, hosts(['10.0.0.1']), '10.0.0.1')
    expect(r.kind).toBe('site')
    // a client claiming a content origin in X-Forwarded-Host is not believed
    expect(route({ host: '127.0.0.1', 'x-forwarded-host': `${cid}.ipfs.example.net` }).kind).toBe('other')
  })
})

describe('siteUrlFor', () => {
  it('gives the origin with the public URL\'s scheme and port, none for a CID too long for a label', () => {
    expect(siteUrlFor(cid, 'https://pins.example.net', 'example.net')).toBe(`https://${cid}.ipfs.example.net/`)
    expect(siteUrlFor(cid, 'http://127.0.0.1:8080', 'localhost')).toBe(`http://${cid}.ipfs.localhost:8080/`)
    expect(siteUrlFor(long, 'https://pins.example.net', 'example.net')).toBeUndefined()
  })
})
