/**
 * Small helpers for writing responses on node:http.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ErrorAnswer } from './error-catalog.js'

/** JSON text serialized already (sendJson writes it as it is) */
export class JsonText {
  constructor (readonly text: string) {}
}

/** `body` is serialized, unless it already is (a Buffer of JSON text, or JsonText). */
export function sendJson (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = Buffer.isBuffer(body) ? body : body instanceof JsonText ? body.text : stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers
  })
  res.end(res.req.method === 'HEAD' ? undefined : text)
}

/** the head of each kept answer, made once: a challenge given again and again is written from the same object */
const answerHeads = new WeakMap<ErrorAnswer, Record<string, string | number>>()

/** An error's answer (./error-catalog.ts): as sendJson would write it. */
export function sendAnswer (res: ServerResponse, a: ErrorAnswer): void {
  let head = answerHeads.get(a)
  if (head == null) {
    head = { 'content-type': 'application/json; charset=utf-8', 'content-length': a.body.byteLength, 'cache-control': 'no-store', ...a.headers }
    answerHeads.set(a, head)
  }
  res.writeHead(a.status, head)
  res.end(res.req.method === 'HEAD' ? undefined : a.text)
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

/** how long a connection stays open after an answer that does not read the body, for the client to read it */
const LINGER_MS = 1000

/**
 * Answers without reading the rest of the request body: the body stops
 * being read (the client's sends stall once the socket buffers are full),
 * the answer goes out, and the connection is cut a moment later. Cut at
 * once, the unread bytes would reset the connection, and the client could
 * lose the answer before it read it.
 */
export function answerUnread (req: IncomingMessage, res: ServerResponse, err: ErrorAnswer): void {
  if (req.complete) {
    // the whole body is in already: an ordinary answer, and the connection may be used again
    sendAnswer(res, err)
    return
  }
  // paused, and taken up as read (read(0)): node:http would otherwise dump the rest of the body after the answer
  req.pause()
  req.read(0)
  sendAnswer(res, err)
  res.once('finish', () => { setTimeout(() => { req.socket?.destroy() }, LINGER_MS).unref() })
}
