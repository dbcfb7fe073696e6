/**
 * The HTTP gateway for content this node holds: GET/HEAD /ipfs/{cid}[/{path}]
 * (path gateway: deserialized UnixFS files and directories, raw blocks) and
 * the trustless gateway (?format=raw, ?format=car with dag-scope and
 * entity-bytes). Local only, unless the operator turns on the network
 * read-through (--gateway-network-timeout, see ipfs/network-read.ts).
 *
 * Supported response formats: deserialized (UnixFS files/directories, raw and
 * identity blocks as bytes; dag-json/dag-cbor/json/cbor blocks as their bytes
 * with their media type), application/vnd.ipld.raw, application/vnd.ipld.car
 * (version=1; order=dfs, unk accepted; dups=y|n), and
 * application/vnd.ipld.dag-json / dag-cbor, application/json / cbor for blocks
 * of that very codec (no conversion; 406 otherwise). Not supported: TAR (406),
 * IPNS records (400: /ipfs only).
 *
 * Multi-range requests get the whole entity with 200 (see gateway/range.ts).
 * A 206 carries the same ETag as the 200 (RFC 9110: the ETag names the
 * selected representation, of which the 206 is a part).
 */
import type { CID } from 'multiformats/cid'
import type { Blockstore } from 'interface-blockstore'
import type { IncomingMessage } from 'node:http'
import { releaseHandedOver } from '../../runtime/buffers.js'
import { InvalidInputError, NotFoundError, NotHeldError, OperationNotAllowedError, TooManyRequestsError } from '../../kernel/errors.js'
import { isAnswered } from '../error-catalog.js'
import {
  BlockMissingError, CODEC_CBOR, CODEC_DAG_CBOR, CODEC_DAG_JSON, CODEC_DAG_PB, CODEC_JSON, CODEC_RAW,
  ContentNotFoundError, InvalidContentError,
  findChild, hasBlock, isIdentity, listDirectory, loadEntry, piecesLength, readBlockPieces, readBlockRange, readFile, resolvePath,
  type DirectoryEntry, type FileEntry, type LocalBlockstore
} from '../../ipfs/content.js'
import { carStream, resolveEntityBytes, type CarPlan } from '../../ipfs/content-car.js'
import { SNIFF_BYTES, contentDisposition, detectContentType, isPassiveType } from '../gateway/content-type.js'
import { DIR_LISTING_CSP, DIR_LISTING_VERSION, renderListing } from '../gateway/dir-listing.js'
import { Sender, pump, responseSignal } from '../gateway/pump.js'
import { GatewayQuery, notAcceptable, parseCid, parseGatewayRequest, splitContentPath, truncate, type GatewayRequest } from '../gateway/request.js'
import {
  baseHeaders, contentLocation, decideBytes, etagMatches, mediaTypeOf, paramsHash, sendBytes, sendNotModified,
  type ByteDecision, type Headers
} from '../gateway/respond.js'
import { MAX_REDIRECTS_BYTES, matchRedirect, parseRedirects, RedirectsCache, RedirectsFileError, type RedirectRule } from '../gateway/redirects.js'
import { routeHost, siteUrl, type PublicHost, type SiteHosts } from '../gateway/site-host.js'
import type { Handler, RequestContext, Router } from '../router.js'
import type { StreamSlots } from '../stream-slots.js'
import { goneDenied } from '../../service/serving/denials.js'
import type { Refusal } from '../../service/serving/serve-policy.js'
import { header, json, operation, parameterKey, path, ref, schema, type Obj, type PathItems } from '../openapi-parts.js'

export interface GatewayDeps {
  /** the blocks held here (IpfsNode.blockstore: the block backend, on disk or in the bucket), never the network */
  blockstore: Pick<Blockstore, 'get' | 'has'>
  /**
   * may this root CID be served? (service/serving/serve-policy.ts, the policy bitswap
   * follows too: live pins / anything local, denials first); false → 404 fast.
   * Called with the CID of the request path (never with blocks reached under it).
   * Note: trustless clients (@helia/verified-fetch, Helia's gateway broker) ask
   * for EVERY block by its own CID (/ipfs/{block}?format=raw) with no hint of
   * the root it belongs to, so a policy that admits only pinned root CIDs
   * makes this gateway useless to them beyond the root block.
   */
  isServable(root: CID): boolean | Promise<boolean>
  /**
   * why the root, or the path under it (segments joined by '/', '' for the
   * root itself), is denied (service/serving/denials.ts); a refusal → 410 Gone.
   * Blocks reached under the root are held to the same denials by the
   * blockstore the daemon passes (service/serving/denials.ts refusingDenied).
   */
  refusal?(root: CID, path: string): Refusal | undefined
  /** serve HTML/SVG/JS/XML etc. inline instead of as attachment (operator opt-in); default false */
  allowActiveContent?: boolean
  /** GETs under way per client at most (../stream-slots.ts); past it 429. Absent: unlimited */
  streams?: { slots: StreamSlots, clientOf(req: IncomingMessage): string }
  /**
   * the subdomain gateway (../gateway/site-host.ts): content origins `{cid}.ipfs.{domain}`, where
   * active content (HTML, scripts) is served inline and `_redirects` files are followed; `/ipfs/{cid}`
   * on the domain itself moves there (301). Absent: the path gateway alone.
   */
  sites?: SiteHosts
}

