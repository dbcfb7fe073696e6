/**
 * Small helpers for writing responses on node:http.
 */
import type { ServerResponse } from 'node:http'

/** `body` is serialized, unless it already is (a Buffer of JSON text). */
export function sendJson (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = Buffer.isBuffer(body) ? body : stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers
  })
  res.end(res.req.method === 'HEAD' ? undefined : text)
}

/** JSON text; bigints (which JSON.stringify refuses) as decimal strings. The replacer runs only when needed: it is slow. */
function stringify (body: unknown): string {
  try {
    return JSON.stringify(body)
  } catch (err) {
    if (!(err instanceof TypeError)) throw err
    return JSON.stringify(body, (_k, v: unknown) => typeof v === 'bigint' ? v.toString() : v)
  }
}
