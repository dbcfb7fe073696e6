/**
 * A process-wide budget of bytes wanted from the network by the pin fetches
 * running at once (fetch-dag.ts), each want counted at its fetch's largest
 * block so far (a MiB before the first block arrives). The fetches share one
 * budget because what arrives is held about twice (bitswap messages gathered,
 * then joined) and memory peaks rose with concurrent fetches
 * (docs/internals.md, fetch-budget.ts).
 *
 * A want is taken at an estimate and counted at its real size once its block
 * arrives, until the block is staged; an estimate too small lets one round of
 * a fetch's window go past the budget, and the next wants use the sizes seen.
 *
 * As in chunk-budget.ts, a fetch with nothing in flight is granted one want at
 * once, over the budget if need be, so every fetch progresses (and its stall
 * timer measures its origin, not the budget); a fetch refused waits to be
 * woken when others give bytes back.
 */
export class FetchBudget {
  private used = 0
  private readonly waiting = new Set<() => void>()

  constructor (readonly limit: number) {}

  /** takes `bytes` for a want if the budget allows (always when `inFlight` is 0); false: call `onRelease` */
  tryTake (bytes: number, inFlight: number): boolean {
    if (inFlight > 0 && this.used + bytes > this.limit) return false
    this.used += bytes
    return true
  }

  /** a want's bytes arrived: counted as they are from now on (more or fewer than it was taken for) */
  arrived (taken: number, bytes: number): void {
    this.used += bytes - taken
  }

  give (bytes: number): void {
    this.used -= bytes
    // every waiting fetch tries again (each takes what it can; the others wait again)
    const wake = [...this.waiting]
    this.waiting.clear()
    for (const w of wake) w()
  }

  /** `wake` runs once, at the next give */
  onRelease (wake: () => void): void {
    this.waiting.add(wake)
  }

  /** a fetch that ends while waiting */
  forget (wake: () => void): void {
    this.waiting.delete(wake)
  }

  inUse (): number {
    return this.used
  }
}
