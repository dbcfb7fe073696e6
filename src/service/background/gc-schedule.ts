/**
 * gc inside serve, as Kubo's `--enable-gc`: a run every interval
 * (--gc-interval), and one as soon as the bytes released since the last run
 * pass a watermark (--gc-watermark). Released bytes are an estimate, summed
 * as pins let go of blocks no other pin holds (PinLedger.watchReleased) and
 * as failed uploads leave blocks behind: nothing walks the store to decide
 * whether to run. A run is `pind gc`'s (gc.ts), safe beside uploads under the
 * commit lock; one at a time; stop() aborts a run between two delete batches
 * and waits for it.
 */
import type { Logger } from '../../kernel/log.js'
import { runGc, type GcDeps, type GcResult } from './gc.js'
import type { Maintenance } from './maintenance.js'

/** after a failed run (the bucket away), the watermark starts no run for this long */
const WATERMARK_RETRY_MS = 60_000
/**
 * after a run skipped because another maintenance task ran, the watermark tries again this much later
 * (not at once: a skip takes no time, so trying again as it ends would loop without yielding, and the
 * task it waits for would never get to finish)
 */
const SKIPPED_RETRY_MS = 5_000

export type GcTrigger = 'interval' | 'watermark'

export interface GcRunReport {
  trigger: GcTrigger
  outcome: 'done' | 'failed' | 'stopped' | 'skipped'
  removedBlocks: number
  freedBytes: number
  seconds: number
}

export interface GcScheduleOptions {
  /** 0: no run on a schedule */
  intervalMs: number
  /** 0: no run by watermark */
  watermarkBytes: number
  log: Logger
  /** the serve's one maintenance task at a time: a run skips its turn while another task (an admin gc, blocks migrate) runs */
  maintenance?: Pick<Maintenance, 'busy' | 'run'>
  /** resolves once the ledger's pending writes have committed (PinLedger.committed): releases are told before their commit */
  committed?: () => Promise<void>
  /** each run, when it ends (metrics) */
  onRun?: (r: GcRunReport) => void
  /** how long the watermark waits after a skipped run before it tries again (default SKIPPED_RETRY_MS) */
  skippedRetryMs?: number
  /** runs by interval and watermark happen only while it says so (this front end holds gc's lease: ./lease-keeper.ts) */
  when?: () => boolean
}

export class GcSchedule {
  private estimate = 0
  private running: Promise<GcResult | undefined> | undefined
  private readonly abort = new AbortController()
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  /** after a failed or skipped run, the watermark starts none before this (performance.now(); the interval does) */
  private watermarkNotBefore = -Infinity
  private retry: NodeJS.Timeout | undefined

  constructor (private readonly gc: GcDeps, private readonly opts: GcScheduleOptions) {}

  /** runs every interval from now on (the watermark's runs need no start) */
  start (): void {
    if (this.opts.intervalMs > 0 && this.timer == null && !this.stopped) {
      this.timer = setInterval(() => { if (this.opts.when?.() !== false) void this.run('interval') }, this.opts.intervalMs)
      this.timer.unref()
    }
  }

  /** bytes of blocks no pin references any more, by estimate, since the last run's mark */
  get unreferencedBytes (): number {
    return this.estimate
  }

  /** blocks no pin holds any more (an estimate of their bytes): a run starts once they pass the watermark */
  released (bytes: number): void {
    this.estimate += bytes
    this.checkWatermark()
  }

  /** one run now, or the one under way; undefined when it failed or was stopped (logged) */
  async run (trigger: GcTrigger): Promise<GcResult | undefined> {
    if (this.stopped) return undefined
    this.running ??= this.once(trigger).finally(() => {
      this.running = undefined
      this.checkWatermark()
    })
    return await this.running
  }

  async stop (): Promise<void> {
    this.stopped = true
    if (this.timer != null) clearInterval(this.timer)
    if (this.retry != null) clearTimeout(this.retry)
    this.abort.abort()
    await this.running
  }

  private checkWatermark (): void {
    if (this.opts.watermarkBytes > 0 && this.estimate >= this.opts.watermarkBytes && this.running == null && !this.stopped &&
      performance.now() >= this.watermarkNotBefore && this.opts.when?.() !== false) void this.run('watermark')
  }

  /** the watermark starts no run for `ms`, then looks again (a release meanwhile does not start one either) */
  private holdWatermark (ms: number): void {
    this.watermarkNotBefore = performance.now() + ms
    if (this.retry != null) clearTimeout(this.retry)
    // the hold ends when the timer fires: its clock (libuv's, cached per loop turn) may run a little
    // behind performance.now(), and a check against watermarkNotBefore then would never look again
    this.retry = setTimeout(() => { this.retry = undefined; this.watermarkNotBefore = 0; this.checkWatermark() }, ms)
    this.retry.unref()
  }

  private async once (trigger: GcTrigger): Promise<GcResult | undefined> {
    const m = this.opts.maintenance
    if (m == null) return await this.collect(trigger)
    if (m.busy) {
      this.opts.onRun?.({ trigger, outcome: 'skipped', removedBlocks: 0, freedBytes: 0, seconds: 0 })
      this.opts.log.info('gc skipped: another maintenance task is running', { trigger })
      this.holdWatermark(this.opts.skippedRetryMs ?? SKIPPED_RETRY_MS)
      return undefined
    }
    return await m.run('scheduled gc', async () => await this.collect(trigger), { waitable: true })
  }

  private async collect (trigger: GcTrigger): Promise<GcResult | undefined> {
    const t0 = performance.now()
    const log = this.opts.log
    // what was released before the mark is this run's to remove; what comes after is the next one's
    let before = this.estimate
    const estimateAtStart = this.estimate
    log.info('gc started', { trigger, unreferencedBytes: estimateAtStart })
    let removedBlocks = 0
    let freedBytes = 0
    const report = (outcome: GcRunReport['outcome']): void => {
      this.opts.onRun?.({ trigger, outcome, removedBlocks, freedBytes, seconds: (performance.now() - t0) / 1000 })
    }
    try {
      // a release that started this run was told from inside its transaction: the mark must see it committed
      await new Promise(resolve => setImmediate(resolve))
      await this.opts.committed?.()
      const r = await runGc(this.gc, {}, (p) => {
        if (p.phase === 'mark') before = this.estimate
        removedBlocks = p.removed
        freedBytes = p.freedBytes
      }, this.abort.signal)
      this.estimate = Math.max(0, this.estimate - before)
      removedBlocks = r.removedBlocks
      freedBytes = r.freedBytes
      report('done')
      log.info('gc done', { trigger, expiredPins: r.expiredPins, scannedBlocks: r.scannedBlocks, removedBlocks: r.removedBlocks, freedBytes: r.freedBytes, keptBlocks: r.keptBlocks, ms: r.ms })
      return r
    } catch (err) {
      if (this.abort.signal.aborted) {
        report('stopped')
        log.info('gc stopped by the shutdown', { trigger, removedBlocks, freedBytes })
      } else {
        this.holdWatermark(WATERMARK_RETRY_MS)
        report('failed')
        log.warn('gc failed: the next run tries again', { trigger, removedBlocks, freedBytes, error: (err as Error).message })
      }
      return undefined
    }
  }
}
