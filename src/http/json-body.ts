/**
 * Reads a JSON request body with a size limit enforced on the bytes actually
 * received (not on Content-Length).
 */
import type { IncomingMessage } from 'node:http'
import { InputTooLargeError, InvalidInputError, UnsupportedFormatError } from '../kernel/errors.js'

export const DEFAULT_JSON_LIMIT = 64 * 1024

export async function readJson (req: IncomingMessage, limit = DEFAULT_JSON_LIMIT): Promise<unknown> {
  const type = req.headers['content-type'] ?? ''
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new UnsupportedFormatError('send the body as application/json')
  }
  const declared = Number(req.headers['content-length'] ?? 0)
  if (declared > limit) throw new InputTooLargeError(`JSON bodies are limited to ${limit} bytes`)
  // listeners, not `for await`: leaving an async iterator early destroys the request, and
  // the connection with it; stopping here leaves the rest for the server to drain
  const text = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const done = (err?: Error): void => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('aborted', onAborted)
      if (err != null) { req.pause(); reject(err) } else resolve(chunks.length === 1 ? chunks[0] as Buffer : Buffer.concat(chunks))
    }
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > limit) { done(new InputTooLargeError(`JSON bodies are limited to ${limit} bytes`)); return }
      chunks.push(chunk)
    }
    const onEnd = (): void => { done() }
    const onError = (): void => { done(new InvalidInputError('the request body was cut short')) }
    const onAborted = (): void => { done(new InvalidInputError('the request body was cut short')) }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
    req.on('aborted', onAborted)
  })
  try {
    return JSON.parse(text.toString('utf8'))
  } catch {
    throw new InvalidInputError('the body is not valid JSON')
  }
}