/** a content origin being served: its root, where the client reached it, and the parsed `_redirects` files */
interface Site { root: CID, at: PublicHost, domain: string, redirects: RedirectsCache }

export function gatewayRoutes (router: Router, deps: GatewayDeps): void {
  const handle = async (ctx: RequestContext, site?: Site): Promise<void> => {
    // every answer, error bodies (JSON) too: make sure nothing sniffs them into something else
    ctx.res.setHeader('x-content-type-options', 'nosniff')
    const streams = deps.streams
    if (streams != null && ctx.req.method === 'GET') {
      const client = streams.clientOf(ctx.req)
      if (!streams.slots.take(client)) {
        throw new TooManyRequestsError(`this address has ${streams.slots.max} gateway responses under way, the most it may have at once; retry when one has ended`, 1)
      }
      ctx.res.once('close', () => { streams.slots.give(client) })
    }
    await serveGateway(ctx, deps, site)
  }
  router.add('GET', '/ipfs/*', async (ctx) => { await handle(ctx) })
  const sites = deps.sites
  if (sites == null) return
  const redirects = new RedirectsCache()
  router.byHost({
    pattern: 'site /*',
    route: (req, url): Handler | undefined => {
      const host = routeHost(req, url, sites)
      switch (host.kind) {
        case 'other': return undefined
        case 'moved': return (ctx) => { redirect(ctx, 301, host.location) }
        case 'domain': {
          // the path gateway's content paths move to their content origin (the root CID checked, the rest after the move)
          if (!url.pathname.startsWith('/ipfs/') || (req.method !== 'GET' && req.method !== 'HEAD')) return undefined
          const { cidText } = splitContentPath(url.pathname)
          if (cidText === '') return undefined // /ipfs/?uri=… (the URI router) and the path gateway's 400
          const root = parseCid(cidText)
          const rest = url.pathname.slice('/ipfs/'.length + cidText.length)
          return (ctx) => { redirect(ctx, 301, siteUrl(root, host.at, sites.domain, `${rest}${url.search}`)) }
        }
        case 'site': {
          const site: Site = { root: host.root, at: host.at, domain: sites.domain, redirects }
          return async (ctx) => {
            const method = ctx.req.method
            if (method === 'OPTIONS') {
              ctx.res.writeHead(204, { allow: 'GET, HEAD, OPTIONS', 'content-length': '0' })
              ctx.res.end()
              return
            }
            if (method !== 'GET' && method !== 'HEAD') throw new OperationNotAllowedError(`${method ?? ''} is not supported on a content origin; use GET, HEAD, OPTIONS`, 'GET, HEAD, OPTIONS')
            await handle(ctx, site)
          }
        }
      }
    }
  })
}

function redirect (ctx: RequestContext, status: number, location: string): void {
  ctx.res.writeHead(status, { location, 'content-length': '0', 'cache-control': 'public, max-age=29030400, immutable' })
  ctx.res.end()
}

/** the largest identity CID (inline bytes) served: the limit Kubo/boxo's verifcid sets */
export const MAX_IDENTITY_BYTES = 128

/** codecs whose blocks a deserialized response returns as-is, with this media type */
const TYPED_BLOCKS: Record<number, string> = {
  [CODEC_DAG_JSON]: 'application/vnd.ipld.dag-json',
  [CODEC_DAG_CBOR]: 'application/vnd.ipld.dag-cbor',
  [CODEC_JSON]: 'application/json',
  [CODEC_CBOR]: 'application/cbor'
}

const FORMAT_CODECS: Record<'dag-json' | 'dag-cbor' | 'json' | 'cbor', number> = {
  'dag-json': CODEC_DAG_JSON,
  'dag-cbor': CODEC_DAG_CBOR,
  json: CODEC_JSON,
  cbor: CODEC_CBOR
}

/** codecs whose links we can follow for dag-scope=all */
const TRAVERSABLE = new Set([CODEC_DAG_PB, CODEC_RAW, CODEC_DAG_CBOR, CODEC_DAG_JSON, CODEC_JSON, CODEC_CBOR])

