/**
 * Fetch claims on the LMDB ledger (PinLedger.claimFetches): one serve opens
 * a data dir, so its claims live in memory, timed by Date.now(). A claim
 * counts only while its pin is in the fetch queue: finishing, failing,
 * removing or taking down a pin ends its claim with its queue entry.
 */
import type { PinRecord } from '../records.js'

export interface ClaimableQueue {
  /** the fetch queue, oldest first */
  pendingFetches: () => string[]
  get: (requestid: string) => PinRecord | undefined
}

export class FetchClaims {
  private readonly claims = new Map<string, { holder: string, until: number }>()

  constructor (private readonly queue: ClaimableQueue) {}

  /** PinLedger.claimFetches */
  claim (holder: string, limit: number, leaseMs: number, dueBy = new Date()): string[] {
    const now = Date.now()
    const pending = this.queue.pendingFetches()
    this.forgetLeft(pending)
    const out: string[] = []
    for (const id of pending) {
      if (out.length >= limit) break
      const c = this.claims.get(id)
      if (c != null && c.until > now) continue
      const next = this.queue.get(id)?.fetch?.nextAttemptAt
      if (next != null && Date.parse(next) > dueBy.getTime()) continue
      this.claims.set(id, { holder, until: now + leaseMs })
      out.push(id)
    }
    return out
  }

  /** PinLedger.renewFetches */
  renew (holder: string, requestids: string[], leaseMs: number): string[] {
    const queued = new Set(this.queue.pendingFetches())
    const until = Date.now() + leaseMs
    const out: string[] = []
    for (const id of new Set(requestids)) {
      const c = this.claims.get(id)
      if (c == null || c.holder !== holder) continue
      if (!queued.has(id)) {
        this.claims.delete(id)
        continue
      }
      c.until = until
      out.push(id)
    }
    return out
  }

  /** PinLedger.releaseFetches */
  release (holder: string, requestids?: string[]): void {
    for (const id of requestids ?? [...this.claims.keys()]) {
      if (this.claims.get(id)?.holder === holder) this.claims.delete(id)
    }
  }

  /** claims of pins no longer in the queue end */
  private forgetLeft (pending: string[]): void {
    if (this.claims.size === 0) return
    const queued = new Set(pending)
    for (const id of this.claims.keys()) if (!queued.has(id)) this.claims.delete(id)
  }
}
