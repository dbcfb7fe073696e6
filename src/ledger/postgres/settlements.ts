/**
 * Settlement notes (../settlements.ts): `settling` holds the open notes,
 * `settlements_closed` the audit records of notes closed by hand. Every write
 * acts on a note only as it was read: the row is locked, compared, then
 * written, in one transaction.
 */
import type { ClosedSettlement, SettlementNotes, SettlementVerdict, SettlingRecord } from '../settlements.js'
import { json, storableKey, type Db } from './pin-store.js'
import type { Tx } from './tx.js'

type Write = <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>

function sameNote (a: SettlingRecord, b: SettlingRecord): boolean {
  return a.at === b.at && a.payer === b.payer && a.amount === b.amount && a.purpose === b.purpose &&
    a.validBefore === b.validBefore && a.state === b.state && a.checkedAt === b.checkedAt && a.settleFailedAt === b.settleFailedAt &&
    a.fulfil?.proof === b.fulfil?.proof
}

async function lockedNote (tx: Tx, paymentId: string): Promise<SettlingRecord | undefined> {
  return (await tx.q<{ record: SettlingRecord }>('SELECT record FROM settling WHERE payment_id = $1 FOR UPDATE', [paymentId])).rows[0]?.record
}

/** PinLedger.markSettling, markSettleUncertain and clearSettling */
export function noteWrites (db: Db, write: Write): { markSettling(rec: SettlingRecord): Promise<void>, markSettleUncertain(id: string, at: string): Promise<void>, clearSettling(id: string): Promise<void> } {
  return {
    markSettling: async (rec) => {
      await db.query('INSERT INTO settling (payment_id, record) VALUES ($1, $2) ON CONFLICT (payment_id) DO UPDATE SET record = excluded.record', [rec.paymentId, json(rec)])
    },
    markSettleUncertain: async (id, at) => {
      await write(async (tx) => {
        const note = await lockedNote(tx, id)
        // no note: nothing is written back
        if (note != null) await tx.q('UPDATE settling SET record = $2 WHERE payment_id = $1', [id, json({ ...note, settleFailedAt: at })])
      })
    },
    clearSettling: async (id) => { await db.query('DELETE FROM settling WHERE payment_id = $1', [id]) }
  }
}

export function settlementNotes (db: Db, write: Write): SettlementNotes {
  return {
    get: async (id) => !storableKey(id) ? undefined : (await db.query<{ record: SettlingRecord }>('SELECT record FROM settling WHERE payment_id = $1', [id])).rows[0]?.record,
    all: async () => (await db.query<{ record: SettlingRecord }>('SELECT record FROM settling ORDER BY payment_id')).rows.map(r => r.record),
    apply: async (verdicts: SettlementVerdict[], checkedAt: Date = new Date()) => {
      if (verdicts.length === 0) return []
      return await write(async (tx) => {
        const applied: SettlementVerdict[] = []
        for (const v of verdicts) {
          const current = await lockedNote(tx, v.read.paymentId)
          if (current == null || !sameNote(current, v.read)) continue
          if (v.next === 'drop') await tx.q('DELETE FROM settling WHERE payment_id = $1', [v.read.paymentId])
          else await tx.q('UPDATE settling SET record = $2 WHERE payment_id = $1', [v.read.paymentId, json({ ...current, state: v.next, checkedAt: checkedAt.toISOString() })])
          applied.push(v)
        }
        return applied
      })
    },
    close: async (paymentId, operatorNote, at = new Date()) => {
      return await write(async (tx) => {
        const note = await lockedNote(tx, paymentId)
        if (note == null) return undefined
        const closed: ClosedSettlement = { note, closedAt: at.toISOString(), operatorNote }
        await tx.q('INSERT INTO settlements_closed (payment_id, closed_at, record) VALUES ($1, $2, $3)', [paymentId, at, json(closed)])
        await tx.q('DELETE FROM settling WHERE payment_id = $1', [paymentId])
        return closed
      })
    },
    closed: async () => (await db.query<{ record: ClosedSettlement }>('SELECT record FROM settlements_closed ORDER BY closed_at, seq')).rows.map(r => r.record)
  }
}