interface Ctx {
  rc: RequestContext
  deps: GatewayDeps
  bs: LocalBlockstore
  gw: GatewayRequest
  signal: AbortSignal
  headers: Headers
  head: boolean
  /** served on its content origin (subdomain gateway) */
  site: Site | undefined
  /** active content (HTML, SVG, scripts) inline: on a content origin, or where the operator allows it */
  inline: boolean
}

async function serveGateway (rc: RequestContext, deps: GatewayDeps, site?: Site): Promise<void> {
  const { req, res, url } = rc
  if (site == null && url.search !== '' && (url.pathname === '/ipfs/' || url.pathname === '/ipfs')) {
    const uri = url.searchParams.get('uri')
    if (uri != null) { routeUri(rc, uri); return }
  }
  // on a content origin the URL's path is a path under the Host's root: the content path /ipfs/{root}{path}
  const contentUrl = site == null ? url : new URL(`/ipfs/${site.root.toString()}${url.pathname}${url.search}`, url)
  const gw = parseGatewayRequest(contentUrl, req.headers.accept)
  const bs = deps.blockstore

  // a content origin is the site's own: its service worker is scoped to it
  if (site == null && req.headers['service-worker'] === 'script' && (gw.segments.length === 0 || deps.allowActiveContent !== true)) {
    throw new InvalidInputError('service worker registration is not allowed here')
  }

  // an identity CID is content nobody pinned or paid for, in the URL itself: only small ones
  if (isIdentity(gw.root) && gw.root.multihash.size > MAX_IDENTITY_BYTES) {
    throw new InvalidInputError(`${truncate(gw.root.toString(), 40)} is an identity CID carrying ${gw.root.multihash.size} bytes; this gateway serves identity CIDs of at most ${MAX_IDENTITY_BYTES} bytes`)
  }
  // policy first, with no I/O beyond the caller's own check: denied content is gone (410), not unknown
  const refused = deps.refusal?.(gw.root, gw.segments.join('/'))
  if (refused != null) throw goneDenied(`/ipfs/${truncate([gw.root.toString(), ...gw.segments].join('/'), 200)}`, refused)
  if (!(await deps.isServable(gw.root))) {
    throw new NotFoundError(`${gw.root} is not served by this gateway`)
  }
  if (!(await hasBlock(bs, gw.root))) {
    if (/\bonly-if-cached\b/i.test(req.headers['cache-control'] ?? '')) {
      throw new NotHeldError(`${gw.root} is not held by this node`)
    }
    throw new NotFoundError(`${gw.root} is not held by this node`)
  }

  const signal = responseSignal(res)
  const headers = baseHeaders(contentUrl)
  const location = contentLocation(gw, url)
  if (location != null) headers['content-location'] = location
  const ctx: Ctx = { rc, deps, bs, gw, signal, headers, head: req.method === 'HEAD', site, inline: site != null || deps.allowActiveContent === true }

  try {
    switch (gw.format) {
      case 'raw': await serveRawBlock(ctx); return
      case 'car': await serveCar(ctx); return
      case 'dag-json': case 'dag-cbor': case 'json': case 'cbor': await serveTypedBlock(ctx, gw.format); return
      default: await serveDeserialized(ctx)
    }
  } catch (err) {
    if (signal.aborted && !isAnswered(err)) return // the client left; nothing to answer
    throw err
  }
}


// ---- trustless: raw block -------------------------------------------------

async function serveRawBlock (ctx: Ctx): Promise<void> {
  const { gw, rc } = ctx
  if (gw.segments.length > 0) {
    throw new InvalidInputError('a raw block is requested by CID alone: /ipfs/{cid}?format=raw (use ?format=car for paths)')
  }
  // any codec will do: the block's bytes are the answer, in the pieces it was read in
  const pieces = await readBlockPieces(ctx.bs, gw.root, { signal: ctx.signal })
  let sent = false
  try {
    const headers: Headers = {
      ...ctx.headers,
      'x-ipfs-roots': gw.root.toString(),
      etag: `"${gw.root}.raw"`,
      'content-type': 'application/vnd.ipld.raw',
      'content-disposition': contentDisposition(true, gw.filename ?? `${gw.root}.bin`) as string
    }
    const d = decideBytes(rc.req, piecesLength(pieces), headers)
    if (d.status === 304) { sendNotModified(rc.res, headers); return }
    rc.res.writeHead(d.status, d.headers)
    if (ctx.head) { rc.res.end(); return }
    // as a file's leaf: paced by its writer, freed piece by piece once written, and given up (read
    // again later) when its client holds it up long, so a stalled response holds its queue, not the block
    const sender = new Sender(rc.res, ctx.signal)
    sent = true
    await pump(rc.res, readBlockRange(ctx.bs, gw.root, pieces, d, { signal: ctx.signal, pace: sender.pace }), ctx.signal, { freeWritten: true, sender, paced: true })
  } finally {
    if (!sent) for (const p of pieces) releaseHandedOver(p)
  }
}

