/**
 * Talks to a running serve over its admin socket (HTTP on a Unix socket).
 * A JSON call is one request of node:http; undici, for the streamed calls
 * only, loads when one is made (evaluating it was ~90 ms of every command's
 * start, and a third of `pind keys mint`'s).
 */
import { request as httpRequest, type RequestOptions } from 'node:http'
import { socketPath as shortPath } from '../http/unix-socket.js'
import type { AdminJsonPath, AdminJsonRoutes, AdminLinePath, AdminLineRoutes } from './api.js'

export class AdminCallError extends Error {
  override name = 'AdminCallError'
  constructor (readonly status: number, readonly reason: string, details: string) {
    super(details)
  }
}

export async function callAdmin<P extends AdminJsonPath> (socketPath: string, path: P, body: AdminJsonRoutes[P]['request']): Promise<AdminJsonRoutes[P]['reply']> {
  const at = shortPath(socketPath)
  try {
    const payload = Buffer.from(JSON.stringify(body))
    const r = await new Promise<{ status: number, text: string }>((resolve, reject) => {
      const options: RequestOptions & { servername: string } = {
        socketPath: at.path,
        // no TLS on a Unix socket: else node's agent works out a server name from the host, whose
        // IPv6 check (a pattern V8 compiles at its first use) was ~4% of `pind keys mint`
        servername: '',
        path,
        method: 'POST',
        headers: { host: 'pind-admin', 'content-type': 'application/json', 'content-length': payload.byteLength }
      }
      const req = httpRequest(options, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => { chunks.push(chunk) })
        res.on('end', () => { resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }) })
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(payload)
    })
    if (r.status >= 400) {
      const json = JSON.parse(r.text) as { error?: { reason?: string, details?: string } }
      const e = json.error ?? {}
      throw new AdminCallError(r.status, e.reason ?? 'ERROR', e.details ?? `admin call failed with status ${r.status}`)
    }
    // the route's reply (src/admin/api.ts), as its route sent it
    return JSON.parse(r.text) as AdminJsonRoutes[P]['reply']
  } finally {
    at.close()
  }
}

/** A streamed admin call: resolves with the raw response (status, headers, body stream). */
export async function openAdminStream (socketPath: string, path: string, body: unknown, signal?: AbortSignal): Promise<{ headers: Record<string, string | string[] | undefined>, body: AsyncIterable<Buffer>, close: () => Promise<void> }> {
  const { Agent, request } = await import('undici')
  const at = shortPath(socketPath)
  const dispatcher = new Agent({ connect: { socketPath: at.path }, bodyTimeout: 0, headersTimeout: 0 })
  let r
  try {
    r = await request(`http://pind-admin${path}`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      ...(signal != null ? { signal } : {})
    })
  } catch (err) {
    await dispatcher.destroy()
    at.close()
    throw err
  }
  if (r.statusCode >= 400) {
    const json = await r.body.json().catch(() => ({})) as { error?: { reason?: string, details?: string } }
    await dispatcher.close()
    at.close()
    throw new AdminCallError(r.statusCode, json.error?.reason ?? 'ERROR', json.error?.details ?? `admin call failed with status ${r.statusCode}`)
  }
  return { headers: r.headers, body: r.body as AsyncIterable<Buffer>, close: async () => { await dispatcher.destroy(); at.close() } }
}

/**
 * Reads a stream of JSON lines (NDJSON) from an admin call: progress events
 * as they come, then the final `{"result": …}` or `{"error": …}` line.
 */
export async function callAdminLines<P extends AdminLinePath> (socketPath: string, path: P, body: AdminLineRoutes[P]['request'], onProgress: (progress: AdminLineRoutes[P]['progress']) => void, signal?: AbortSignal): Promise<AdminLineRoutes[P]['reply']> {
  type Line = { progress?: AdminLineRoutes[P]['progress'], result?: AdminLineRoutes[P]['reply'], error?: { reason?: string, details?: string } }
  const stream = await openAdminStream(socketPath, path, body, signal)
  try {
    let buf = ''
    let result: AdminLineRoutes[P]['reply'] | undefined
    for await (const chunk of stream.body) {
      buf += chunk.toString('utf8')
      let nl: number
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        if (line.trim() === '') continue
        const event = JSON.parse(line) as Line
        if (event.error != null) throw new AdminCallError(500, event.error.reason ?? 'ERROR', event.error.details ?? 'the admin operation failed')
        if (event.result != null) result = event.result
        else if (event.progress != null) onProgress(event.progress)
      }
    }
    if (result == null) throw new AdminCallError(500, 'ERROR', 'the running serve ended the operation without a result (was it stopped?)')
    return result
  } finally {
    await stream.close()
  }
}
