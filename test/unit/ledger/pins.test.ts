/**
 * The ledger's block references on a real LMDB env: shared blocks stay
 * referenced while any pin holds them; a replacement keeps the old pin's
 * blocks until it settles; the fetch queue follows the pin's state.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { LedgerEnv } from '../../../src/ledger/lmdb/open.js'
import { PinGoneError, PinLedger } from '../../../src/ledger/lmdb/pins.js'
import { SettlementNotes } from '../../../src/ledger/lmdb/settlements.js'
import type { PinRecord } from '../../../src/ledger/records.js'
import { closeTestLedgers, openTestLedger } from '../../helpers/ledger.js'
import { pinRecord } from '../../helpers/records.js'

const A = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const B = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
const C = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'

let env: LedgerEnv
let ledger: PinLedger

beforeEach(async () => { ({ env, ledger } = await openTestLedger()) })
afterEach(closeTestLedgers)

const pin = (id: string, cid: string, status: PinRecord['status'], owner = '0xa', extra: Partial<PinRecord> = {}): PinRecord =>
  pinRecord(id, cid, { status, owner, ...extra })

describe('PinLedger', () => {
  it('keeps shared blocks referenced until the last pin holding them goes', async () => {
    await ledger.create(pin('1', A, 'pinned', '0xa'), undefined, [A, B])
    await ledger.create(pin('2', A, 'pinned', '0xb'), undefined, [A, B, C])
    await ledger.remove('1', 'unpinned')
    expect([A, B, C].map(c => ledger.isPinnedBlock(c))).toEqual([true, true, true])
    await ledger.remove('2', 'unpinned')
    expect([A, B, C].map(c => ledger.isPinnedBlock(c))).toEqual([false, false, false])
    await ledger.remove('2', 'unpinned') // idempotent
    expect(ledger.isPinnedBlock(A)).toBe(false)
  })

  it('queues pins to fetch and takes them out when they settle or go', async () => {
    await ledger.create(pin('q1', A, 'queued'))
    await ledger.create(pin('q2', B, 'queued'))
    await ledger.create(pin('q3', C, 'queued'))
    expect(ledger.pendingFetches()).toEqual(['q1', 'q2', 'q3'])
    await ledger.finishFetch('q1', [A], 10, 'pinned')
    await ledger.failFetch('q2', 'too large')
    await ledger.remove('q3', 'unpinned')
    expect(ledger.pendingFetches()).toEqual([])
    expect(ledger.get('q1')?.status).toBe('pinned')
    expect(ledger.isPinnedBlock(A)).toBe(true)
    expect(ledger.get('q2')).toMatchObject({ status: 'failed', statusDetails: 'too large' })
    // a pin removed while it was being fetched is not revived by the fetch finishing
    expect(await ledger.finishFetch('q3', [C], 10, 'pinned')).toBeUndefined()
    expect(ledger.isPinnedBlock(C)).toBe(false)
  })

  it('a replacement holds the old blocks until it is pinned, then releases them', async () => {
    await ledger.create(pin('old', A, 'pinned'), undefined, [A, B])
    await ledger.create(pin('new', C, 'queued', '0xa', { replaces: 'old' }))
    expect(ledger.get('old')?.removed?.why).toBe('replaced')
    expect(ledger.get('old')?.replacedBy).toBe('new')
    expect(ledger.isPinnedBlock(B)).toBe(true)
    await ledger.finishFetch('new', [C], 5, 'pinned')
    expect([A, B, C].map(c => ledger.isPinnedBlock(c))).toEqual([false, false, true])
    // the replaced pin cannot be replaced again, nor by another owner
    await expect(ledger.create(pin('again', C, 'queued', '0xa', { replaces: 'old' }))).rejects.toBeInstanceOf(PinGoneError)
    await expect(ledger.create(pin('theirs', C, 'queued', '0xb', { replaces: 'new' }))).rejects.toBeInstanceOf(PinGoneError)
    expect(ledger.get('again')).toBeUndefined()
  })

  it('a replacement that fails or is removed also lets go of what it replaced', async () => {
    await ledger.create(pin('o1', A, 'pinned'), undefined, [A])
    await ledger.create(pin('n1', B, 'queued', '0xa', { replaces: 'o1' }))
    await ledger.failFetch('n1', 'unreachable')
    expect(ledger.isPinnedBlock(A)).toBe(false)
    await ledger.create(pin('o2', C, 'pinned'), undefined, [C])
    await ledger.create(pin('n2', B, 'queued', '0xa', { replaces: 'o2' }))
    await ledger.remove('n2', 'unpinned')
    expect(ledger.isPinnedBlock(C)).toBe(false)
  })

  it('a replacement of a replacement still queued takes over what that one held, and releases it when it goes', async () => {
    // A → B (queued) → C, then DELETE C (issue 13, finding 1)
    await ledger.create(pin('a', A, 'pinned'), undefined, [A])
    await ledger.create(pin('b', B, 'queued', '0xa', { replaces: 'a' }))
    await ledger.create(pin('c', C, 'queued', '0xa', { replaces: 'b' }))
    expect(ledger.isPinnedBlock(A)).toBe(true) // still served while the chain is pending
    await ledger.remove('c', 'unpinned')
    expect(ledger.isPinnedBlock(A)).toBe(false)
    expect([...ledger.referencedBlocks()]).toEqual([])
  })

  it('a chain of replacements releases what it holds however its last pin settles or goes', async () => {
    const settle: Array<[string, (id: string) => Promise<unknown>]> = [
      ['pinned', async (id) => await ledger.finishFetch(id, [C], 5, 'pinned')],
      ['failed', async (id) => await ledger.failFetch(id, 'cannot')],
      ['expired', async (id) => await ledger.remove(id, 'expired')],
      ['unpinned', async (id) => await ledger.remove(id, 'unpinned')]
    ]
    for (const [how, end] of settle) {
      await ledger.create(pin(`${how}-1`, A, 'pinned'), undefined, [A, B])
      await ledger.create(pin(`${how}-2`, B, 'queued', '0xa', { replaces: `${how}-1` }))
      await ledger.create(pin(`${how}-3`, B, 'queued', '0xa', { replaces: `${how}-2` }))
      await ledger.create(pin(`${how}-4`, C, 'queued', '0xa', { replaces: `${how}-3` }))
      expect(ledger.isPinnedBlock(A), how).toBe(true)
      await end(`${how}-4`)
      expect(ledger.isPinnedBlock(A), how).toBe(false)
      expect(ledger.isPinnedBlock(B), how).toBe(false)
      expect(ledger.isPinnedBlock(C), how).toBe(how === 'pinned')
      await ledger.remove(`${how}-4`, 'unpinned')
      expect([...ledger.referencedBlocks()], how).toEqual([])
    }
    // a pinned pin in the middle of a chain already let go of what came before it
    await ledger.create(pin('m1', A, 'pinned'), undefined, [A])
    await ledger.create(pin('m2', B, 'queued', '0xa', { replaces: 'm1' }))
    await ledger.finishFetch('m2', [B], 5, 'pinned')
    await ledger.create(pin('m3', C, 'queued', '0xa', { replaces: 'm2' }))
    expect([A, B].map(c => ledger.isPinnedBlock(c))).toEqual([false, true])
    await ledger.create(pin('other', A, 'pinned', '0xb'), undefined, [A])
    await ledger.remove('m3', 'unpinned')
    expect([A, B].map(c => ledger.isPinnedBlock(c))).toEqual([true, false]) // another owner's pin of A is untouched
  })

  it('releases at upgrade what older versions leaked along chains of replacements, and nothing else', async () => {
    // as an older ledger left it: A held for B, B replaced by C while queued, C deleted
    const removed = (why: 'replaced' | 'unpinned', by?: string) => ({ removed: { at: new Date().toISOString(), why }, ...(by != null ? { replacedBy: by } : {}) })
    await ledger.importBatch([
      { pin: pin('a', A, 'pinned', '0xa', removed('replaced', 'b')), blocks: [A] },
      { pin: pin('b', B, 'queued', '0xa', { replaces: 'a', ...removed('replaced', 'c') }) },
      { pin: pin('c', B, 'queued', '0xa', { replaces: 'b', ...removed('unpinned') }) },
      // still held: D replaced by E, which is queued and live
      { pin: pin('d', C, 'pinned', '0xa', removed('replaced', 'e')), blocks: [C] },
      { pin: pin('e', B, 'queued', '0xa', { replaces: 'd' }) },
      { pin: pin('f', B, 'pinned', '0xb'), blocks: [B] }
    ], [])
    expect([A, B, C].map(c => ledger.isPinnedBlock(c))).toEqual([true, true, true])
    await ledger.upgrade()
    expect([A, B, C].map(c => ledger.isPinnedBlock(c))).toEqual([false, true, true])
    expect(await ledger.releaseUnheld()).toBe(0)
  })

  it('keeps a note of each settlement until the record it paid for is written', async () => {
    const note = (id: string) => ({ paymentId: id, payer: '0xa', amount: '1000', purpose: 'upload:x', at: new Date().toISOString() })
    await ledger.markSettling(note('pay-1'))
    await ledger.markSettling(note('pay-2'))
    await ledger.markSettling(note('pay-3'))
    const p = pin('s1', A, 'pinned')
    await ledger.create(p, { id: 'pay-1', requestid: 's1', purpose: 'upload:x', payer: '0xa', amount: '1000', network: 'eip155:167000', at: p.created, proof: 'x' })
    await ledger.clearSettling('pay-2') // refused by the chain
    // pay-3: the process died between settling and recording
    expect([...new SettlementNotes(env).all()].map(s => s.paymentId)).toEqual(['pay-3'])
  })

  it('counts pins by status for /metrics as a pass over every record would, reading only the pins not removed', async () => {
    const past = new Date(Date.now() - 3600_000).toISOString()
    await ledger.create(pin('live', A, 'pinned'), undefined, [A])
    await ledger.create(pin('queued', B, 'queued'))
    await ledger.create(pin('failed', B, 'failed'))
    await ledger.create(pin('expired', C, 'pinned', '0xa', { pinnedUntil: past })) // past its time, not swept yet: not counted
    await ledger.create(pin('gone', C, 'pinned'))
    await ledger.remove('gone', 'unpinned')
    await ledger.create(pin('down', C, 'pinned'))
    await ledger.takeDown('down', 'a court order')
    await ledger.create(pin('old', A, 'pinned'))
    await ledger.create(pin('new', B, 'queued', '0xa', { replaces: 'old' }))
    await ledger.importBatch([{ pin: pin('imported-removed', A, 'pinned', '0xb', { removed: { at: past, why: 'expired' } }) }], [])
    const fullPass = { queued: 0, pinning: 0, pinned: 0, failed: 0, removed: 0 }
    for (const p of ledger.all()) {
      if (p.removed != null) fullPass.removed++
      else if (p.status === 'failed' || ledger.isLive(p)) fullPass[p.status]++
    }
    expect(fullPass).toEqual({ queued: 2, pinning: 0, pinned: 1, failed: 2, removed: 3 })
    expect(ledger.countByStatus()).toEqual(fullPass)
    // the removed ones are counted, not read: a removed pin's record is never decoded
    const pins = (ledger as unknown as { pins: { get: (id: string) => PinRecord | undefined } }).pins
    const read: string[] = []
    const get = pins.get.bind(pins)
    pins.get = (id: string) => { read.push(id); return get(id) }
    try {
      ledger.countByStatus()
    } finally {
      pins.get = get
    }
    expect(read.sort()).toEqual(['down', 'expired', 'failed', 'live', 'new', 'queued'])
  })
})