// ---- typed blocks (?format=dag-json|dag-cbor|json|cbor) -------------------

async function serveTypedBlock (ctx: Ctx, format: 'dag-json' | 'dag-cbor' | 'json' | 'cbor'): Promise<void> {
  const { gw, rc } = ctx
  const resolved = await resolvePath(ctx.bs, gw.root, gw.segments, { signal: ctx.signal })
  if (resolved.cid.code !== FORMAT_CODECS[format]) {
    throw notAcceptable(`${resolved.cid} has codec 0x${resolved.cid.code.toString(16)}, not ${format}; this gateway does not convert between codecs (ask for ?format=raw)`)
  }
  const entry = await loadEntry(ctx.bs, resolved.cid, { signal: ctx.signal })
  const type = mediaTypeOf(format)
  const name = `${resolved.cid}.${format === 'dag-json' || format === 'json' ? 'json' : 'cbor'}`
  await sendBytes(rc.req, rc.res, entry.block, {
    ...ctx.headers,
    'x-ipfs-roots': resolved.roots.join(','),
    etag: `"${resolved.cid}.${format}"`,
    'content-type': type,
    ...dispositionHeader(gw.download, gw.filename ?? (gw.download ? name : undefined))
  })
}

// ---- trustless: CAR -------------------------------------------------------

async function serveCar (ctx: Ctx): Promise<void> {
  const { gw, rc } = ctx
  const resolved = await resolvePath(ctx.bs, gw.root, gw.segments, { signal: ctx.signal })
  if (!(await hasBlock(ctx.bs, resolved.cid))) {
    throw new NotFoundError(`${resolved.cid} (end of the path) is not held by this node`)
  }
  const plan: CarPlan = {
    roots: [gw.root],
    pathBlocks: resolved.traversed,
    terminus: resolved.cid,
    scope: gw.car.scope,
    dups: gw.car.dups
  }
  if (plan.scope === 'all' && !TRAVERSABLE.has(resolved.cid.code)) {
    throw notAcceptable(`cannot walk the links of codec 0x${resolved.cid.code.toString(16)}; ask for dag-scope=block`)
  }
  if (gw.car.entityBytes != null) {
    const entry = await loadEntry(ctx.bs, resolved.cid, { signal: ctx.signal }).catch((err: unknown) => {
      if (err instanceof InvalidContentError) return undefined // not UnixFS: entity-bytes is ignored
      throw err
    })
    if (entry?.kind === 'file') {
      const range = resolveEntityBytes(entry.size, gw.car.entityBytes)
      if (range === 'outside') {
        throw new InvalidInputError(`entity-bytes=${gw.car.entityBytesText ?? ''} is entirely outside the ${entry.size} bytes of ${entry.cid}`)
      }
      if (range === 'empty') plan.scope = 'block'
      else plan.range = range
    }
  }
  const etag = `"${gw.root}.car.${paramsHash([1, 'dfs', gw.car.dups, gw.car.scope, gw.car.entityBytesText ?? null, gw.segments])}"`
  const headers: Headers = {
    ...ctx.headers,
    'x-ipfs-roots': resolved.roots.join(','),
    etag,
    'content-type': `application/vnd.ipld.car; version=1; order=dfs; dups=${gw.car.dups ? 'y' : 'n'}`,
    'content-disposition': contentDisposition(true, gw.filename ?? `${gw.root}.car`) as string,
    'accept-ranges': 'none'
  }
  if (etagMatches(rc.req, etag)) { sendNotModified(rc.res, headers); return }
  rc.res.writeHead(200, headers)
  if (ctx.head) { rc.res.end(); return }
  // its raw leaves wait for their writer before each piece, are freed once written and given up when
  // held up long (content-car.ts), as a file's: a stalled response holds its queue, not a leaf
  const sender = new Sender(rc.res, ctx.signal)
  await pump(rc.res, carStream(ctx.bs, plan, { signal: ctx.signal, pace: sender.pace }), ctx.signal, { freeWritten: true, sender, paced: true })
}

// ---- deserialized ---------------------------------------------------------

