/** Ledger records for tests that write a PinLedger directly. */
import { nextCreated } from '../../src/ledger/clock.js'
import type { PinRecord } from '../../src/ledger/records.js'

/** A pin record (pinned, live for a day, paid 1000 by its owner) with any field overridden. */
export function pinRecord (requestid: string, cid: string, extra: Partial<PinRecord> = {}): PinRecord {
  const c = nextCreated()
  const owner = extra.owner ?? '0xa'
  return {
    requestid, owner, cid, origins: [], meta: {}, status: 'pinned', created: c.iso, createdUs: c.us, months: 1,
    pinnedUntil: new Date(Date.now() + 86400_000).toISOString(), source: 'pin',
    payment: { id: `p-${requestid}`, payer: owner, amount: '1000', network: 'eip155:167000', asset: '0x0', method: 'x402' },
    ...extra
  }
}
