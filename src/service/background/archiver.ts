/**
 * The archiver inside serve: every interval, removed pins move with their
 * payments from ledger.mdb to ledger-archive.mdb (PinLedger.archiveDue,
 * src/ledger/lmdb/archive.ts: why). Those removed less than the payment timeout
 * (plus a minute for clocks) ago leave a mark of their payment in the
 * ledger, so that it still counts as used while a payment signed before the
 * removal may be valid; the next pass after that forgets the mark.
 * Kept whole for that long instead, removed pins and their payments were
 * most of the ledger under a stream of uploads and deletes (~600 bytes each
 * against ~225 for the mark and its index entry), and the whole ledger file
 * is resident in serve's memory. Batches of a hundred
 * (small transactions: PinLedger's ARCHIVE_BATCH says why), each its own
 * pair of commits, with the event loop free between them, the archive file
 * opened for each batch and closed after it (PinLedger.archiveDue says why).
 */
import type { PinLedger } from '../../ledger/pins.js'
import type { Logger } from '../../kernel/log.js'
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

/** `when`: passes on the schedule only while it says so (./lease-keeper.ts) */
export function startArchiver (pins: Pick<PinLedger, 'archiveDue'>, delayMs: number, intervalMs: number, log: Logger, when?: () => boolean): Archiver {
  let stopped = false
  const periodic = startPeriodic(async () => {
    const now = Date.now()
    const total = await pins.archiveDue(new Date(now - delayMs), async () => { await new Promise(resolve => setImmediate(resolve)) }, () => stopped, undefined, new Date(now))
    if (total > 0) log.debug('removed pins archived', { count: total })
    return total
  }, intervalMs, (err) => { log.error('archiving removed pins failed', { error: err }) }, when)
  return {
    pass: periodic.run,
    // a pass under way ends after its current batch
    stop: async () => { stopped = true; await periodic.stop() }
  }
}
