/**
 * Each payment (payer:nonce) does its work once. A second request carrying the
 * same payment while the first is still running waits for it, then is treated
 * as a retry of a settled payment.
 */
export class PaymentOnce {
  private readonly running = new Map<string, Promise<unknown>>()

  /** Waits until a request doing this payment's work (if one is running) is done with it. */
  async finished (paymentId: string): Promise<void> {
    await this.running.get(paymentId)?.catch(() => {})
  }

  /** whether a request is doing this payment's work now (its settlement note may still be recorded by it) */
  isRunning (paymentId: string): boolean {
    return this.running.has(paymentId)
  }

  async run<T> (paymentId: string, fn: () => Promise<T>): Promise<{ first: true, value: T } | { first: false }> {
    const existing = this.running.get(paymentId)
    if (existing != null) {
      await existing.catch(() => {})
      return { first: false }
    }
    const p = fn()
    this.running.set(paymentId, p)
    try {
      return { first: true, value: await p }
    } finally {
      this.running.delete(paymentId)
    }
  }
}