async function serveDeserialized (ctx: Ctx): Promise<void> {
  const { gw, rc } = ctx
  let resolved: Awaited<ReturnType<typeof resolvePath>>
  try {
    resolved = await resolvePath(ctx.bs, gw.root, gw.segments, { signal: ctx.signal })
  } catch (err) {
    // a path the site does not have (not a block this node lacks): its _redirects file may answer
    if (ctx.site != null && isNoSuchPath(err) && await followRedirects(ctx, ctx.site)) return
    throw err
  }
  ctx.headers['x-ipfs-roots'] = resolved.roots.join(',')
  const entry = await loadEntry(ctx.bs, resolved.cid, { signal: ctx.signal })
  switch (entry.kind) {
    case 'file':
      await serveFile(ctx, entry, gw.filename ?? gw.segments[gw.segments.length - 1])
      return
    case 'directory':
      await serveDirectory(ctx, entry)
      return
    case 'symlink':
      throw notAcceptable(`${entry.cid} is a UnixFS symlink to ${truncate(entry.target)}; symlinks are not followed (ask for ?format=raw)`)
    case 'block': {
      const type = TYPED_BLOCKS[entry.codec]
      if (type == null) {
        if (entry.codec === CODEC_DAG_PB) throw notAcceptable(`${entry.cid} is UnixFS metadata, not a file or directory`)
        throw new InvalidInputError(`codec 0x${entry.codec.toString(16)} of ${entry.cid} is not supported for deserialized responses; ask for ?format=raw`)
      }
      await sendBytes(rc.req, rc.res, entry.block, {
        ...ctx.headers,
        etag: `"${entry.cid}"`,
        'content-type': type,
        ...dispositionHeader(gw.download, gw.filename)
      })
    }
  }
}

function dispositionHeader (attachment: boolean, filename: string | undefined): Headers {
  const value = contentDisposition(attachment, filename)
  return value == null ? {} : { 'content-disposition': value }
}

/**
 * A file, whole or the range asked for. `status`: a `_redirects` rule's 404, 410 or 451 page, sent
 * whole with that status (no range, no 304: the page stands for what is missing, not for itself).
 */
async function serveFile (ctx: Ctx, file: FileEntry, name: string | undefined, status?: 404 | 410 | 451): Promise<void> {
  const { gw, rc } = ctx
  const etag = `"${file.cid}"`
  const size = Number(file.size)
  const decide = (headers: Headers): ByteDecision => status == null
    ? decideBytes(rc.req, size, headers)
    : { status, start: 0, end: size, headers: { ...headers, 'content-length': String(size) } }
  // which bytes go out (304, 206 or 200) does not depend on the type: decided
  // first, so the body's reads (and their read-ahead) start at once
  const range = decide({ etag })
  // the body waits for its writer (send budget, client) before each piece, and frees its block when held up long
  const sender = new Sender(rc.res, ctx.signal)
  const body = range.status !== 304 && !ctx.head && range.end > range.start
    ? readFile(ctx.bs, file, { offset: BigInt(range.start), length: BigInt(range.end - range.start) }, { signal: ctx.signal, pace: sender.pace })
    : undefined
  try {
    // the first bytes decide the type. From the body when it starts at the
    // file's start (its first block is not read twice); either way the first
    // block of the range is read before the status goes out, so a range that
    // starts in a missing block is still a clean 404
    const pulled: Uint8Array[] = []
    let sniff: Buffer
    if (body != null && range.status !== 304 && range.start === 0) {
      let have = 0
      while (have < SNIFF_BYTES) {
        const next = await body.next()
        if (next.done === true) break
        pulled.push(next.value)
        have += next.value.byteLength
      }
      sniff = Buffer.concat(pulled).subarray(0, SNIFF_BYTES)
    } else {
      const headChunks: Uint8Array[] = []
      for await (const chunk of readFile(ctx.bs, file, { offset: 0n, length: BigInt(SNIFF_BYTES) }, { signal: ctx.signal })) headChunks.push(chunk)
      sniff = Buffer.concat(headChunks)
      if (body != null) {
        const first = await body.next()
        if (first.done !== true) pulled.push(first.value)
      }
    }
    const contentType = await detectContentType(name, sniff)
    const active = !isPassiveType(contentType)
    const attachment = gw.download || (active && !ctx.inline)
    const headers: Headers = {
      ...ctx.headers,
      etag,
      'content-type': contentType,
      ...dispositionHeader(attachment, gw.filename ?? (attachment ? name : undefined))
    }
    if (active && !ctx.inline) headers['content-security-policy'] = 'sandbox'
    const d = decide(headers)
    if (d.status === 304) { sendNotModified(rc.res, headers); return }
    if (body == null) {
      rc.res.writeHead(d.status, d.headers)
      rc.res.end()
      return
    }
    rc.res.writeHead(d.status, d.headers)
    // the body's pieces are its own (readFile): each freed once written
    await pump(rc.res, prepend(pulled, body), ctx.signal, { freeWritten: true, sender, paced: true })
  } finally {
    await body?.return(undefined)
  }
}

/** `first` (already pulled from `rest`), then the rest of `rest` */
async function * prepend<T> (first: T[], rest: AsyncGenerator<T, void, undefined>): AsyncGenerator<T, void, undefined> {
  yield * first
  yield * rest
}

