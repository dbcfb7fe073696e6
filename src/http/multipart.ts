/**
 * Streaming multipart/form-data for POST /upload: one file part named "file"
 * and nothing else (readSingleFile), or several, a directory's (readFiles).
 * Each file part is handed to `consume` as a stream while the body is still
 * arriving; nothing is buffered whole.
 */
import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import { Busboy } from '@fastify/busboy'
import { z } from 'zod/v4'
import { BodyTooLargeError, InvalidInputError } from '../kernel/errors.js'

/**
 * The form POST /upload takes: one part, the file, named by this schema's
 * only key (readSingleFile refuses any other part). OpenAPI: UploadRequest,
 * derived from this (src/http/openapi.ts adds the size limit).
 */
export const UploadRequest = z.object({
  file: z.string().meta({ contentMediaType: 'application/octet-stream', description: 'the file; its filename is kept as the pin\'s name' })
}).strict().meta({ description: 'multipart/form-data with exactly one part, named file' })

/** the name of the one part */
const FILE_PART = UploadRequest.keyof().options[0] as string

export interface UploadedFile {
  filename: string
  mimeType: string
  stream: Readable
}

const MAX_PARTS = 4

export function assertMultipart (req: IncomingMessage): void {
  const type = req.headers['content-type'] ?? ''
  if (!/^multipart\/form-data\s*;.*boundary=/i.test(type)) {
    throw new InvalidInputError('the body must be multipart/form-data (with a boundary) carrying one file part named "file"')
  }
}

export { BodyTooLargeError }

export interface ReadOptions {
  /** the most body bytes read in all (a parser skips a preamble: the file's own cap does not see it) */
  maxBodyBytes?: number
  /** gives up (with the signal's reason) when it aborts */
  signal?: AbortSignal
}

/** One file part: `consume` gets it as a stream while the body still arrives. */
export async function readSingleFile<T> (req: IncomingMessage, consume: (file: UploadedFile) => Promise<T>, opts: ReadOptions = {}): Promise<T> {
  return await readFiles(req, async (files) => {
    for await (const file of files) return await consume(file)
    throw noFile()
  }, { ...opts, maxFiles: 1 })
}

const noFile = (): InvalidInputError => new InvalidInputError('the form has no part named "file": send the file as a multipart part named "file"')

/**
 * Several file parts, all named "file" (a directory's files, each named by
 * its path): `consume` gets them one after the other as they arrive, each a
 * stream to read to its end before the next comes (the parser waits on it).
 * At most `maxFiles`; any other part or field is refused, as is a form
 * without a file.
 */
