/**
 * A fixed number of things allowed to run at once. `take` is refused rather
 * than queued when all are in use: the caller answers "busy, retry" before it
 * commits to any work (or touches a payment).
 */
export class Slots {
  private used = 0

  constructor (readonly size: number) {}

  take (): boolean {
    if (this.used >= this.size) return false
    this.used++
    return true
  }

  release (): void {
    if (this.used > 0) this.used--
  }

  inUse (): number {
    return this.used
  }
}
