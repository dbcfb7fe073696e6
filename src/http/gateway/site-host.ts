/**
 * The subdomain gateway's reading of the Host header (subdomain-gateway spec):
 * with a gateway domain `example.net` configured,
 *
 *   - `{cid}.ipfs.example.net` is a content origin: its paths are paths under
 *     that root (a website in an origin of its own). The label must be the
 *     CID's canonical form, CIDv1 in base32 (lowercase): another encoding of a
 *     CID is answered with a redirect to it; a CID whose base32 form is longer
 *     than a DNS label (63 characters) is a 400, as the spec says until a
 *     longer encoding is agreed.
 *   - `example.net` itself is the API and the path gateway, whose `/ipfs/{cid}`
 *     requests move to the content origin (a 301).
 *   - `x.ipns.example.net` and `a.b.ipfs.example.net` are a 400: no content path
 *     can be made of them (this gateway serves /ipfs/).
 *   - any other host (an address, another name, `api.example.net`) is not the
 *     subdomain gateway's.
 *
 * X-Forwarded-Host and X-Forwarded-Proto are believed only from trusted proxies.
 */
import type { IncomingMessage } from 'node:http'
import type { CID } from 'multiformats/cid'
import { base32 } from 'multiformats/bases/base32'
import { InvalidInputError } from '../../kernel/errors.js'
import { decodeCid } from '../../ipfs/cid-text.js'
import { normalize } from '../client-ip.js'
import { truncate } from './request.js'

/** the longest DNS label (RFC 2181 section 11) */
export const MAX_DNS_LABEL = 63

export interface SiteHosts {
  /** the gateway domain, lowercase, without a port */
  domain: string
  /** reverse proxies whose X-Forwarded-Host / X-Forwarded-Proto are believed */
  trustedProxies: ReadonlySet<string>
}

/** where the client reached us: scheme and host (with its port, if any) as the client wrote them */
export interface PublicHost { proto: 'http' | 'https', host: string }

export type HostRoute =
  | { kind: 'other' }
  | { kind: 'domain', at: PublicHost }
  | { kind: 'site', root: CID, at: PublicHost }
  /** a content origin named by a non-canonical label: `location` is the canonical one */
  | { kind: 'moved', location: string }

const OTHER: HostRoute = Object.freeze({ kind: 'other' })

/** the host a request reached (trusted proxies may say another), lowercase, and its scheme */
export function publicHost (req: IncomingMessage, hosts: SiteHosts): PublicHost {
  let host = req.headers.host ?? ''
  let proto: 'http' | 'https' = 'http'
  if (hosts.trustedProxies.size > 0 && hosts.trustedProxies.has(normalize(req.socket.remoteAddress ?? ''))) {
    const fwdHost = first(req.headers['x-forwarded-host'])
    if (fwdHost != null && fwdHost !== '') host = fwdHost
    if (first(req.headers['x-forwarded-proto'])?.toLowerCase() === 'https') proto = 'https'
  }
  return { proto, host: host.toLowerCase() }
}

/** the host without its port (IPv6 literals keep their brackets) */
export function hostname (host: string): string {
  const colon = host.lastIndexOf(':')
  return colon > host.lastIndexOf(']') ? host.slice(0, colon) : host
}

/** What the Host of `req` names under `hosts.domain`. Throws a 400 for a name under the domain that names no content. */
export function routeHost (req: IncomingMessage, url: URL, hosts: SiteHosts): HostRoute {
  const raw = req.headers.host
  // the cheap test first: most requests on a serve without sites behind a proxy name no subdomain
  if (raw == null || (!raw.toLowerCase().includes(hosts.domain) && hosts.trustedProxies.size === 0)) return OTHER
  const at = publicHost(req, hosts)
  const name = hostname(at.host).replace(/\.$/, '')
  if (!name.endsWith(`.${hosts.domain}`)) {
    // the domain itself, or (spec: X-Forwarded-Host) the domain a trusted proxy says the client reached
    return name === hosts.domain || hostname(raw.toLowerCase()).replace(/\.$/, '') === hosts.domain ? { kind: 'domain', at } : OTHER
  }
  const sub = name.slice(0, -(hosts.domain.length + 1))
  // other names under the domain (api.example.net) are not the gateway's
  if (sub.endsWith('.ipns')) throw new InvalidInputError('this gateway serves /ipfs/ content only, not IPNS names or DNSLink')
  if (!sub.endsWith('.ipfs')) return OTHER
  const label = sub.slice(0, -'.ipfs'.length)
  if (label.includes('.')) throw new InvalidInputError(`${truncate(name, 120)} names no content: content origins are {cid}.ipfs.${hosts.domain}`)
  let root: CID
  try {
    root = decodeCid(label)
  } catch {
    throw new InvalidInputError(`not a valid CID: ${truncate(label)} (content origins are {cidv1-base32}.ipfs.${hosts.domain})`)
  }
  const canonical = siteLabel(root)
  if (canonical !== label) {
    return { kind: 'moved', location: siteUrl(root, at, hosts.domain, `${url.pathname}${url.search}`) }
  }
  return { kind: 'site', root, at }
}

/** The CID's DNS label: CIDv1, base32. A 400 when longer than a label may be. */
export function siteLabel (cid: CID): string {
  const label = cid.toV1().toString(base32)
  if (label.length > MAX_DNS_LABEL) {
    throw new InvalidInputError(`${truncate(label, 80)} is ${label.length} characters in base32, longer than a DNS label (${MAX_DNS_LABEL}): it has no subdomain origin (a CID with a shorter hash, e.g. sha2-256, has)`)
  }
  return label
}

/** `{proto}://{cid}.ipfs.{domain}{:port}{pathAndQuery}`, the domain as the client reached it (`at`) */
export function siteUrl (cid: CID, at: PublicHost, domain: string, pathAndQuery: string): string {
  const name = hostname(at.host)
  const port = at.host.slice(name.length)
  // the client reached the domain, or an origin under it: keep what it wrote after the domain
  const base = name === domain || name.endsWith(`.${domain}`) ? domain : name
  return `${at.proto}://${siteLabel(cid)}.ipfs.${base}${port}${pathAndQuery === '' ? '/' : pathAndQuery}`
}

/**
 * The content origin of `cid` as this service's clients reach it: the scheme and port of its public
 * URL, the gateway domain; undefined for a CID too long for a DNS label.
 */
export function siteUrlFor (cid: CID, publicUrl: string, domain: string): string | undefined {
  const u = new URL(publicUrl)
  try {
    return siteUrl(cid, { proto: u.protocol === 'https:' ? 'https' : 'http', host: `${domain}${u.port === '' ? '' : `:${u.port}`}` }, domain, '/')
  } catch {
    return undefined
  }
}

/** `{scheme}://{cid}.ipfs.{domain}{:port}/`: where content origins are, as the agent card says */
export function siteOriginTemplate (publicUrl: string, domain: string): string {
  const u = new URL(publicUrl)
  return `${u.protocol}//{cid}.ipfs.${domain}${u.port === '' ? '' : `:${u.port}`}/`
}

function first (h: string | string[] | undefined): string | undefined {
  const v = Array.isArray(h) ? h[0] : h
  return v?.split(',')[0]?.trim()
}
