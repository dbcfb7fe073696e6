/**
 * Small helpers for writing responses on node:http.
 */
import type { ServerResponse } from 'node:http'

export function sendJson (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body, (_k, v: unknown) => typeof v === 'bigint' ? v.toString() : v)
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers
  })
  res.end(res.req.method === 'HEAD' ? undefined : text)
}
