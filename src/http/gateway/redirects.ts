/**
 * The Web `_redirects` file (specs.ipfs.tech/http-gateways/web-redirects-file/):
 * parsing it, and finding the rule a request path matches. Pure: the gateway
 * reads the file (never more than MAX_REDIRECTS_BYTES + 1 bytes), evaluates the
 * rules only for a path missing from the DAG, and answers a RedirectsFileError
 * with a 500 that names the problem (the spec's error handling).
 *
 * Semantics are the spec's, then those of the reference Kubo uses
 * (ipfs/go-ipfs-redirects-file, matching with ucarion/urlpath, evaluated as in
 * boxo's gateway/handler_unixfs_redirects.go):
 * - a line is `from to [status]`, fields split on whitespace; more than three
 *   fields, or one, is an error; blank lines and lines starting with `#` are
 *   skipped; lines end with `\n` (a `\r` before it is whitespace); the status
 *   is 200, 301 (the default), 302, 303, 307, 308, 404, 410 or 451, anything
 *   else (`301!` too: no forced redirects) an error; a file over 64 KiB is an
 *   error.
 * - `from` is a path starting with '/'. Matching is per segment, case
 *   sensitive: a constant segment matches that segment, `:name` any one
 *   segment (an empty one too, as urlpath), a last segment `*` the rest of the
 *   path (`:splat`, possibly empty), needing at least one segment there: `/a/*`
 *   does not match `/a`. One trailing slash is dropped from `from` and from the
 *   request path before matching, so `/a/` and `/a` are the same rule and match
 *   the same requests.
 * - `to` is a path starting with '/' or, for a 3xx, an http, https, ipfs or
 *   ipns URL. Every `:name` of `from` in it, and `:splat` (empty when `from`
 *   has no `*`), is replaced; any other `:word` is kept as written.
 * - for a 3xx, the request's query parameters are merged into the target's:
 *   a parameter the request has replaces the target's of that name (the spec:
 *   the user's win; boxo appends both), keys sorted as Go's url.Values.Encode.
 *
 * Stricter than the reference, each an error with the line: a duplicate
 * placeholder in `from` (the spec's MUST, which the Go parser does not check),
 * a placeholder with no name, `*` anywhere but as the whole last segment of
 * `from` (Go takes `/a*` as a constant segment that never matches), `?` or `#`
 * in `from` (never in a request path), a `to` starting with `//` (another host:
 * write the URL), a URL `to` for a 200 or a 4xx (nothing is proxied), a
 * malformed `%` escape, a control character.
 *
 * Safer than the reference: placeholders are found by longest name, once, and
 * never in what was substituted; a value goes into the query or fragment
 * percent-encoded as a component (a segment holding `&x=1` adds no parameter);
 * the path of a path target has its dot segments resolved and starts with a
 * single '/', so a request cannot make a Location leave the site (`//host`) nor
 * a rewrite leave the root (`/../<cid>`). Constant segments compare after
 * percent-decoding both sides (`/ą`, `/%C4%85` and `/%c4%85` are one path).
 * No regular expression is built from the file; matching a rule costs one pass
 * over its segments, expanding one a pass over its target.
 */
import { PindError } from '../../kernel/errors.js'

export const MAX_REDIRECTS_BYTES = 64 * 1024

export interface RedirectRule { from: string, to: string, status: number, line: number }

/** An invalid `_redirects` file: `line` (1-based) is the line at fault, undefined for the whole file. */
export class RedirectsFileError extends PindError {
  override name = 'RedirectsFileError'
  constructor (message: string, readonly line?: number) {
    super(line == null ? message : `line ${line}: ${message}`)
  }
}

const STATUSES = [200, 301, 302, 303, 307, 308, 404, 410, 451] as const
const STATUS_TEXT = new Set<string>(STATUSES.map(String))
const isRedirect = (status: number): boolean => status >= 300 && status < 400