export async function readFiles<T> (req: IncomingMessage, consume: (files: AsyncIterable<UploadedFile>) => Promise<T>, opts: ReadOptions & { maxFiles: number }): Promise<T> {
  assertMultipart(req)
  const maxParts = opts.maxFiles === 1 ? MAX_PARTS : opts.maxFiles + 1
  let bb
  try {
    // preservePath: a directory's file parts are named by their paths
    bb = new Busboy({ headers: req.headers as { 'content-type': string }, preservePath: opts.maxFiles > 1, limits: { parts: maxParts, fieldSize: 1024, headerPairs: 20 } })
  } catch {
    throw new InvalidInputError('malformed multipart/form-data header')
  }
  return await new Promise<T>((resolve, reject) => {
    let failure: unknown
    /** the failure is a part stream's AbortError: the consumer stopped reading it (its own error says why) */
    let failureIsConsumerStop = false
    let fileStream: Readable | undefined
    let consumed: Promise<T> | undefined
    let finished = false
    let read = 0
    let files = 0
    /** parts arrived and not yet taken by the consumer; who waits for the next */
    const waiting: UploadedFile[] = []
    let wake: (() => void) | undefined
    const count = (chunk: Buffer): void => {
      read += chunk.length
      if (opts.maxBodyBytes != null && read > opts.maxBodyBytes) fail(new BodyTooLargeError(opts.maxBodyBytes))
    }
    const abort = (): void => { fail(opts.signal?.reason) }
    const fail = (err: unknown): void => {
      if (failure != null) return
      failure = err
      fileStream?.destroy(err as Error)
      req.unpipe(bb)
      req.resume()
      wake?.()
      settle()
    }
    const settle = (): void => {
      req.off('data', count)
      opts.signal?.removeEventListener('abort', abort)
      if (failure != null) {
        // wait for the consumer to let go of the stream before reporting
        if (consumed == null) reject(failure)
        else consumed.then(() => { reject(failure) }, (err: unknown) => { reject(failureIsConsumerStop ? err : failure) })
        return
      }
      if (!finished) return
      wake?.()
      if (consumed == null) {
        reject(noFile())
        return
      }
      consumed.then(resolve, reject)
    }
    const parts = async function * (): AsyncGenerator<UploadedFile> {
      for (;;) {
        if (failure != null) throw failure
        const next = waiting.shift()
        if (next != null) {
          yield next
          continue
        }
        if (finished) return
        await new Promise<void>(resolve => { wake = resolve })
        wake = undefined
      }
    }
    bb.on('file', (name, stream, filename, _enc, mimeType) => {
      // a body cut inside this part errors the part's stream; whoever reads it sees the error
      // through its iterator, and once nobody does (refused, or the consumer stopped) it must
      // not become an uncaught 'error' that takes the process down
      stream.on('error', (err: Error) => {
        // an AbortError is the consumer letting go of the stream (an import that refused it and is
        // still tidying up, say): the consumer's own failure, when it comes, is the answer
        if (failure == null && err.name === 'AbortError') failureIsConsumerStop = true
        fail(new InvalidInputError(`malformed or truncated multipart/form-data body (${err.message.slice(0, 80)})`))
      })
      if (failure != null) {
        // already refused (busboy may still emit parts it had buffered): never start a consumer now
        stream.resume()
        return
      }
      if (name !== FILE_PART) {
        stream.resume()
        fail(new InvalidInputError(`unexpected form part "${name}": send ${opts.maxFiles === 1 ? 'exactly one part' : 'only parts'}, named "file"`))
        return
      }
      if (++files > opts.maxFiles) {
        stream.resume()
        fail(new InvalidInputError(opts.maxFiles === 1 ? 'more than one "file" part: send exactly one file per upload' : `more than ${opts.maxFiles} "file" parts: at most ${opts.maxFiles} files per upload`))
        return
      }
      fileStream = stream
      waiting.push({ filename, mimeType, stream })
      wake?.()
      if (consumed == null) {
        consumed = consume(parts())
        // the consumer gave up (e.g. the byte cap): stop parsing now rather than wait for a body nobody reads
        consumed.catch((err: unknown) => { fail(err) })
      }
    })
    bb.on('field', (name) => { fail(new InvalidInputError(`unexpected form field "${name}": send ${opts.maxFiles === 1 ? 'exactly one part' : 'only parts'}, named "file"`)) })
    bb.on('partsLimit', () => { fail(new InvalidInputError(opts.maxFiles === 1 ? `too many form parts (at most ${MAX_PARTS}); send exactly one part, named "file"` : `more than ${opts.maxFiles} "file" parts: at most ${opts.maxFiles} files per upload`)) })
    bb.on('error', () => { fail(new InvalidInputError('malformed or truncated multipart/form-data body')) })
    bb.on('finish', () => {
      finished = true
      settle()
    })
    // a client that left before its body was read to the end: 'aborted' (body cut short), or a request
    // destroyed ('close') before its end reached the parser — also before this reader started (e.g.
    // while the payment was verified), when no event comes any more: piping it would wait for ever
    const gone = (): void => { if (!req.readableEnded) fail(new InvalidInputError('the client aborted the upload')) }
    if (req.destroyed) { gone(); if (failure != null) return }
    req.on('aborted', gone)
    req.on('close', gone)
    if (opts.maxBodyBytes != null) req.on('data', count)
    if (opts.signal != null) {
      if (opts.signal.aborted) { abort(); return }
      opts.signal.addEventListener('abort', abort)
    }
    req.pipe(bb)
  })
}
