/**
 * Upload tickets in a real LMDB ledger: a ticket is recorded with its
 * payment (and its settlement note removed) in one transaction, a payment
 * buys one ticket; a claim checks the owner, the expiry and that it is
 * unused, and writes the claim and the pin together, so of two claims at
 * once exactly one makes a pin.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { LedgerEnv } from '../../../src/ledger/lmdb/open.js'
import { PaymentReusedError, PinLedger } from '../../../src/ledger/lmdb/pins.js'
import type { PaymentRecord } from '../../../src/ledger/records.js'
import { SettlementNotes } from '../../../src/ledger/lmdb/settlements.js'
import { ticketPurpose, UploadTickets, type UploadTicket } from '../../../src/ledger/lmdb/tickets.js'
import { closeTestLedgers, openTestLedger } from '../../helpers/ledger.js'
import { pinRecord } from '../../helpers/records.js'

const PAYER = '0x1111111111111111111111111111111111111111'
const OTHER = '0x2222222222222222222222222222222222222222'
const CID = 'bafkreihvkcqihwud2tcr4qltcygi5ostxqsc4gkde6cgpoyuz6gw5z2ila'
const ID = '0b9c6a9e-2f0e-4c4e-9a43-3b1f0d2d9a10'

let env: LedgerEnv
let pins: PinLedger
let tickets: UploadTickets

beforeEach(async () => {
  ({ env, ledger: pins, tickets } = await openTestLedger({ prefix: 'pind-tickets-' }))
})
afterEach(closeTestLedgers)

const paymentId = `${PAYER}:0x${'ab'.repeat(32)}`
const ticket = (over: Partial<UploadTicket> = {}): UploadTicket => ({
  id: ID, payer: PAYER, bytes: 1000, months: 1, amount: '1000', paymentId, network: 'eip155:167000', asset: '0x3333333333333333333333333333333333333333',
  tx: '0xabc', createdAt: new Date().toISOString(), expiresAt: new Date(Date.now() + 3600_000).toISOString(), ...over
})
const payment = (over: Partial<PaymentRecord> = {}): PaymentRecord => ({
  id: paymentId, requestid: ID, purpose: ticketPurpose(ID), payer: PAYER, amount: '1000', network: 'eip155:167000', tx: '0xabc', at: new Date().toISOString(), proof: 'p', ...over
})
const pinOf = (requestid: string) => pinRecord(requestid, CID, { owner: PAYER, status: 'pinned', payment: { id: paymentId, payer: PAYER, amount: '1000', network: 'eip155:167000', asset: '0x3333333333333333333333333333333333333333', method: 'x402', tx: '0xabc' } })

describe('UploadTickets', () => {
  it('records a ticket with its payment and removes the settlement note, once per payment', async () => {
    const notes = new SettlementNotes(env)
    await pins.markSettling({ paymentId, payer: PAYER, amount: '1000', purpose: ticketPurpose(ID), at: new Date().toISOString() })
    await tickets.record(ticket(), payment())
    expect(tickets.get(ID)).toMatchObject({ payer: PAYER, bytes: 1000 })
    expect(pins.payment(paymentId)).toMatchObject({ requestid: ID, purpose: `ticket:${ID}` })
    expect(notes.get(paymentId)).toBeUndefined()
    const second = '1b9c6a9e-2f0e-4c4e-9a43-3b1f0d2d9a10'
    await expect(tickets.record(ticket({ id: second }), payment({ requestid: second }))).rejects.toBeInstanceOf(PaymentReusedError)
    expect(tickets.get(second)).toBeUndefined()
  })

  it('a claim checks the ticket and writes the claim and the pin together; of two claims at once one makes a pin', async () => {
    await tickets.record(ticket(), payment())
    expect(() => tickets.check('1b9c6a9e-2f0e-4c4e-9a43-3b1f0d2d9a10', PAYER)).toThrow(expect.objectContaining({ why: 'unknown' }))
    expect(() => tickets.check(ID, OTHER)).toThrow(expect.objectContaining({ why: 'not-owner' }))
    expect(() => tickets.check(ID, PAYER, new Date(Date.now() + 2 * 3600_000))).toThrow(expect.objectContaining({ why: 'expired' }))
    await expect(tickets.claim(ID, OTHER, pinOf('r-other'), [CID])).rejects.toMatchObject({ why: 'not-owner' })
    expect(pins.get('r-other')).toBeUndefined()

    const claims = await Promise.allSettled([tickets.claim(ID, PAYER, pinOf('r-1'), [CID]), tickets.claim(ID, PAYER, pinOf('r-2'), [CID])])
    expect(claims.map(c => c.status).sort()).toEqual(['fulfilled', 'rejected'])
    expect((claims.find(c => c.status === 'rejected') as PromiseRejectedResult).reason).toMatchObject({ why: 'used' })
    const made = ['r-1', 'r-2'].filter(r => pins.get(r) != null)
    expect(made).toHaveLength(1)
    expect(tickets.get(ID)?.claimed?.requestid).toBe(made[0])
    expect(pins.refCount(CID)).toBe(1)
    // the pin refers to the ticket's payment
    expect(pins.get(made[0] as string)?.payment).toMatchObject({ id: paymentId, tx: '0xabc' })
  })
})