async function serveDirectory (ctx: Ctx, dir: DirectoryEntry): Promise<void> {
  const { gw, rc } = ctx
  if (!gw.trailingSlash) {
    // directories live at the trailing-slash URL (relative links, SW scopes)
    rc.res.writeHead(301, { ...ctx.headers, location: `${rc.url.pathname}/${rc.url.search}` })
    rc.res.end()
    return
  }
  const index = await findChild(ctx.bs, dir, 'index.html', { signal: ctx.signal })
  if (index != null) {
    const indexEntry = await loadEntry(ctx.bs, index, { signal: ctx.signal })
    if (indexEntry.kind === 'file') {
      await serveFile(ctx, indexEntry, gw.filename ?? 'index.html')
      return
    }
  }
  const etag = `"DirIndex-${DIR_LISTING_VERSION}_CID-${dir.cid}"`
  const headers: Headers = {
    ...ctx.headers,
    etag,
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': DIR_LISTING_CSP,
    'accept-ranges': 'none'
  }
  if (etagMatches(rc.req, etag)) { sendNotModified(rc.res, headers); return }
  rc.res.writeHead(200, headers)
  if (ctx.head) { rc.res.end(); return }
  const site = ctx.site
  const page = renderListing({
    displayPath: `/ipfs/${[gw.root.toString(), ...gw.segments].join('/')}/`,
    cid: dir.cid,
    hasParent: gw.segments.length > 0,
    // on a content origin /ipfs/… is a path of the site: a CID links to its own origin
    ...(site != null ? { cidHref: (cid: CID) => siteUrlOrPath(cid, site) } : {})
  }, listDirectory(ctx.bs, dir, { signal: ctx.signal }))
  await pump(rc.res, page, ctx.signal)
}

// ---- content origins: _redirects, the URI router -------------------------

/** a path that does not exist under the root (not a block missing here) */
function isNoSuchPath (err: unknown): boolean {
  return err instanceof ContentNotFoundError && !(err instanceof BlockMissingError)
}

async function readRedirects (ctx: Ctx, file: FileEntry): Promise<RedirectRule[] | RedirectsFileError> {
  if (file.size > BigInt(MAX_REDIRECTS_BYTES)) {
    return new RedirectsFileError(`it is ${file.size} bytes; it may be ${MAX_REDIRECTS_BYTES} at most`)
  }
  const chunks: Uint8Array[] = []
  for await (const chunk of readFile(ctx.bs, file, { offset: 0n, length: file.size }, { signal: ctx.signal })) chunks.push(chunk)
  try {
    return parseRedirects(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks)))
  } catch (err) {
    if (err instanceof RedirectsFileError) return err
    if (err instanceof TypeError) return new RedirectsFileError('it is not UTF-8 text')
    throw err
  }
}

/**
 * The first rule of the root's `_redirects` (web-redirects-file spec) matching a path the site does
 * not have: a 3xx redirects; a 200 serves its target in place of the path (a rewrite); a 404, 410
 * or 451 serves its target page with that status. False when there is no file or no rule matches.
 */
async function followRedirects (ctx: Ctx, site: Site): Promise<boolean> {
  const { rc, gw } = ctx
  const root = await loadEntry(ctx.bs, gw.root, { signal: ctx.signal })
  if (root.kind !== 'directory') return false
  const fileCid = await findChild(ctx.bs, root, '_redirects', { signal: ctx.signal })
  if (fileCid == null) return false
  const file = await loadEntry(ctx.bs, fileCid, { signal: ctx.signal })
  if (file.kind !== 'file') return false
  const match = matchRedirect(await site.redirects.rules(file.cid.toString(), Number(file.size), async () => await readRedirects(ctx, file)), rc.url.pathname, rc.url.searchParams)
  if (match == null) return false
  if (match.status >= 300 && match.status < 400) {
    // the file's own characters, percent-encoded where a header could not carry them
    const location = match.location.replace(/[^\x21-\x7e]/gu, c => encodeURIComponent(c))
    rc.res.writeHead(match.status, { ...ctx.headers, location, 'content-length': '0' })
    rc.res.end()
    return true
  }
  // a rewrite or an error page: the target is a path of this site
  if (!match.location.startsWith('/')) throw new RedirectsFileError(`status ${match.status} serves a page of this site, not ${truncate(match.location, 80)}`, match.rule.line)
  const target = splitContentPath(`/ipfs/${gw.root.toString()}${match.location.replace(/[?#].*$/, '')}`)
  let entry: Awaited<ReturnType<typeof loadEntry>>
  try {
    entry = await loadEntry(ctx.bs, (await resolvePath(ctx.bs, gw.root, target.segments, { signal: ctx.signal })).cid, { signal: ctx.signal })
    if (entry.kind === 'directory') {
      const index = await findChild(ctx.bs, entry, 'index.html', { signal: ctx.signal })
      if (index == null) throw new ContentNotFoundError(`${match.location} is a directory without index.html`)
      entry = await loadEntry(ctx.bs, index, { signal: ctx.signal })
    }
  } catch (err) {
    if (isNoSuchPath(err)) throw new NotFoundError(`${truncate(rc.url.pathname, 200)} is not in this site, nor ${truncate(match.location, 200)}, where its _redirects line ${match.rule.line} sends it`)
    throw err
  }
  if (entry.kind !== 'file') throw new NotFoundError(`${truncate(match.location, 200)} (_redirects line ${match.rule.line}) is not a file`)
  const name = target.segments[target.segments.length - 1] ?? 'index.html'
  await serveFile(ctx, entry, name, match.status === 200 ? undefined : match.status as 404 | 410 | 451)
  return true
}

