/**
 * PinStatus per the Pinning Service API: requestid, status, created, pin,
 * delegates, and `info` with string values only.
 */
import type { PinRecord } from '../ledger/records.js'
import { formatUsdc } from '../payment/pricing.js'

export interface PinStatus {
  requestid: string
  status: PinRecord['status']
  created: string
  pin: { cid: string, name?: string, origins: string[], meta: Record<string, string> }
  delegates: string[]
  info: Record<string, string>
}

export function toPinStatus (pin: PinRecord, delegates: string[]): PinStatus {
  const info: Record<string, string> = {
    pinned_until: pin.pinnedUntil,
    months: String(pin.months),
    source: pin.source,
    amount_paid: pin.payment.amount,
    amount_paid_usdc: formatUsdc(BigInt(pin.payment.amount)),
    network: pin.payment.network
  }
  if (pin.dagSize != null) info.dag_size = String(pin.dagSize)
  if (pin.fileSize != null) info.raw_size = String(pin.fileSize)
  if (pin.maxBytes != null) info.max_bytes = String(pin.maxBytes)
  if (pin.payment.method !== 'x402') info.payment_method = pin.payment.method
  if (pin.payment.tx != null) info.settlement_tx = pin.payment.tx
  info.status_details = pin.statusDetails ?? (pin.status === 'pinned' ? 'pinned on this node' : pin.status)
  return {
    requestid: pin.requestid,
    status: pin.status,
    created: pin.created,
    pin: { cid: pin.cid, ...(pin.name != null ? { name: pin.name } : {}), origins: pin.origins, meta: pin.meta },
    delegates,
    info
  }
}
