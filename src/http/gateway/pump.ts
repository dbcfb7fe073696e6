/**
 * Writing a streamed body within the send budget (../send-budget.ts): each
 * piece takes budget before it is written and gives it back once the socket
 * has written it (the response's lease gives back whatever is left when it
 * closes, however it closes). A response with QUEUE_BYTES queued waits for
 * its socket's 'drain' before writing more, so a slow client makes it hold
 * that much, not more; while the budget is spent, the response that has
 * waited longest for its client is cut (send-budget.ts), and a client slower
 * than the minimum send rate is cut. It stops when the client goes away
 * (responseSignal) and always closes the source iterator.
 *
 * A source may wait for the pump itself before it produces a piece (`pace`,
 * see ipfs/content.ts readFile): a file read held up for long then gives up
 * the block it holds instead of keeping it while its client dawdles.
 *
 * `freeWritten`: each piece handed over (runtime/buffers.ts: a block read
 * from disk) is freed as soon as the socket has written it, rather than at
 * the next garbage collection.
 */
import type { ServerResponse } from 'node:http'
import { releaseHandedOver } from '../../runtime/buffers.js'
import { Lease, sending } from '../send-budget.js'

/** An AbortSignal that fires when the response closes (client gone, or done). */
export function responseSignal (res: ServerResponse): AbortSignal {
  const controller = new AbortController()
  if (res.closed || res.destroyed) controller.abort()
  else res.once('close', () => { controller.abort() })
  return controller.signal
}

/**
 * The piece a response writes at a time, and what it may hold queued before
 * it waits for 'drain' (node's own high-water mark for a socket is 64 KiB as
 * well): the size of the pieces a block is read in (blockstore-fs's reads, an
 * S3 body's pieces). In-memory bodies are cut into pieces of this size.
 */
export const PIECE_BYTES = 65_536

/**
 * What a response may hold queued before it waits for its socket's 'drain':
 * four pieces. Waiting after every piece costs a 'drain' and a promise per
 * 64 KiB, a measurably slower read (docs/internals.md, pump.ts); what all
 * stalled responses hold together is bounded by the send budget.
 */
export const QUEUE_BYTES = 4 * PIECE_BYTES

/**
 * Waits until a response may write a piece of `bytes`: undefined when it may
 * now (its budget is taken), else a promise that settles once it may (or
 * rejects when the response closes). A source that calls it before each piece
 * has that piece's budget taken for it by the time the pump sees the piece.
 */
export type Pace = (bytes: number) => Promise<void> | undefined

/** One response's writer: its lease on the send budget, its drain waits and its send rate. */
export class Sender {
  private readonly lease = new Lease(sending.budget)
  /** budget a source took (pace) for the piece it produces next */
  private prepaid = 0
  private needDrain = false
  private drained?: () => void

  constructor (private readonly res: ServerResponse, private readonly signal: AbortSignal) {
    if (res.closed || res.destroyed) this.lease.close()
    else res.once('close', () => { this.lease.close(); this.drained?.() })
    res.on('drain', () => { this.needDrain = false; this.drained?.() })
  }

  readonly pace: Pace = (bytes) => {
    if (this.prepaid === bytes && !this.needDrain) return undefined
    if (this.prepaid !== 0) { this.lease.give(this.prepaid); this.prepaid = 0 }
    if (!this.needDrain && this.lease.tryTake(bytes)) { this.prepaid = bytes; return undefined }
    return this.readyFor(bytes).then(() => { this.prepaid = bytes })
  }

  /** Writes `source` to the response and ends it; see pump(). */
  async pump (source: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>, opts: { freeWritten?: boolean, paced?: boolean } = {}): Promise<void> {
    const { res, signal } = this
    const free = opts.freeWritten === true
    try {
      for await (const chunk of source) {
        if (signal.aborted) return
        const n = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength
        if (this.prepaid === n) this.prepaid = 0
        else {
          if (this.prepaid !== 0) { this.lease.give(this.prepaid); this.prepaid = 0 }
          await this.readyFor(n)
          if (signal.aborted) return
        }
        // a write's callback comes once the socket is done with its bytes (the lease gives
        // back what a failed or never-called write took when the response closes); a piece
        // handed over is freed then, not on a failed write: the socket may still hold it
        const queued = res.write(chunk, (err) => {
          this.lease.give(n)
          if (free && err == null && typeof chunk !== 'string') releaseHandedOver(chunk)
        })
        // a write that returns false will emit 'drain' once the queue is empty: nothing more is
        // pulled until then (a paced source waits for it itself, see Pace, before its next piece)
        if (!queued && res.writableLength >= QUEUE_BYTES) {
          this.needDrain = true
          if (opts.paced !== true) {
            await this.waitDrain()
            if (signal.aborted) return
          }
        }
      }
      if (!signal.aborted) res.end()
    } catch (err) {
      if (signal.aborted) return
      throw err
    }
  }

