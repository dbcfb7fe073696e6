/**
 * The archiver inside serve: every interval, removed pins whose removal is
 * older than the payment timeout (plus a minute for clocks) move with their
 * payments from ledger.mdb to ledger-archive.mdb (PinLedger.archiveRemoved,
 * src/ledger/archive.ts: why). By then no payment signed before the removal
 * is valid any more, so no retry can ask for the pin. Batches of a thousand,
 * each its own pair of commits, with the event loop free between them, all
 * in one opening of the archive file per pass (PinLedger.archiveDue).
 */
import type { PinLedger } from '../ledger/pins.js'
import type { Logger } from '../log.js'

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
  let running: Promise<number> | undefined
  let stopped = false
  const pass = async (): Promise<number> => {
    running ??= (async () => {
      const total = await pins.archiveDue(new Date(Date.now() - delayMs), async () => { await new Promise(resolve => setImmediate(resolve)) }, () => stopped)
      if (total > 0) log.debug('removed pins archived', { count: total })
      return total
    })().finally(() => { running = undefined })
    return await running
  }
  const timer = setInterval(() => {
    if (stopped) return
    pass().catch((err: Error) => { log.error('archiving removed pins failed', { error: err }) })
  }, intervalMs)
  timer.unref()
  return {
    pass,
    stop: async () => {
      stopped = true
      clearInterval(timer)
      await running?.catch(() => {})
    }
  }
}
