/**
 * The expiry sweeper inside serve: every interval, pins whose pinned_until
 * is more than the grace period ago are marked `expired` and release their
 * blocks (which the next gc removes). During the grace period an expired pin
 * is still kept, listed, served and renewable (a courtesy window); once
 * swept it is gone from the owner API and the gateway.
 */
import type { PinLedger } from '../../ledger/pins.js'
import type { Logger } from '../../kernel/log.js'
import { sweepExpired } from './gc.js'
import { startPeriodic } from './periodic.js'

export interface ExpirySweeper {
  /** one sweep now (also used by tests through the schedule) */
  sweep(): Promise<number>
  stop(): Promise<void>
}

/** `when`: sweeps on the schedule only while it says so (./lease-keeper.ts) */
export function startExpirySweeper (pins: PinLedger, graceMs: number, intervalMs: number, log: Logger, when?: () => boolean): ExpirySweeper {
  const periodic = startPeriodic(async () => {
    const n = await sweepExpired(pins, new Date(Date.now() - graceMs))
    if (n > 0) log.info('expired pins swept', { count: n })
    return n
  }, intervalMs, (err) => { log.error('expiry sweep failed', { error: err }) }, when)
  return { sweep: periodic.run, stop: periodic.stop }
}
