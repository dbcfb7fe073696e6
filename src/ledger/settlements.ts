/**
 * Settlement notes and what became of them. A note is written before a
 * payment is settled and removed with the record the payment buys; a note
 * that outlives its request is reconciled against the chain, and closed by
 * an operator with an audit record. Every write acts only on a note as it
 * was read (a note its request removed meanwhile is never written back).
 */
import type { PinRecord } from './records.js'
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
  /**
   * the front end whose request wrote it (its peer id; absent in notes of older versions):
   * front ends sharing a ledger tell their own notes, which may still be settling, from
   * those of one that died, and only the writer holds an upload's staged blocks
   */
  by?: string
  /** the CAIP-2 network the payment was made on (absent in notes of older versions: the first configured) */
  network?: string
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
   * replacement, or an upload whose blocks are kept). A note
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
  /**
   * an upload: every block of its DAG, and `staging`, its sealed staging folder (kept across restarts
   * while the note lives). Without `staging` the blocks are in the block store already (an upload to S3
   * writes them as its body arrives): the note holds them there from gc until it is fulfilled or dropped.
   */
  upload?: { staging?: string, blocks: string[] }
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

export interface SettlementNotes {
  get(paymentId: string): Promise<SettlingRecord | undefined>
  /** every open note */
  all(): Promise<SettlingRecord[]>
  /** Writes what reconciliation decided for notes it read, each only if the note is still as read; returns the verdicts applied. */
  apply(verdicts: SettlementVerdict[], checkedAt?: Date): Promise<SettlementVerdict[]>
  /** Closes a note by hand, with the operator's words: the audit record, or undefined when there is no such note. */
  close(paymentId: string, operatorNote: string, at?: Date): Promise<ClosedSettlement | undefined>
  /** every note closed by hand, oldest first */
  closed(): Promise<ClosedSettlement[]>
}