/** Go's unicode.IsSpace, as strings.Fields splits on it */
const WHITESPACE = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/u
const CONTROL = /[\u0000-\u001f\u007f]/u
const BAD_ESCAPE = /%(?![0-9A-Fa-f]{2})/u
const URL_TARGET = /^(?:https?|ipfs|ipns):\/\//iu
/** what a Location may not hold as is: outside printable ASCII, and the printable characters a URL never has raw */
const UNSAFE = /[^\x21-\x7e]|["<>\\^`{|}]/gu
/** the same, and `?` `#` for a value placed in a path */
const UNSAFE_IN_PATH = /[^\x21-\x7e]|["#<>?\\^`{|}]/gu

/** parses the whole file; throws RedirectsFileError naming the line and the problem on any invalid line */
export function parseRedirects (text: string): RedirectRule[] {
  if (utf8Length(text) > MAX_REDIRECTS_BYTES) throw new RedirectsFileError(`redirects file size cannot exceed ${MAX_REDIRECTS_BYTES} bytes`)
  const rules: RedirectRule[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const fields = (lines[i] as string).split(WHITESPACE).filter(f => f !== '')
    const [from, to, status] = fields
    if (from == null || from.startsWith('#')) continue
    const line = i + 1
    if (to == null) throw new RedirectsFileError(`missing 'to': a rule is 'from to [status]'`, line)
    if (fields.length > 3) throw new RedirectsFileError(`${fields.length} fields: a rule is 'from to [status]'`, line)
    const rule: RedirectRule = Object.freeze({ from, to, status: status == null ? 301 : parseStatus(status, line), line })
    compiled(rule)
    rules.push(rule)
  }
  return rules
}

/**
 * The first rule matching `path` (a URL path as requested, percent-encoded,
 * starting with '/', without the query), with its target expanded:
 * placeholders and :splat substituted; for 3xx the request's query parameters
 * merged over the target's static ones (the user's win); undefined when no
 * rule matches. `location` is URL text, percent-encoded: for a 200 or a 4xx it
 * is the path (and the target's own query, if any) to serve from the site's
 * root, its segments to be percent-decoded by the caller.
 */
export function matchRedirect (rules: readonly RedirectRule[], path: string, query: URLSearchParams): { status: number, location: string, rule: RedirectRule } | undefined {
  if (!path.startsWith('/')) return undefined
  const request = new RequestPath(path.endsWith('/') ? path.slice(0, -1) : path)
  for (const rule of rules) {
    const c = compiled(rule)
    const params = request.match(c)
    if (params == null) continue
    return { status: c.status, location: expand(c, params, query), rule }
  }
  return undefined
}

type Part = string | { name: string }
interface Compiled {
  from: string
  to: string
  status: number
  /** `from` split on '/' (one trailing slash dropped, the `*` left out): a constant segment in canonical form, or a placeholder */
  segments: Array<{ constant: string } | { name: string }>
  splat: boolean
  /** `to` cut into literal text (made safe for a Location) and placeholders: before any `?` or `#`, the query, the fragment */
  path: Part[]
  query: Part[] | undefined
  fragment: Part[] | undefined
  /** `to` is a path in the site (rather than a URL) */
  local: boolean
}

const cache = new WeakMap<RedirectRule, Compiled>()

/** the rule checked and compiled, once (a rule built by hand is checked here too) */
function compiled (rule: RedirectRule): Compiled {
  const known = cache.get(rule)
  if (known != null && known.from === rule.from && known.to === rule.to && known.status === rule.status) return known
  const fail = (message: string): RedirectsFileError => new RedirectsFileError(message, rule.line)
  if (!(STATUSES as readonly number[]).includes(rule.status)) throw fail(`status ${rule.status} is not supported (${STATUSES.join(', ')})`)
  for (const [what, text] of [['from', rule.from], ['to', rule.to]] as const) {
    if (text === '' || WHITESPACE.test(text)) throw fail(`'${what}' must be one non-empty field`)
    if (CONTROL.test(text)) throw fail(`'${what}' holds a control character`)
    if (!text.isWellFormed()) throw fail(`'${what}' is not well-formed text`)
    if (BAD_ESCAPE.test(text)) throw fail(`'${what}' has a '%' not followed by two hex digits`)
  }

  const from = rule.from
  if (!from.startsWith('/')) throw fail(`'from' must be a path starting with '/': ${from}`)
  if (from.includes('?') || from.includes('#')) throw fail(`'from' must be a path, without '?' or '#': ${from}`)
  const star = from.indexOf('*')
  if (star >= 0 && (star !== from.length - 1 || !from.endsWith('/*'))) throw fail(`'*' may only be the whole last segment of 'from': ${from}`)
  const splat = star >= 0
  const trimmed = splat ? from.slice(0, -2) : from.endsWith('/') ? from.slice(0, -1) : from
  const names = new Set<string>()
  const segments: Compiled['segments'] = []
  for (const segment of trimmed.split('/')) {
    if (!segment.startsWith(':')) {
      segments.push({ constant: canonical(segment) })
      continue
    }
    const name = segment.slice(1)
    if (name === '') throw fail(`a placeholder in 'from' needs a name: ${from}`)
    if (names.has(name) || (splat && name === 'splat')) throw fail(`placeholder ':${name}' appears more than once in 'from': ${from}`)
    names.add(name)
    segments.push({ name })
  }
  names.add('splat') // in `to`, :splat is the rest of the path, or empty (unless a placeholder of that name)

  const to = rule.to
  const local = to.startsWith('/')
  if (local) {
    if (to.startsWith('//') || to.startsWith('/\\')) throw fail(`'to' starting with '//' names another host; write the URL: ${to}`)
  } else {
    if (!URL_TARGET.test(to) || !URL.canParse(to)) throw fail(`'to' must be a path starting with '/' or an http, https, ipfs or ipns URL: ${to}`)
    if (!isRedirect(rule.status)) throw fail(`a ${rule.status} rule serves a path of this site; its 'to' cannot be a URL: ${to}`)
  }
  const hash = to.indexOf('#')
  const mark = to.indexOf('?')
  const q = mark >= 0 && (hash < 0 || mark < hash) ? mark : -1
  const pathEnd = q >= 0 ? q : hash >= 0 ? hash : to.length
  const result: Compiled = {
    from,
    to,
    status: rule.status,
    segments,
    splat,
    path: tokens(to.slice(0, pathEnd), names),
    query: q >= 0 ? tokens(to.slice(q + 1, hash >= 0 ? hash : to.length), names) : undefined,
    fragment: hash >= 0 ? tokens(to.slice(hash + 1), names) : undefined,
    local
  }
  cache.set(rule, result)
  return result
}

function parseStatus (text: string, line: number): number {
  if (text.endsWith('!')) throw new RedirectsFileError(`status ${text}: forced redirects (shadowing) are not supported`, line)
  if (!STATUS_TEXT.has(text)) throw new RedirectsFileError(`status ${text} is not supported (${STATUSES.join(', ')})`, line)
  return Number(text)
}

/** `text` cut at each `:name` of `names` (the longest that fits); the literal pieces made safe for a Location */
function tokens (text: string, names: ReadonlySet<string>): Part[] {
  const parts: Part[] = []
  let literal = 0
  let at = text.indexOf(':')
  while (at >= 0) {
    let found = ''
    for (const name of names) if (name.length > found.length && text.startsWith(name, at + 1)) found = name
    if (found === '') {
      at = text.indexOf(':', at + 1)
      continue
    }
    if (at > literal) parts.push(text.slice(literal, at).replace(UNSAFE, percentEncode))
    parts.push({ name: found })
    literal = at + 1 + found.length
    at = text.indexOf(':', literal)
  }
  if (literal < text.length) parts.push(text.slice(literal).replace(UNSAFE, percentEncode))
  return parts
}

/** the request path (one trailing slash dropped) cut into segments, each compared in canonical form */
class RequestPath {
  private readonly segments: string[]
  private readonly canon: Array<string | undefined> = []
  constructor (private readonly text: string) {
    this.segments = text.split('/')
  }

  /** the placeholders' values (raw, as requested) when `rule` matches */
  match (rule: Compiled): Map<string, string> | undefined {
    const n = rule.segments.length
    if (rule.splat ? this.segments.length <= n : this.segments.length !== n) return undefined
    const params = new Map<string, string>()
    let offset = 0
    for (let i = 0; i < n; i++) {
      const want = rule.segments[i] as Compiled['segments'][number]
      const got = this.segments[i] as string
      if ('name' in want) params.set(want.name, got)
      else if ((this.canon[i] ??= canonical(got)) !== want.constant) return undefined
      offset += got.length + 1
    }
    if (rule.splat) params.set('splat', this.text.slice(offset))
    return params
  }
}

function expand (rule: Compiled, params: ReadonlyMap<string, string>, query: URLSearchParams): string {
  const fill = (parts: Part[], value: (v: string) => string): string =>
    parts.map(p => typeof p === 'string' ? p : value(params.get(p.name) ?? '')).join('')
  let path = fill(rule.path, v => v.replace(UNSAFE_IN_PATH, percentEncode))
  if (rule.local) path = removeDotSegments(path).replace(/^\/+/u, '/')
  let search = rule.query == null ? undefined : fill(rule.query, canonical)
  const fragment = rule.fragment == null ? undefined : fill(rule.fragment, canonical)
  if (isRedirect(rule.status) && query.size > 0) {
    const merged = new URLSearchParams(search ?? '')
    for (const key of new Set(query.keys())) merged.delete(key)
    for (const [key, value] of query) merged.append(key, value)
    merged.sort()
    search = merged.size > 0 ? merged.toString() : undefined
  }
  return path + (search == null ? '' : `?${search}`) + (fragment == null ? '' : `#${fragment}`)
}

/** RFC 3986 §5.2.4 on an absolute path, `%2E` read as '.'; never above the root */
function removeDotSegments (path: string): string {
  const input = path.split('/')
  const out: string[] = []
  for (let i = 1; i < input.length; i++) {
    const segment = input[i] as string
    const dots = segment.length <= 6 ? segment.toLowerCase().replaceAll('%2e', '.') : ''
    if (dots === '.' || dots === '..') {
      if (dots === '..') out.pop()
      if (i === input.length - 1) out.push('')
      continue
    }
    out.push(segment)
  }
  return `/${out.join('/')}`
}

const encoder = new TextEncoder()
const HEX = '0123456789ABCDEF'
const hexByte = (b: number): string => `%${HEX[b >> 4] as string}${HEX[b & 15] as string}`

function percentEncode (text: string): string {
  let out = ''
  for (const b of encoder.encode(text)) out += hexByte(b)
  return out
}

const PLAIN = /^[A-Za-z0-9._~-]*$/u
const isHex = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
const isUnreserved = (b: number): boolean =>
  (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x2d || b === 0x2e || b === 0x5f || b === 0x7e

/**
 * One form for the many spellings of a segment: its bytes (escapes decoded,
 * text as UTF-8), every byte but the unreserved ones escaped in upper case.
 * Also the form a value takes in a query or a fragment (a URI component).
 */
function canonical (text: string): string {
  if (PLAIN.test(text)) return text
  let out = ''
  let i = 0
  while (i < text.length) {
    if (text.charCodeAt(i) === 0x25 && isHex(text.charCodeAt(i + 1)) && isHex(text.charCodeAt(i + 2))) {
      const b = parseInt(text.slice(i + 1, i + 3), 16)
      out += isUnreserved(b) ? String.fromCharCode(b) : hexByte(b)
      i += 3
      continue
    }
    let end = text.indexOf('%', i + 1)
    if (end < 0) end = text.length
    for (const b of encoder.encode(text.slice(i, end))) out += isUnreserved(b) ? String.fromCharCode(b) : hexByte(b)
    i = end
  }
  return out
}

/** the length of `text` in UTF-8, as TextEncoder would write it (a lone surrogate as 3 bytes) */
function utf8Length (text: string): number {
  if (text.length > MAX_REDIRECTS_BYTES) return text.length // at least one byte per code unit: already over
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if (c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

/** what the parsed `_redirects` files kept may add up to, counted by their bytes */
export const REDIRECTS_CACHE_BYTES = 4 * 1024 * 1024

/**
 * Parsed `_redirects` files by CID (immutable: never stale), the most recently used within
 * `limitBytes` (each counted by its file's size, at most MAX_REDIRECTS_BYTES); a file that does
 * not parse is kept as its error, thrown again to each request.
 */
export class RedirectsCache {
  private readonly files = new Map<string, { rules: RedirectRule[] | RedirectsFileError, bytes: number }>()
  private total = 0

  constructor (private readonly limitBytes = REDIRECTS_CACHE_BYTES) {}

  /** bytes the kept files count for */
  get bytes (): number { return this.total }
  /** CIDs kept, least recently used first */
  keys (): string[] { return [...this.files.keys()] }

  /** the rules of file `key` (a CID) of `size` bytes, parsed by `read` unless kept */
  async rules (key: string, size: number, read: () => Promise<RedirectRule[] | RedirectsFileError>): Promise<RedirectRule[]> {
    let got = this.files.get(key)
    if (got == null) {
      const parsed = { rules: await read(), bytes: Math.min(size, MAX_REDIRECTS_BYTES) }
      // another request may have read it meanwhile: one entry, counted once
      if (this.files.has(key)) return await this.rules(key, size, read)
      got = parsed
      // a file larger than the whole limit is answered and not kept (nothing else is dropped for it)
      if (got.bytes <= this.limitBytes) {
        this.total += got.bytes
        this.files.set(key, got)
        // the least recently used go first
        for (const [k, v] of this.files) {
          if (this.total <= this.limitBytes) break
          this.files.delete(k)
          this.total -= v.bytes
        }
      }
    } else {
      this.files.delete(key)
      this.files.set(key, got)
    }
    if (got.rules instanceof RedirectsFileError) throw got.rules
    return got.rules
  }
}
