/**
 * Settlement notes and what became of them. PinLedger writes a note before a
 * payment is settled and removes it with the record the payment buys; a
 * note that outlives its request is reconciled against the chain here, and
 * closed by an operator with an audit record:
 *   settling            paymentId → SettlingRecord
 *   settlements-closed  [paymentId, closedAt] → ClosedSettlement
 * Every write is one transaction, and only ever acts on a note as it was read
 * (a note that its request removed meanwhile is never written back).
 */
import type { Database } from 'lmdb'
import type { LedgerEnv } from './open.js'
import type { PinRecord } from '../records.js'
import type { UploadTicket } from './tickets.js'

/** unset: never checked against the chain */
export type SettlementState = 'unused-pending' | 'paid-unfulfilled'

export interface SettlingRecord {
  /** `${payer}:${nonce}` of the EIP-3009 authorization */
  paymentId: string
  payer: string
  /** atomic units */
  amount: string
  purpose: string
  at: string
  /** the authorization's validBefore (unix seconds, decimal): it cannot be used from then on; absent in notes of older versions */
  validBefore?: string
  state?: SettlementState
  /**
   * when its request gave up on a settlement whose outcome it could not tell (it threw, or the
   * chain said the payment was used after all): the request is over, so reconciliation reads the
   * note at its next pass rather than waiting for it as a request that may still be settling
   */
  settleFailedAt?: string
  /** when the chain was last read for this note */
  checkedAt?: string
  /**
   * What the payment buys, so that it can be carried out without the
   * request: the pin as it would have been recorded (a pin by CID, a
   * replacement, or an upload whose sealed staging folder is kept). A note
   * found paid on chain with this is fulfilled by reconciliation instead of
   * waiting for an operator.
   */
  fulfil?: SettlementFulfilment
}

export interface SettlementFulfilment {
  /** sha256 of the signed authorization (the payment record's proof) */
  proof: string
  /** a new pin: as it is to be recorded, payment fields as known before settlement (no tx) */
  pin?: PinRecord
  /** an upload: its staging folder (kept across restarts while the note lives) and every block of its DAG */
  upload?: { staging: string, blocks: string[] }
  /** a renewal: the pin and the months bought */
  renew?: { requestid: string, months: number }
  /** an upload ticket (tickets.ts): as it is to be recorded, without its settlement transaction */
  ticket?: UploadTicket
}

export interface ClosedSettlement {
  note: SettlingRecord
  closedAt: string
  operatorNote: string
}

/** What reconciliation decided for a note it read: drop it, or keep it in a state. */
export interface SettlementVerdict {
  read: SettlingRecord
  next: 'drop' | SettlementState
}

export class SettlementNotes {
  private readonly settling: Database<SettlingRecord, string>
  private readonly closedDb: Database<ClosedSettlement, [string, string]>

  constructor (private readonly env: LedgerEnv) {
    this.settling = env.db<SettlingRecord>('settling')
    this.closedDb = env.db<ClosedSettlement>('settlements-closed')
  }

  get (paymentId: string): SettlingRecord | undefined {
    return paymentId.length > MAX_ID_LENGTH ? undefined : this.settling.get(paymentId)
  }

  * all (): Generator<SettlingRecord> {
    for (const { value } of this.settling.getRange()) yield value
  }

  /**
   * Applies verdicts in one transaction. A note removed or changed since it
   * was read (its request recorded it meanwhile) is left alone. Returns the
   * verdicts that were applied.
   */
  async apply (verdicts: SettlementVerdict[], checkedAt: Date = new Date()): Promise<SettlementVerdict[]> {
    const applied: SettlementVerdict[] = []
    if (verdicts.length === 0) return applied
    await this.env.transaction(() => {
      for (const v of verdicts) {
        const current = this.settling.get(v.read.paymentId)
        if (current == null || !sameNote(current, v.read)) continue
        if (v.next === 'drop') this.settling.remove(v.read.paymentId)
        else this.settling.put(v.read.paymentId, { ...current, state: v.next, checkedAt: checkedAt.toISOString() })
        applied.push(v)
      }
    })
    return applied
  }

  /**
   * An operator has dealt with a note: it goes, and an audit record of the
   * closure stays, in one transaction. Undefined when there is no such note.
   */
  async close (paymentId: string, operatorNote: string, at: Date = new Date()): Promise<ClosedSettlement | undefined> {
    let closed: ClosedSettlement | undefined
    if (paymentId.length > MAX_ID_LENGTH) return undefined
    await this.env.transaction(() => {
      const note = this.settling.get(paymentId)
      if (note == null) return
      closed = { note, closedAt: at.toISOString(), operatorNote }
      this.closedDb.put([paymentId, closed.closedAt], closed)
      this.settling.remove(paymentId)
    })
    return closed
  }

  /** Audit records of closed notes, by payment id, then time. */
  * closed (): Generator<ClosedSettlement> {
    for (const { value } of this.closedDb.getRange()) yield value
  }
}

/** payer:nonce is 0x + 40 hex, a colon, 0x + 64 hex; anything far longer is not an id (nor a valid LMDB key) */
const MAX_ID_LENGTH = 200

function sameNote (a: SettlingRecord, b: SettlingRecord): boolean {
  return a.at === b.at && a.payer === b.payer && a.amount === b.amount && a.purpose === b.purpose &&
    a.validBefore === b.validBefore && a.state === b.state && a.checkedAt === b.checkedAt
}
