/**
 * The leases this serve keeps on work that runs on one front end at a time
 * (src/ledger/coordination.ts): taken at start and renewed every third of
 * their term, so a front end that dies or loses the ledger lets go within
 * one term and another takes the work over at its next renewal. A lease
 * counts as held only until its term, measured from before the request that
 * took it, has run out here: a front end cut off from the ledger stops the
 * work before the ledger hands it to another.
 */
import type { Leases } from '../../ledger/coordination.js'
import type { Logger } from '../../kernel/log.js'

export interface LeaseKeeperOptions {
  leases: Leases
  /** this front end (its peer id) */
  holder: string
  names: readonly string[]
  ttlMs: number
  log: Logger
}

export class LeaseKeeper {
  /** performance.now() until which each lease is ours */
  private readonly until = new Map<string, number>()
  private timer: NodeJS.Timeout | undefined
  private renewing: Promise<void> | undefined
  private stopped = false

  constructor (private readonly o: LeaseKeeperOptions) {}

  /** takes what it can now, then renews on a timer */
  async start (): Promise<void> {
    await this.renew()
    this.timer = setInterval(() => { void this.renew() }, Math.max(1, Math.floor(this.o.ttlMs / 3)))
    this.timer.unref()
  }

  /** whether this front end holds `name` now */
  holds (name: string): boolean {
    return (this.until.get(name) ?? -Infinity) > performance.now()
  }

  /** the leases held now */
  held (): string[] {
    return this.o.names.filter(n => this.holds(n))
  }

  /** one round of taking and renewing (the timer's; at most one at a time) */
  async renew (): Promise<void> {
    this.renewing ??= this.round().finally(() => { this.renewing = undefined })
    await this.renewing
  }

  async stop (): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    await this.renewing
    // let go at once, so another front end need not wait for the term to run out
    for (const name of this.held()) {
      this.until.delete(name)
      await this.o.leases.release(name, this.o.holder).catch(() => {})
    }
  }

  private async round (): Promise<void> {
    for (const name of this.o.names) {
      if (this.stopped) return
      const asked = performance.now()
      try {
        const had = this.holds(name)
        if (await this.o.leases.take(name, this.o.holder, this.o.ttlMs)) {
          this.until.set(name, asked + this.o.ttlMs)
          if (!had) this.o.log.info('lease taken', { lease: name })
        } else {
          if (had) this.o.log.warn('lease lost to another front end', { lease: name })
          this.until.delete(name)
        }
      } catch (err) {
        // kept until its term runs out here; the next round tries again
        this.o.log.warn('could not renew a lease', { lease: name, error: (err as Error).message })
      }
    }
  }
}
