/**
 * Writing a streamed body: respects `res.write()` backpressure (waits for
 * 'drain', so a slow client never makes us buffer), stops when the client
 * goes away (the signal from responseSignal), and always closes the source
 * iterator (for await … calls its return() on every early exit).
 *
 * `freeWritten`: each piece handed over to its reader (buffers.ts: a block
 * read from disk) is freed as soon as the socket has written it, rather than
 * at the next garbage collection (issue 18: pieces already written out were
 * most of the ArrayBuffer memory at the soak's peaks).
 */
import { once } from 'node:events'
import type { ServerResponse } from 'node:http'
import { releaseHandedOver } from '../../buffers.js'

/** An AbortSignal that fires when the response closes (client gone, or done). */
export function responseSignal (res: ServerResponse): AbortSignal {
  const controller = new AbortController()
  if (res.closed || res.destroyed) controller.abort()
  else res.once('close', () => { controller.abort() })
  return controller.signal
}

/**
 * What a response may hold queued before the pump waits for 'drain': one
 * block. A block read from S3 comes as the pieces its body arrived in (64 KiB
 * each); they are queued together and go out in one writev, instead of one
 * wait per piece. The pieces are the block's own memory, so this holds no
 * more than writing the block as one buffer did.
 */
export const QUEUED_BYTES = 1_048_576

/**
 * Pumps `source` into `res` and ends it. Returns quietly if the client went
 * away; rethrows other errors (the caller's error mapping then cuts the
 * connection, since headers are already out).
 */
export async function pump (res: ServerResponse, source: AsyncIterable<Uint8Array | string>, signal: AbortSignal, opts: { freeWritten?: boolean } = {}): Promise<void> {
  const free = opts.freeWritten === true
  try {
    for await (const chunk of source) {
      if (signal.aborted) return
      // a write's callback comes once the socket is done with its bytes (not on a failed write:
      // the socket may still hold them then, and the garbage collector frees them later)
      const queued = free && typeof chunk !== 'string'
        ? res.write(chunk, (err) => { if (err == null) releaseHandedOver(chunk) })
        : res.write(chunk)
      // a write that returns false will emit 'drain' once the queue is empty
      if (!queued && res.writableLength >= QUEUED_BYTES) await once(res, 'drain', { signal })
    }
    if (!signal.aborted) res.end()
  } catch (err) {
    if (signal.aborted) return
    throw err
  }
}
