/**
 * `pind settlements` as operations on the settlement notes: list them, run
 * the reconciliation now, close one an operator has dealt with. The same
 * functions run inside a live serve (over the admin socket) and in the CLI
 * on a stopped data dir.
 */
import { z } from 'zod/v4'
import { InvalidInputError, NotFoundError, UnavailableError } from '../../kernel/errors.js'
import type { ClosedSettlement, SettlementNotes, SettlingRecord } from '../../ledger/settlements.js'
import { formatUsdc } from '../../payment/pricing.js'
import type { ReconcileReport } from '../payments/settlement-reconcile.js'
import type { Reply } from './reply.js'

/** what `pind settlements` asks (the admin channel's POST /settlements body, validated with this) */
export const SettlementsOp = z.discriminatedUnion('op', [
  z.object({ op: z.literal('list'), closed: z.boolean().optional() }),
  z.object({ op: z.literal('check') }),
  z.object({ op: z.literal('close'), paymentId: z.string(), note: z.string() })
])
export type SettlementsOp = z.output<typeof SettlementsOp>

export interface SettlementsAdminDeps {
  notes: Pick<SettlementNotes, 'all' | 'closed' | 'close'>
  /** one reconciliation pass; absent when no RPC is configured */
  reconcile?: () => Promise<ReconcileReport>
  /** frees what a closed note kept on disk (an upload's staging folder) */
  release?: (note: SettlingRecord) => Promise<void>
}

export const MAX_OPERATOR_NOTE = 1000

/** what POST /settlements answers (`pind settlements`) */
export type SettlementsReply = Reply<Awaited<ReturnType<typeof run>>>
export const runSettlementsOp: (op: SettlementsOp, d: SettlementsAdminDeps) => Promise<SettlementsReply> = run

async function run (op: SettlementsOp, d: SettlementsAdminDeps) {
  switch (op?.op) {
    case 'list':
      return {
        notes: (await d.notes.all()).map(noteView),
        ...(op.closed === true ? { closed: (await d.notes.closed()).map(closedView) } : {})
      }
    case 'check': {
      if (d.reconcile == null) throw new UnavailableError('no --rpc-url is configured, so the chain cannot be read')
      const r = await d.reconcile()
      return {
        checked: r.checked,
        dropped: r.dropped.map(noteView),
        confirmed: r.confirmed.map(noteView),
        fulfilled: r.fulfilled.map(f => ({ ...noteView(f.note), requestid: f.pin.requestid, cid: f.pin.cid })),
        pending: r.pending,
        awaitingOperator: r.awaitingOperator,
        inFlight: r.inFlight,
        ...(r.error != null ? { error: r.error } : {})
      }
    }
    case 'close': {
      if (typeof op.paymentId !== 'string' || op.paymentId === '') throw new InvalidInputError('close needs a payment id (payer:nonce, see pind settlements list)')
      if (typeof op.note !== 'string' || op.note.trim() === '') throw new InvalidInputError('close needs a note saying what was done (e.g. refunded in tx 0x…)')
      if (op.note.length > MAX_OPERATOR_NOTE) throw new InvalidInputError(`the note is longer than ${MAX_OPERATOR_NOTE} characters`)
      const closed = await d.notes.close(op.paymentId, op.note.trim())
      if (closed == null) throw new NotFoundError(`no settlement note ${op.paymentId.slice(0, 200)} (see pind settlements list)`)
      await d.release?.(closed.note)
      return { closed: closedView(closed) }
    }
    default:
      throw new InvalidInputError('unknown settlements operation')
  }
}

/** A note as the operator sees it: amounts in atomic units and USDC, absent fields as null. */
export function noteView (n: SettlingRecord): Record<string, unknown> {
  return {
    paymentId: n.paymentId,
    payer: n.payer,
    amount: n.amount,
    amountUsdc: formatUsdc(BigInt(n.amount)),
    purpose: n.purpose,
    // the network paid on (null in notes of older versions: the first configured)
    network: n.network ?? null,
    at: n.at,
    state: n.state ?? 'unchecked',
    validBefore: n.validBefore ?? null,
    validBeforeAt: isoOfSeconds(n.validBefore),
    checkedAt: n.checkedAt ?? null,
    // what reconciliation records by itself once the chain shows the payment used (null: an operator decides)
    fulfils: n.fulfil?.renew != null
      ? `renewal of ${n.fulfil.renew.requestid} by ${n.fulfil.renew.months} month(s)`
      : n.fulfil?.pin != null
        ? `pin ${n.fulfil.pin.cid} (${n.fulfil.pin.requestid})`
        : n.fulfil?.ticket != null ? `upload ticket ${n.fulfil.ticket.id} (${n.fulfil.ticket.bytes} bytes, ${n.fulfil.ticket.months} month(s))` : null
  }
}

function closedView (c: ClosedSettlement): Record<string, unknown> {
  return { ...noteView(c.note), closedAt: c.closedAt, operatorNote: c.operatorNote }
}

/** unix seconds as an ISO time, or null when absent or beyond what a Date holds */
function isoOfSeconds (s: string | undefined): string | null {
  if (s == null) return null
  const ms = Number(s) * 1000
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : null
}
