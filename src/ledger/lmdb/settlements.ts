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
import type { ClosedSettlement, SettlementVerdict, SettlingRecord } from '../settlements.js'
export type { ClosedSettlement, SettlementFulfilment, SettlementState, SettlementVerdict, SettlingRecord } from '../settlements.js'

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
    a.validBefore === b.validBefore && a.state === b.state && a.checkedAt === b.checkedAt && a.settleFailedAt === b.settleFailedAt &&
    a.fulfil?.proof === b.fulfil?.proof
}
