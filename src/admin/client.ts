/**
 * Talks to a running serve over its admin socket (HTTP on a Unix socket).
 */
import { Agent, request } from 'undici'

export class AdminCallError extends Error {
  override name = 'AdminCallError'
  constructor (readonly status: number, readonly reason: string, details: string) {
    super(details)
  }
}

export async function callAdmin (socketPath: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const dispatcher = new Agent({ connect: { socketPath } })
  try {
    const r = await request(`http://pind-admin${path}`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body)
    })
    const json = await r.body.json() as Record<string, unknown>
    if (r.statusCode >= 400) {
      const e = (json.error ?? {}) as { reason?: string, details?: string }
      throw new AdminCallError(r.statusCode, e.reason ?? 'ERROR', e.details ?? `admin call failed with status ${r.statusCode}`)
    }
    return json
  } finally {
    await dispatcher.close()
  }
}
