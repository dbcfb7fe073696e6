/**
 * What paid uploads that failed wrote straight to the block store, per payer,
 * over the last hour. Signing an authorization costs nothing, and one that
 * verifies can be sent again and again while it is unused: a payer whose
 * uploads keep failing after their blocks went to the bucket (the client
 * gone mid-body, a body over what was paid for) would have the bucket take
 * and delete again as many bytes as they like. Once a payer's failed
 * uploads wrote more than `allowance` bytes within the hour, their next
 * uploads are staged on local disk (nothing reaches the store before the
 * payment settles) until the hour has passed: their uploads still work,
 * without the PUTs overlapping the body.
 *
 * Kept in memory, per process, for at most MAX_PAYERS payers (the oldest
 * forgotten first).
 */
const WINDOW_MS = 3600_000
const MAX_PAYERS = 10_000

export class FailedWrites {
  /** payer → bytes failed uploads wrote since `since` */
  private readonly byPayer = new Map<string, { bytes: number, since: number }>()

  constructor (private readonly allowance: number, private readonly now: () => number = Date.now) {}

  /** whether `payer`'s next upload may write straight to the store */
  allows (payer: string): boolean {
    const e = this.current(payer)
    return e == null || e.bytes <= this.allowance
  }

  /** a failed upload of `payer` wrote `bytes` to the store (deleted again since) */
  failed (payer: string, bytes: number): void {
    if (bytes <= 0) return
    const e = this.current(payer)
    if (e != null) { e.bytes += bytes; return }
    if (this.byPayer.size >= MAX_PAYERS) this.byPayer.delete(this.byPayer.keys().next().value as string)
    this.byPayer.set(payer, { bytes, since: this.now() })
  }

  private current (payer: string): { bytes: number, since: number } | undefined {
    const e = this.byPayer.get(payer)
    if (e != null && this.now() - e.since > WINDOW_MS) {
      this.byPayer.delete(payer)
      return undefined
    }
    return e
  }
}
