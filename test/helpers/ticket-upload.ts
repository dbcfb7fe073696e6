/**
 * Uploads by hand over node:http, for tests of prepaid upload tickets: a
 * multipart body written piece by piece, so that a test can hold it halfway
 * (blocks of an upload in flight), finish it, or abort it (a client gone).
 */
import { request } from 'node:http'

export interface OpenUpload {
  /** writes file bytes (resolves once the socket took them) */
  write: (bytes: Uint8Array) => Promise<void>
  /** ends the file and the body */
  end: () => void
  /** the client goes away mid-body */
  abort: () => void
  /** the answer (rejects if the connection fails before one) */
  response: Promise<{ status: number, body: any, headers: Record<string, string | string[] | undefined> }>
}

const BOUNDARY = 'ticket-test-boundary'

export function openUpload (url: string, headers: Record<string, string>): OpenUpload {
  const req = request(`${url}/upload`, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, ...headers } })
  const response = new Promise<{ status: number, body: any, headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        let body: any = text
        try { body = JSON.parse(text) } catch {}
        resolve({ status: res.statusCode ?? 0, body, headers: res.headers })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
  })
  // (an early answer may end the connection while the body is still being written)
  response.catch(() => {})
  req.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`)
  return {
    write: async (bytes) => { await new Promise<void>((resolve) => { req.write(bytes, () => { resolve() }) }) },
    end: () => { req.end(`\r\n--${BOUNDARY}--\r\n`) },
    abort: () => { req.destroy() },
    response
  }
}

/** A whole upload with a ticket. */
export async function uploadWithTicket (url: string, ticket: string, token: string, bytes: Uint8Array): Promise<{ status: number, body: any }> {
  const u = openUpload(url, { 'x-upload-ticket': ticket, authorization: `Bearer ${token}` })
  await u.write(bytes).catch(() => {})
  u.end()
  return await u.response
}
