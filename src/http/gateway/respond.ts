/**
 * Response-side helpers shared by the gateway handlers: common headers,
 * ETag matching, Content-Location, and sending bytes with Range support.
 */
import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { RangeOutsideError } from '../../kernel/errors.js'
import { FORMAT_MEDIA_TYPES, type GatewayRequest } from './request.js'
import { evaluateRange } from './range.js'
import { PIECE_BYTES, piecesOf, pump, responseSignal } from './pump.js'

export const IMMUTABLE_CACHE = 'public, max-age=29030400, immutable'

export type Headers = Record<string, string>

/** Headers every successful /ipfs/ response carries. */
export function baseHeaders (url: URL): Headers {
  return {
    'cache-control': IMMUTABLE_CACHE,
    vary: 'Accept',
    'x-content-type-options': 'nosniff',
    'x-ipfs-path': url.pathname,
    'access-control-allow-origin': '*',
    'access-control-expose-headers': 'Content-Length, Content-Range, Content-Type, Content-Disposition, ETag, X-Ipfs-Path, X-Ipfs-Roots, Content-Location'
  }
}

/**
 * Content-Location when the format was negotiated by Accept (the URL that
 * names this representation), or when ?format= overrode a different Accept.
 */
export function contentLocation (gw: GatewayRequest, url: URL): string | undefined {
  if (gw.formatFromAccept && gw.format !== 'deserialized') {
    const params = new URLSearchParams(url.search)
    params.set('format', gw.format)
    for (const [k, v] of Object.entries(gw.carParamsFromAccept)) params.set(k, v)
    return `${url.pathname}?${params.toString()}`
  }
  if (gw.formatDisagrees) return `${url.pathname}${url.search}`
  return undefined
}

/** If-None-Match (weak comparison, `*` matches): true → answer 304. */
export function etagMatches (req: IncomingMessage, etag: string): boolean {
  const header = req.headers['if-none-match']
  if (header == null) return false
  const bare = etag.replace(/^W\//, '')
  return header.split(',').some(t => {
    const tag = t.trim()
    return tag === '*' || tag.replace(/^W\//, '') === bare
  })
}

export function sendNotModified (res: ServerResponse, headers: Headers): void {
  res.writeHead(304, headers)
  res.end()
}

/** A short hash for ETags that depend on request parameters. */
export function paramsHash (parts: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts, (_k, v: unknown) => typeof v === 'bigint' ? v.toString() : v)).digest('base64url').slice(0, 16)
}

export type ByteDecision =
  | { status: 304 }
  | { status: 200 | 206 | 404 | 410 | 451, start: number, end: number, headers: Headers }

/**
 * Decides a byte response of `size` bytes from If-None-Match and Range
 * (nothing is written): 304, 200 or 206 with the slice [start, end) and the
 * final headers. Throws 416 when the range cannot be satisfied.
 */
export function decideBytes (req: IncomingMessage, size: number, headers: Headers): ByteDecision {
  const etag = headers.etag as string
  if (etagMatches(req, etag)) return { status: 304 }
  const ifRange = typeof req.headers['if-range'] === 'string' ? req.headers['if-range'] : undefined
  const decision = evaluateRange(req.headers.range, size, ifRange, etag)
  if (decision.kind === 'unsatisfiable') {
    throw new RangeOutsideError(`the requested range is outside the ${size} bytes of this resource`, size)
  }
  if (decision.kind === 'partial') {
    return {
      status: 206,
      start: decision.start,
      end: decision.end + 1,
      headers: {
        ...headers,
        'accept-ranges': 'bytes',
        'content-range': `bytes ${decision.start}-${decision.end}/${size}`,
        'content-length': String(decision.end - decision.start + 1)
      }
    }
  }
  return { status: 200, start: 0, end: size, headers: { ...headers, 'accept-ranges': 'bytes', 'content-length': String(size) } }
}

/**
 * Sends an in-memory body (a block) with Range / 304 / HEAD handling: one
 * piece at once, a larger body piece by piece within the send budget
 * (pump.ts), so a slow client cannot park a whole block in its socket queue.
 */
export async function sendBytes (req: IncomingMessage, res: ServerResponse, bytes: Uint8Array, headers: Headers): Promise<void> {
  const d = decideBytes(req, bytes.byteLength, headers)
  if (d.status === 304) { sendNotModified(res, headers); return }
  res.writeHead(d.status, d.headers)
  if (req.method === 'HEAD') { res.end(); return }
  const body = bytes.subarray(d.start, d.end)
  if (body.byteLength <= PIECE_BYTES) { res.end(body); return }
  await pump(res, piecesOf(body), responseSignal(res))
}

export function mediaTypeOf (format: Exclude<GatewayRequest['format'], 'deserialized'>): string {
  return FORMAT_MEDIA_TYPES[format]
}