/** A CID's content origin, or its path on this host when it has none (too long for a DNS label). */
function siteUrlOrPath (cid: CID, site: Site): string {
  try {
    return siteUrl(cid, site.at, site.domain, '/')
  } catch {
    return `${site.at.proto}://${site.domain}/ipfs/${cid.toString()}`
  }
}

/**
 * The URI router (subdomain gateway spec): `/ipfs/?uri=ipfs://{cid}/{path}` (what a browser's
 * registerProtocolHandler sends) moves to `/ipfs/{cid}/{path}`, from where the usual routing goes on.
 */
function routeUri (rc: RequestContext, uri: string): void {
  const m = /^ipfs:\/\/([^/?#]+)([^#]*)/i.exec(uri)
  if (m == null) {
    if (/^ipns:\/\//i.test(uri)) throw new InvalidInputError('this gateway serves /ipfs/ content only, not IPNS names')
    throw new InvalidInputError(`uri must be ipfs://{cid}[/{path}], not ${truncate(uri, 80)}`)
  }
  const root = parseCid(m[1] as string)
  const rest = m[2] ?? ''
  // the rest as a URL writes it (percent-encoded, dot segments resolved): nothing else reaches the header
  const u = new URL(rest.startsWith('/') ? rest : `/${rest}`, 'http://x')
  redirect(rc, 301, `/ipfs/${root.toString()}${rest === '' ? '' : `${u.pathname}${u.search}`}`)
}

// ---- the OpenAPI description of this route (src/http/openapi.ts) -----------

/** GET/HEAD /ipfs/* is described as two paths: the CID alone, and a path under it */
export function gatewayOperations (): PathItems {
  return {
    '/ipfs/{cid}': gatewayPathItem(false),
    '/ipfs/{cid}/{path}': gatewayPathItem(true)
  }
}

/** the gateway's query and header parameters (in components.parameters, each by this key) */
export function gatewayParameters (): Obj {
  // the query parameters come from GatewayQuery (../gateway/request.ts)
  return {
    GatewayRange: header('Range', 'One byte range (`bytes=0-99`, `bytes=100-`, `bytes=-100`) of a file or block → 206; several ranges, other units or a malformed header get the whole entity (200)', { type: 'string' }),
    GatewayIfRange: header('If-Range', 'Range applies only if this is the current ETag', { type: 'string' }),
    GatewayIfNoneMatch: header('If-None-Match', 'ETags (or `*`) the client holds → 304', { type: 'string' }),
    GatewayCacheControl: header('Cache-Control', '`only-if-cached`: 412 instead of 404 when the root block is not held', { type: 'string' }),
    GatewayServiceWorker: header('Service-Worker', '`script` is refused (400) unless the operator allows active content, and always at a CID root', { type: 'string' })
  }
}

function gatewayPathItem (withPath: boolean): Obj {
  return {
    parameters: [ref('parameters', 'GatewayCid'), ...(withPath ? [ref('parameters', 'GatewayPath')] : [])],
    get: gatewayOperation('get', withPath),
    head: gatewayOperation('head', withPath)
  }
}

/** a media type whose body is bytes (no schema) */
const binary = (): Obj => ({})

function gatewayOperation (method: 'get' | 'head', withPath: boolean): Obj {
  const head = method === 'head'
  const body = (types: Obj): Obj => head ? {} : { content: types }
  const hdrs = (names: string[]): Obj => Object.fromEntries(names.map(n => [n, ref('headers', n.replaceAll('-', ''))]))
  const err = (description: string, extra: Obj = {}): Obj => ({ description, headers: { 'X-Content-Type-Options': ref('headers', 'XContentTypeOptions'), ...extra }, ...body(json(schema('Failure'))) })
  return operation(method, {
    id: `${head ? 'head' : 'get'}Content${withPath ? 'Path' : ''}`,
    tag: 'gateway',
    summary: `${head ? 'Headers of' : 'Retrieve'} ${withPath ? 'content under a path in a DAG' : 'content by CID'}`,
    description: [
      'Free, no credentials. Serves the content of live pins (or, as the operator chose, anything held locally, or fetched from peers).',
      'The response format comes from `?format=` or else from `Accept` (the first of highest q naming a gateway type decides; `format` wins):',
      '- deserialized (default): a UnixFS file (its detected type: the name, or `filename`, names it unless that would make active content look passive; active types such as HTML or SVG as attachment with `Content-Security-Policy: sandbox` unless the operator allows them), a directory (its `index.html`, else an HTML listing; without a trailing `/` a 301 to it), raw and identity blocks as bytes (identity CIDs of at most 128 bytes; larger ones are a 400), dag-json/dag-cbor/json/cbor blocks as their bytes with their media type;',
      '- `raw` / `application/vnd.ipld.raw`: the block of the CID alone (no path);',
      '- `car` / `application/vnd.ipld.car`: a CARv1 of the path\'s blocks and, per `dag-scope`, the terminal block, the entity or the whole DAG (`entity-bytes` for a byte range of a file); `version=1`, `order=dfs|unk`, `dups=y|n`;',
      '- `dag-json`, `dag-cbor`, `json`, `cbor`: a block of that very codec, unconverted.',
      'With the subdomain gateway on (`--gateway-domain`), `{cidv1-base32}.ipfs.{domain}` serves the same content as a website at `/` of an origin of its own (HTML inline, `index.html`, `_redirects`), and this path on the domain itself answers 301 to it. `/ipfs/?uri=ipfs://{cid}/{path}` answers 301 to `/ipfs/{cid}/{path}`.',
      'Not supported: TAR (406), IPNS records (400: /ipfs only). Files and blocks support one byte range (`Range`, `If-Range`; several ranges get the whole entity with 200); every success has an `ETag` and honours `If-None-Match` (304). Content is immutable: `Cache-Control: public, max-age=29030400, immutable`.'
    ].join('\n'),
    parameters: [...Object.keys(GatewayQuery.shape).map(k => parameterKey('Gateway', k)), ...Object.keys(gatewayParameters())].map(k => ref('parameters', k)),
    responses: {
      200: {
        description: 'The content in the selected format.',
        headers: hdrs(['ETag', 'Cache-Control', 'X-Ipfs-Path', 'X-Ipfs-Roots', 'Content-Location', 'Content-Disposition', 'Accept-Ranges']),
        ...body({
          'application/octet-stream': binary(),
          'text/html': { schema: { type: 'string', description: 'a directory listing (or a UnixFS HTML file)' } },
          'application/vnd.ipld.raw': binary(),
          'application/vnd.ipld.car': binary(),
          'application/vnd.ipld.dag-json': binary(),
          'application/vnd.ipld.dag-cbor': binary(),
          'application/json': binary(),
          'application/cbor': binary(),
          '*/*': binary()
        })
      },
      206: {
        description: 'One byte range of a file or block (`Range`).',
        headers: hdrs(['Content-Range', 'ETag', 'Cache-Control', 'X-Ipfs-Path', 'X-Ipfs-Roots', 'Accept-Ranges']),
        ...body({ '*/*': binary() })
      },
      301: { description: 'A directory asked for without a trailing `/`: `Location` is the same URL with it. On the gateway domain (`--gateway-domain`): `Location` is the content origin, `{scheme}://{cidv1-base32}.ipfs.{domain}/{path}?{query}`.', headers: { Location: ref('headers', 'Location') } },
      304: { description: '`If-None-Match` matches the ETag of the selected representation.', headers: hdrs(['ETag', 'Cache-Control']) },
      400: err('A CID longer than a DNS label on the gateway domain, not a valid CID or path segment (`.`, `..`, bad percent-encoding), an unknown `format`, a bad `dag-scope` or `entity-bytes` (or entity-bytes with another dag-scope, or entirely outside the file), `format=raw` with a path, an IPNS record asked for, a codec that cannot be deserialized, or a service-worker registration.'),
      404: err('The CID is not served by this gateway (no live pin, per the operator\'s policy), not held by this node, or a block under the path is missing.'),
      410: err('The CID, the path, or a block under it is denied by this service (the operator\'s takedowns or denylists, `GONE`; the details say why). A response already streaming when it reaches a denied block is cut.'),
      406: err('The format cannot be produced: TAR, an unsupported CAR variant (version, order, dups), a typed format for a block of another codec, a symlink or UnixFS metadata asked for deserialized, content that cannot be deserialized, or `dag-scope=all` over a codec whose links cannot be walked.'),
      412: err('`Cache-Control: only-if-cached` and the root block is not held by this node.'),
      416: err('The `Range` starts past the end of the file or block.', { 'Content-Range': ref('headers', 'ContentRange') })
    }
  })
}
