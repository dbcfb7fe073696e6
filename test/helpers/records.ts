/** Ledger records for tests that write a PinLedger directly. */
import { isoMicros, nextCreated } from '../../src/ledger/clock.js'
import type { PaymentRecord, PinRecord } from '../../src/ledger/records.js'

/** the payer of paidPin's records unless a test names another */
export const OWNER = '0x' + 'a1'.repeat(20)
/** the token paidPin's records are paid in */
export const ASSET = '0x' + 'c3'.repeat(20)

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

let paid = 0

/**
 * An x402-paid upload as serve records it: the pin, and its payment record
 * agreeing with the pin's copy of it. Each call is the next payment (nonce,
 * transaction, amount and times differ: created 2026-11-20T10:00 plus a
 * millisecond and 7 µs per call, settled half a second later). `pin` and
 * `record` set any other field of either.
 */
export function paidPin (requestid: string, cid: string, o: { owner?: string, id?: string, purpose?: string, network?: string, pin?: Partial<PinRecord>, record?: Partial<PaymentRecord> } = {}): { pin: PinRecord, payment: PaymentRecord } {
  const n = ++paid
  const owner = o.owner ?? OWNER
  const id = o.id ?? `${owner}:0x${n.toString(16).padStart(64, '0')}`
  const us = Date.parse('2026-11-20T10:00:00.000Z') * 1000 + n * 1000 + 7
  const at = new Date(Math.floor(us / 1000) + 500).toISOString()
  const tx = `0x${String(n).padStart(64, 'e')}`
  const amount = String(1000 + n)
  const network = o.network ?? 'eip155:84532'
  return {
    pin: {
      requestid, owner, cid, origins: [], meta: {}, status: 'pinned', created: isoMicros(us), createdUs: us, months: 1,
      pinnedUntil: '2026-12-20T10:00:00.000Z', source: 'upload', payment: { id, payer: owner, amount, network, asset: ASSET, tx, settledAt: at, method: 'x402' },
      ...o.pin
    },
    payment: { id, requestid, purpose: o.purpose ?? `upload:${cid}`, payer: owner, amount, network, tx, at, proof: 'ab'.repeat(32), ...o.record }
  }
}
