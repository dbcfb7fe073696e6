/**
 * Front ends that stopped for good, handed over. Run on one front end at a
 * time (its lease): every interval, each recorded front end that has not
 * beaten for `deadAfterMs` (killed, or stopped and not back) is forgotten,
 * and the keys it announced last are made due at once in the shared provide
 * schedule (ProvideSchedule.reannounce), so a live front end re-announces
 * them: a CID whose DHT records name only a dead front end is findable again
 * within `deadAfterMs` plus an interval (plus the lease's term, when the
 * holder of this work is the one that died), not when its records expire.
 * A restart inside `deadAfterMs` hands nothing over: the front end comes
 * back with its peer id, which its records name.
 */
import type { FrontEnds } from '../../ledger/coordination.js'
import type { ProvideSchedule } from '../../ledger/provides.js'
import type { Logger } from '../../kernel/log.js'

export interface FrontEndTakeoverOptions {
  frontEnds: Pick<FrontEnds, 'list' | 'forget'>
  provides: Pick<ProvideSchedule, 'reannounce'>
  /** this front end: never handed over by itself */
  self: string
  deadAfterMs: number
  intervalMs: number
  /** whether this front end holds the work's lease now */
  when: () => boolean
  log: Logger
}

export class FrontEndTakeover {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<number> | undefined

  constructor (private readonly o: FrontEndTakeoverOptions) {}

  start (): void {
    this.timer = setInterval(() => { void this.run().catch((err: unknown) => { this.o.log.warn('could not hand over the front ends that stopped', { error: (err as Error).message }) }) }, this.o.intervalMs)
    this.timer.unref()
  }

  /** one pass (the timer's; at most one at a time): how many front ends were handed over */
  async run (): Promise<number> {
    this.running ??= this.pass().finally(() => { this.running = undefined })
    return await this.running
  }

  async stop (): Promise<void> {
    clearInterval(this.timer)
    await this.running?.catch(() => {})
  }

  private async pass (): Promise<number> {
    if (!this.o.when()) return 0
    const alive = new Set((await this.o.frontEnds.list(this.o.deadAfterMs)).map(f => f.id))
    let n = 0
    for (const fe of await this.o.frontEnds.list()) {
      if (alive.has(fe.id) || fe.id === this.o.self) continue
      const keys = await this.o.provides.reannounce(fe.id)
      await this.o.frontEnds.forget(fe.id)
      n++
      this.o.log.info('a front end stopped beating: forgotten, its provider records handed over', { frontEnd: fe.id, url: fe.url, seenAt: fe.seenAt, ...(fe.leftAt != null ? { leftAt: fe.leftAt } : {}), keys })
    }
    return n
  }
}
