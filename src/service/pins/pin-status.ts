/**
 * PinStatus per the Pinning Service API: requestid, status, created, pin,
 * delegates, and `info` with string values only. The shapes are zod schemas:
 * the OpenAPI document derives PinStatus, PinResults, Delegates and
 * StatusInfo from them (src/http/openapi.ts).
 */
import { z } from 'zod/v4'
import { DIGITS, USDC, text } from '../../kernel/api-shapes.js'
import type { PinRecord } from '../../ledger/records.js'
import { formatUsdc } from '../../payment/pricing.js'
import { Status } from './pin-query.js'
import { Pin } from './pin-request.js'

export const Delegates = z.array(z.string()).min(1).max(20).meta({
  description: 'This node\'s libp2p addresses (announced, else listening), each ending in /p2p/<peer id>; see Provider Hints in the Pinning Service API',
  uniqueItems: true,
  examples: [['/ip4/203.0.113.1/tcp/4001/p2p/12D3KooWServicePeerId']]
})

export const StatusInfo = z.object({
  pinned_until: text('paid until (then the grace period, then the pin is swept)', { format: 'date-time' }),
  months: text('months bought, renewals included', { pattern: DIGITS }),
  source: z.enum(['upload', 'pin']).meta({ description: 'how the pin was made' }),
  amount_paid: text('atomic units of the asset (10^-6 USDC); 0 for operator-token pins', { pattern: DIGITS }),
  amount_paid_usdc: text('amount_paid in USDC', { pattern: USDC }),
  network: text('payment network (CAIP-2)'),
  settlement_tx: text('the settlement transaction').optional(),
  payment_method: z.enum(['operator-token']).meta({ description: 'present when the pin was not paid with x402' }).optional(),
  dag_size: text('bytes of all blocks, once known', { pattern: DIGITS }).optional(),
  raw_size: text('file bytes (UnixFS), when known', { pattern: DIGITS }).optional(),
  max_bytes: text('pins by CID: the most DAG bytes the payment covers', { pattern: DIGITS }).optional(),
  status_details: text('progress (attempt, blocks and bytes received), the next retry, or the reason for failure; `not served: …` first while the CID is denied'),
  denied: text('present while the pin\'s CID is denied by this service (the operator\'s takedowns or denylists): why. The pin stays (status unchanged) but is not served on any channel and cannot be renewed; DELETE it, or replace it with other content').optional()
}).catchall(z.string()).meta({ description: 'pind\'s information about the pin; every value is a string' })

export const PinStatusSchema = z.object({
  requestid: text('Globally unique identifier of the pin request; can be used to check the status of ongoing pinning, or pin removal', { format: 'uuid' }),
  status: Status,
  created: text('Immutable timestamp indicating when a pin request entered a pinning service; unique and at least 1 ms apart (RFC 3339 with microseconds), so it pages exactly', { format: 'date-time', examples: ['2026-11-22T03:20:38.955123Z'] }),
  pin: Pin,
  delegates: Delegates,
  info: StatusInfo
}).meta({ description: 'Pin object with status' })

export const PinResults = z.object({
  count: z.int().min(0).meta({ description: 'The total number of pin objects that exist for passed query filters' }),
  results: z.array(PinStatusSchema).max(1000).meta({ description: 'An array of PinStatus results, newest first', uniqueItems: true })
}).meta({ description: 'Response used for listing pin objects matching request' })

/** a PinStatus body, typed by its schema */
export type PinStatus = z.output<typeof PinStatusSchema>

export function toPinStatus (pin: PinRecord, delegates: string[]): PinStatus {
  const info: PinStatus['info'] = {
    pinned_until: pin.pinnedUntil,
    months: String(pin.months),
    source: pin.source,
    amount_paid: pin.payment.amount,
    amount_paid_usdc: formatUsdc(BigInt(pin.payment.amount)),
    network: pin.payment.network,
    ...(pin.dagSize != null ? { dag_size: String(pin.dagSize) } : {}),
    ...(pin.fileSize != null ? { raw_size: String(pin.fileSize) } : {}),
    ...(pin.maxBytes != null ? { max_bytes: String(pin.maxBytes) } : {}),
    ...(pin.payment.method !== 'x402' ? { payment_method: pin.payment.method } : {}),
    ...(pin.payment.tx != null ? { settlement_tx: pin.payment.tx } : {}),
    status_details: pin.statusDetails ?? (pin.status === 'pinned' ? 'pinned on this node' : pin.status)
  }
  return {
    requestid: pin.requestid,
    status: pin.status,
    created: pin.created,
    pin: { cid: pin.cid, ...(pin.name != null ? { name: pin.name } : {}), origins: pin.origins, meta: pin.meta },
    delegates,
    info
  }
}
