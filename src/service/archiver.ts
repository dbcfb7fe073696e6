/**
 * The archiver inside serve: every interval, removed pins whose removal is
 * older than the payment timeout (plus a minute for clocks) move with their
 * payments from ledger.mdb to ledger-archive.mdb (PinLedger.archiveRemoved,
 * src/ledger/archive.ts: why). By then no payment signed before the removal
 * is valid any more, so no retry can ask for the pin. Batches of a hundred
 * (small transactions: PinLedger's ARCHIVE_BATCH says why), each its own
 * pair of commits, with the event loop free between them, all
 * in one opening of the archive file per pass (PinLedger.archiveDue).
 */
import type { PinLedger } from '../ledger/pins.js'
import type { Logger } from '../log.js'
import { startPeriodic } from './periodic.js'

export interface Archiver {
  /** one pass now: moves everything due; the number of pins moved */
  pass(): Promise<number>
  stop(): Promise<void>
}

/** how long after a removal a pin moves: the payment timeout and a minute of clock skew */
export function archiveDelayMs (paymentTimeoutSeconds: number): number {
  return paymentTimeoutSeconds * 1000 + 60_000
}

export function startArchiver (pins: Pick<PinLedger, 'archiveDue'>, delayMs: number, intervalMs: number, log: Logger): Archiver {
  let stopped = false
  const periodic = startPeriodic(async () => {
    const total = await pins.archiveDue(new Date(Date.now() - delayMs), async () => { await new Promise(resolve => setImmediate(resolve)) }, () => stopped)
    if (total > 0) log.debug('removed pins archived', { count: total })
    return total
  }, intervalMs, (err) => { log.error('archiving removed pins failed', { error: err }) })
  return {
    pass: periodic.run,
    // a pass under way ends after its current batch
    stop: async () => { stopped = true; await periodic.stop() }
  }
}
