/**
 * Work that must still happen after its request has answered, retried with
 * backoff while the process runs: a paid upload whose blocks could not be
 * stored because the block storage went away between the settlement and the
 * commit is committed and recorded once the storage answers again. (Should
 * the process stop first, its settlement note and kept staging folder are
 * there for reconciliation.)
 */
import type { Logger } from '../../kernel/log.js'

const FIRST_DELAY_MS = 1_000
const MAX_DELAY_MS = 60_000

export class RetryLater {
  private readonly timers = new Set<NodeJS.Timeout>()
  private stopped = false

  constructor (private readonly log: Logger) {}

  /** Runs `job` after a second, and again with backoff until it succeeds or `final(err)` says the error ends it. */
  schedule (what: string, job: () => Promise<void>, final: (err: unknown) => boolean = () => false, delay = FIRST_DELAY_MS): void {
    if (this.stopped) return
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      job().catch((err: unknown) => {
        if (final(err)) {
          this.log.info(`${what}: given up`, { error: err })
          return
        }
        this.log.debug(`${what}: will retry`, { error: err })
        this.schedule(what, job, final, Math.min(delay * 2, MAX_DELAY_MS))
      })
    }, delay)
    timer.unref()
    this.timers.add(timer)
  }

  pending (): number {
    return this.timers.size
  }

  stop (): void {
    this.stopped = true
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
  }
}
