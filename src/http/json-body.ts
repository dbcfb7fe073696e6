/**
 * Reads a JSON request body with a size limit enforced on the bytes actually
 * received (not on Content-Length).
 */
import type { IncomingMessage } from 'node:http'
import { badRequest, HttpError, tooLarge } from '../errors.js'

export const DEFAULT_JSON_LIMIT = 64 * 1024

export async function readJson (req: IncomingMessage, limit = DEFAULT_JSON_LIMIT): Promise<unknown> {
  const type = req.headers['content-type'] ?? ''
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json')
  }
  const declared = Number(req.headers['content-length'] ?? 0)
  if (declared > limit) throw tooLarge(`JSON bodies are limited to ${limit} bytes`)
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > limit) throw tooLarge(`JSON bodies are limited to ${limit} bytes`)
    chunks.push(chunk)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw badRequest('the body is not valid JSON')
  }
}
