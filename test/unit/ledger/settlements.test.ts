/**
 * Settlement notes on a real LMDB env: an operator's closure removes the note
 * and keeps an audit record in the same transaction; reconciliation verdicts
 * act only on a note as it was read.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { LedgerEnv } from '../../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../../src/ledger/lmdb/pins.js'
import { SettlementNotes, type SettlingRecord } from '../../../src/ledger/lmdb/settlements.js'
import { closeTestLedgers, openTestLedger } from '../../helpers/ledger.js'

let env: LedgerEnv
let pins: PinLedger
let notes: SettlementNotes

beforeEach(async () => {
  ({ env, ledger: pins } = await openTestLedger())
  notes = new SettlementNotes(env)
})
afterEach(closeTestLedgers)

const note = (id: string, extra: Partial<SettlingRecord> = {}): SettlingRecord =>
  ({ paymentId: id, payer: '0xa', amount: '1000', purpose: 'upload:x', at: new Date().toISOString(), validBefore: '1900000000', ...extra })

describe('SettlementNotes', () => {
  it('closes a note with an audit record, in one go, and refuses an unknown one', async () => {
    await pins.markSettling(note('p1', { state: 'paid-unfulfilled', checkedAt: '2026-11-01T00:00:00.000Z' }))
    await pins.markSettling(note('p2'))
    const closed = await notes.close('p1', 'refunded in tx 0xabc', new Date('2026-11-02T00:00:00Z'))
    expect(closed).toEqual({ note: note('p1', { state: 'paid-unfulfilled', checkedAt: '2026-11-01T00:00:00.000Z', at: closed?.note.at }), closedAt: '2026-11-02T00:00:00.000Z', operatorNote: 'refunded in tx 0xabc' })
    expect(notes.get('p1')).toBeUndefined()
    expect([...notes.all()].map(n => n.paymentId)).toEqual(['p2'])
    expect([...notes.closed()]).toEqual([closed])
    expect(await notes.close('p1', 'again')).toBeUndefined()
    expect(await notes.close('x'.repeat(5000), 'too long an id')).toBeUndefined()
    expect([...notes.closed()]).toHaveLength(1)

    // closed again after the same payment id came back: both closures stay on record
    await pins.markSettling(note('p1'))
    await notes.close('p1', 'second time', new Date('2026-11-03T00:00:00Z'))
    expect([...notes.closed()].map(c => c.operatorNote)).toEqual(['refunded in tx 0xabc', 'second time'])
  })

  it('applies a verdict only to the note as it was read', async () => {
    await pins.markSettling(note('p1'))
    await pins.markSettling(note('p2'))
    await pins.markSettling(note('p3'))
    const [r1, r2, r3] = [...notes.all()] as [SettlingRecord, SettlingRecord, SettlingRecord]
    await pins.clearSettling('p2') // its request finished meanwhile
    await pins.markSettling(note('p3', { at: new Date(Date.now() + 1000).toISOString() })) // rewritten meanwhile
    const applied = await notes.apply([{ read: r1, next: 'paid-unfulfilled' }, { read: r2, next: 'unused-pending' }, { read: r3, next: 'drop' }])
    expect(applied.map(v => v.read.paymentId)).toEqual(['p1'])
    expect(notes.get('p1')?.state).toBe('paid-unfulfilled')
    expect(notes.get('p2')).toBeUndefined()
    expect(notes.get('p3')?.state).toBeUndefined()
  })
})