  /**
   * Waits for the socket (if it asked for a 'drain'), then for `n` bytes of
   * budget. When the budget is spent, a response whose client has not taken
   * what it last wrote (less than QUEUE_BYTES queued, and the socket full)
   * waits for its client first, not in line: in line it would hold budget its
   * client does not take without being one that may be cut for the line
   * (waitDrain, SendBudget.evictStalled), and responses of clients that take
   * nothing, each holding a piece or three in line, could hold the whole
   * budget while every other reader waited for ever. The line is for
   * responses whose clients are ready for more.
   */
  private async readyFor (n: number): Promise<void> {
    for (;;) {
      if (this.needDrain) await this.waitDrain()
      this.signal.throwIfAborted()
      if (this.lease.tryTake(n)) return
      if (!this.res.writableNeedDrain) break
      this.needDrain = true
    }
    await this.lease.take(n, this.signal)
  }

  /**
   * Waits for 'drain', and cuts the response if its client is below the
   * minimum send rate: as Kestrel's MinResponseDataRate times each write, the
   * bytes queued when the wait starts must go within max(grace, bytes / rate).
   * Timed per wait, not as an average since the start: the kernel takes a
   * socket buffer's worth (megabytes on a fast link) before the first wait, and
   * an average would credit a client that then takes nothing with all of it.
   */
  private async waitDrain (): Promise<void> {
    const { minRate, graceMs } = sending
    const queued = this.res.writableLength
    let timer: NodeJS.Timeout | undefined
    if (minRate > 0) {
      const allowedMs = Math.max(graceMs, queued / minRate * 1000)
      timer = setTimeout(() => { this.cut(queued, allowedMs) }, allowedMs)
      timer.unref()
    }
    const wake = (): void => { this.drained?.() }
    this.signal.addEventListener('abort', wake, { once: true })
    // while the budget is spent, the response that has waited for its client longest gives its budget up
    sending.budget.stall(this, () => { this.evict() })
    try {
      while (this.needDrain && !this.signal.aborted) await new Promise<void>(resolve => { this.drained = resolve })
    } finally {
      sending.budget.unstall(this)
      this.signal.removeEventListener('abort', wake)
      this.drained = undefined
      clearTimeout(timer)
    }
  }

  private evict (): void {
    sending.log?.debug('response cut: the send budget is spent and its client has taken nothing for a while', { queued: this.res.writableLength })
    this.res.destroy()
  }

  private cut (queued: number, waitedMs: number): void {
    sending.budget.slowCuts++
    sending.log?.debug('response cut: its client takes bytes slower than the minimum send rate', {
      minRate: sending.minRate, queued, waitedMs: Math.round(waitedMs)
    })
    this.res.destroy()
  }
}

/**
 * Pumps `source` into `res` and ends it. Returns quietly if the client went
 * away (or was cut); rethrows other errors (the caller's error mapping then
 * cuts the connection, since headers are already out).
 */
export async function pump (res: ServerResponse, source: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>, signal: AbortSignal, opts: { freeWritten?: boolean, sender?: Sender, paced?: boolean } = {}): Promise<void> {
  await (opts.sender ?? new Sender(res, signal)).pump(source, opts)
}

/** `bytes` as pieces of PIECE_BYTES (views: no copy) */
export function * piecesOf (bytes: Uint8Array): Generator<Uint8Array, void, undefined> {
  for (let at = 0; at < bytes.byteLength; at += PIECE_BYTES) yield bytes.subarray(at, Math.min(at + PIECE_BYTES, bytes.byteLength))
}
