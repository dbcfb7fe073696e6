/**
 * HTTP/1.1 over a raw TCP socket, for tests that behave like an attacker:
 * send a request head and then the body when (and as slowly as) they like,
 * and watch what the server answers and when it closes the connection.
 */
import { connect, type Socket } from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

export interface RawExchange {
  socket: Socket
  /** the first final (non-1xx) response: its head and (Content-Length) body */
  response: Promise<RawResponse>
  /** resolves when the server answers `100 Continue` (it has taken up the request: send `Expect: 100-continue`) */
  continued: Promise<void>
  /** the connection is gone (closed or reset by either side) */
  closed: Promise<void>
  isClosed(): boolean
  /** writes body bytes; resolves false once the connection can no longer take them */
  write(bytes: Uint8Array | string): Promise<boolean>
}

/** Opens a connection to `url` and sends `head` (lines without the final blank line). */
export function rawRequest (url: string, head: string[], opts: { localAddress?: string } = {}): RawExchange {
  const u = new URL(url)
  const socket = connect({ host: u.hostname, port: Number(u.port), ...(opts.localAddress != null ? { localAddress: opts.localAddress } : {}) })
  let buf = Buffer.alloc(0)
  let closed = false
  let resolveResponse!: (r: RawResponse) => void
  let rejectResponse!: (err: Error) => void
  const response = new Promise<RawResponse>((resolve, reject) => { resolveResponse = resolve; rejectResponse = reject })
  response.catch(() => {})
  let resolveContinued!: () => void
  const continued = new Promise<void>(resolve => { resolveContinued = resolve })
  const done = new Promise<void>(resolve => { socket.once('close', () => { closed = true; resolve() }) })
  socket.on('error', () => {})
  socket.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk])
    const end = buf.indexOf('\r\n\r\n')
    if (end < 0) return
    const lines = buf.subarray(0, end).toString('latin1').split('\r\n')
    const status = Number((lines[0] ?? '').split(' ')[1])
    if (status >= 100 && status < 200) {
      // an interim response (100 Continue): note it, and read on
      buf = buf.subarray(end + 4)
      resolveContinued()
      if (buf.length > 0) socket.emit('data', Buffer.alloc(0))
      return
    }
    const headers: Record<string, string> = {}
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':')
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim()
    }
    const length = Number(headers['content-length'] ?? 0)
    if (buf.length - end - 4 >= length) resolveResponse({ status, headers, body: buf.subarray(end + 4, end + 4 + length).toString() })
  })
  socket.once('close', () => { rejectResponse(new Error(`connection closed before a response (${buf.length} bytes received)`)) })
  socket.write(head.join('\r\n') + '\r\n\r\n')
  return {
    socket,
    response,
    continued,
    closed: done,
    isClosed: () => closed,
    write: async (bytes) => {
      if (closed || socket.destroyed) return false
      return await new Promise<boolean>(resolve => {
        socket.write(bytes, (err) => { resolve(err == null && !closed) })
      })
    }
  }
}

/** The head of a multipart upload of one part named "file", and its closing tail. */
export function multipartFrame (boundary: string, filename = 'file.bin'): { head: Buffer, tail: Buffer } {
  return {
    head: Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${filename}"\r\ncontent-type: application/octet-stream\r\n\r\n`),
    tail: Buffer.from(`\r\n--${boundary}--\r\n`)
  }
}
