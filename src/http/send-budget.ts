/**
 * What streamed responses (gateway files, CARs, blocks, directory listings)
 * may hold in this process while their clients take the bytes, and how slow
 * a client may be.
 *
 *   - The send budget: one process-wide count of response bytes held in user
 *     space: bytes handed to `res.write()` that the kernel has not taken yet.
 *     A response takes budget for each piece before it writes it and gives it
 *     back once the socket has written it (or when the response closes,
 *     however it closes), so the count cannot leak. A response that finds the
 *     budget spent waits, first in line first served, and reads nothing more
 *     meanwhile. Each response also waits for its own socket ('drain') before
 *     it writes another piece, so a stalled one holds one piece queued.
 *   - A stalled file read gives up the rest of its block: a reader whose
 *     client (or the budget) has not let it write its next piece for
 *     STALL_MS frees the pieces of the block it has not sent and reads the
 *     block again once it may go on (ipfs/content.ts readFile, `pace`).
 *   - A minimum send rate, Kestrel's MinResponseDataRate: counted only while
 *     the response waits for its client (never for a block or the budget),
 *     from the first such wait: once the client has been waited on for
 *     `graceMs`, it must have taken at least `minRate` bytes per second of
 *     that waiting, else its socket is destroyed.
 *
 * Why a byte budget and not only the connection limits: a client that takes
 * one byte every few seconds stays out of the idle timeout, and many such
 * readers each holding a megabyte or two add up to gigabytes.
 */
import { DEFAULT_MIN_SEND_GRACE, DEFAULT_MIN_SEND_RATE, DEFAULT_SEND_BUDGET } from '../config/settings.js'
import type { Logger } from '../kernel/log.js'

/** How long a response must have waited for its own client before it may be cut to give its budget to a response waiting in line. */
export const EVICT_AFTER_MS = 1000

/** The process-wide count of response bytes queued in user space, with a line of waiters. */
export class SendBudget {
  /** bytes held now */
  inUse = 0
  /** times a response had to wait for budget */
  waits = 0
  /** responses cut for taking their bytes slower than the minimum send rate */
  slowCuts = 0
  /** responses cut to give their budget to others while the budget was spent (see evictStalled) */
  evictions = 0
  private readonly line: Array<{ n: number, grant: () => void }> = []
  /** responses that hold budget and wait for their client to take it, longest waiting first */
  private readonly stalled = new Map<object, { since: number, cut: () => void }>()
  private evictTimer: NodeJS.Timeout | undefined

  constructor (public limit: number) {}

  /** responses waiting in line now */
  get waiting (): number { return this.line.length }

  /** `who` (a response) holds budget and waits for its client from now on; `cut` ends it */
  stall (who: object, cut: () => void): void {
    this.stalled.delete(who)
    this.stalled.set(who, { since: Date.now(), cut })
  }

  unstall (who: object): void {
    this.stalled.delete(who)
  }

  /**
   * While responses wait in line for budget, the response that has waited
   * for its own client longest gives its budget up: it is cut once it has
   * waited EVICT_AFTER_MS. Without this, clients that take nothing (each
   * just above the minimum send rate, or within its grace) could hold the
   * whole budget and make every other reader wait for them: the budget
   * would turn a memory attack into a stalled service. A client that keeps
   * taking its bytes never waits that long for itself; a slow reader cut
   * under such pressure can resume with a Range request.
   */
  private evictStalled (): void {
    const now = Date.now()
    while (this.line.length > 0) {
      const oldest = this.stalled.entries().next().value
      if (oldest == null || now - oldest[1].since < EVICT_AFTER_MS) break
      this.stalled.delete(oldest[0])
      this.evictions++
      oldest[1].cut()
    }
    if (this.line.length === 0) {
      clearInterval(this.evictTimer)
      this.evictTimer = undefined
    } else if (this.evictTimer == null) {
      this.evictTimer = setInterval(() => { this.evictStalled() }, EVICT_AFTER_MS / 4)
      this.evictTimer.unref()
    }
  }

  /** takes `n` bytes now if they fit (a piece larger than the whole budget fits an empty one), and nobody waits before */
  tryTake (n: number): boolean {
    if (this.line.length > 0 || !this.fits(n)) return false
    this.inUse += n
    return true
  }

  /** takes `n` bytes, waiting in line for them; a wait ended by `signal` takes nothing */
  async take (n: number, signal?: AbortSignal): Promise<void> {
    if (this.tryTake(n)) return
    signal?.throwIfAborted()
    this.waits++
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        n,
        grant: () => {
          signal?.removeEventListener('abort', onAbort)
          resolve()
        }
      }
      const onAbort = (): void => {
        const i = this.line.indexOf(waiter)
        if (i >= 0) this.line.splice(i, 1)
        reject(signal?.reason)
        this.serve() // the next in line may fit now
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.line.push(waiter)
      this.evictStalled()
    })
  }

  give (n: number): void {
    this.inUse -= n
    if (this.inUse < 0) this.inUse = 0
    this.serve()
  }

  private fits (n: number): boolean {
    return this.inUse + n <= this.limit || this.inUse === 0
  }

  private serve (): void {
    while (this.line.length > 0) {
      const head = this.line[0] as { n: number, grant: () => void }
      if (!this.fits(head.n)) return
      this.line.shift()
      this.inUse += head.n
      head.grant()
    }
  }
}

/** What a response takes from the budget, given back in full when it closes (never twice). */
export class Lease {
  private held = 0
  private closed = false
  constructor (private readonly budget: SendBudget) {}

  tryTake (n: number): boolean {
    if (this.closed || !this.budget.tryTake(n)) return false
    this.held += n
    return true
  }

  async take (n: number, signal?: AbortSignal): Promise<void> {
    await this.budget.take(n, signal)
    if (this.closed) { this.budget.give(n); return }
    this.held += n
  }

  give (n: number): void {
    if (this.closed) return
    const k = Math.min(n, this.held)
    this.held -= k
    this.budget.give(k)
  }

  close (): void {
    if (this.closed) return
    this.closed = true
    const k = this.held
    this.held = 0
    this.budget.give(k)
  }
}

export interface SendSettings {
  /** bytes of response data queued in user space, across all responses */
  budgetBytes: number
  /** bytes per second a client must take while a response waits for it; 0 = no minimum */
  minRate: number
  /** how long a response waits for its client before the minimum applies */
  graceMs: number
}

/** The process's sending limits (the daemon sets them from its settings; tests set their own). */
export const sending: SendSettings & { budget: SendBudget, log?: Logger } = {
  budgetBytes: DEFAULT_SEND_BUDGET,
  minRate: DEFAULT_MIN_SEND_RATE,
  graceMs: DEFAULT_MIN_SEND_GRACE * 1000,
  budget: new SendBudget(DEFAULT_SEND_BUDGET)
}

export function configureSending (s: Partial<SendSettings> & { log?: Logger }): void {
  if (s.budgetBytes != null) { sending.budgetBytes = s.budgetBytes; sending.budget.limit = s.budgetBytes }
  if (s.minRate != null) sending.minRate = s.minRate
  if (s.graceMs != null) sending.graceMs = s.graceMs
  if (s.log != null) sending.log = s.log
}

/** For /metrics. */
export function sendingStatus (): { inUse: number, limit: number, waits: number, slowCuts: number, evictions: number } {
  const b = sending.budget
  return { inUse: b.inUse, limit: b.limit, waits: b.waits, slowCuts: b.slowCuts, evictions: b.evictions }
}
