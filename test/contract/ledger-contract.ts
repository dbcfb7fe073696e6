/**
 * What every Ledger (src/ledger/ledger.ts) must do, whatever keeps it: one
 * suite, run unchanged against each implementation (./lmdb.test.ts). It
 * reaches the ledger through the contract only.
 *
 * `knownGaps` names tests of behaviour the contract's comments promise that
 * an implementation does not (yet) keep: they run as it.fails for that
 * implementation only, so they start failing the moment it is fixed.
 */
import { createHash } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { identity } from 'multiformats/hashes/identity'
import { PaymentReusedError, PinGoneError, TicketClaimError } from '../../src/ledger/errors.js'
import type { Ledger } from '../../src/ledger/ledger.js'
import type { PinQuery } from '../../src/ledger/query.js'
import type { PaymentRecord, PinRecord, PinState } from '../../src/ledger/records.js'
import { newRequestid } from '../../src/ledger/requestid.js'
import type { SettlingRecord } from '../../src/ledger/settlements.js'
import { ticketPurpose, type UploadTicket } from '../../src/ledger/tickets.js'
import { OWNER, paidPin, pinRecord } from '../helpers/records.js'

export interface OpenedLedger {
  ledger: Ledger
  /** closes the ledger and opens the same store again */
  reopen?: () => Promise<Ledger>
  /** closes whichever ledger is open and removes what the test made */
  close(): Promise<void>
}

/** tests an implementation may declare it fails (see the file's comment) */
export const GAP = {
  settledReplacement: 'a replacement created settled releases its predecessor at once',
  noteChangedBySettleFailure: 'notes.apply leaves a note that markSettleUncertain changed after it was read'
} as const

export interface ContractOptions {
  knownGaps?: ReadonlyArray<(typeof GAP)[keyof typeof GAP]>
}

const OTHER = '0x' + 'b2'.repeat(20)
const ALL_STATES = new Set<PinState>(['queued', 'pinning', 'pinned', 'failed'])
const HOUR = 3600_000

let cidSeq = 0
/** a fresh CIDv1 (raw, sha256): every call another block */
function newCid (): string {
  const bytes = Buffer.from(`contract block ${++cidSeq} ${Math.random()}`)
  return CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(bytes).digest())).toString()
}

/** a CID whose bytes are inline (identity multihash): never announced */
function identityCid (text: string): string {
  return CID.createV1(0x55, identity.digest(Buffer.from(text))).toString()
}

/** a paid pin (pinned, live for 30 days unless `pin` says otherwise) and the payment that bought it */
function paid (cid: string, o: { owner?: string, pin?: Partial<PinRecord>, id?: string } = {}): { pin: PinRecord, payment: PaymentRecord } {
  const requestid = newRequestid()
  return paidPin(requestid, cid, { owner: o.owner, id: o.id, pin: { pinnedUntil: new Date(Date.now() + 30 * 24 * HOUR).toISOString(), ...o.pin } })
}

/** the same payment offered for another pin (its requestid and purpose follow the pin) */
function sameIdFor (payment: PaymentRecord, pin: PinRecord): PaymentRecord {
  return { ...payment, requestid: pin.requestid, purpose: `upload:${pin.cid}` }
}

function ticketOf (o: Partial<UploadTicket> & { paymentId: string }): UploadTicket {
  return {
    id: newRequestid(), payer: OWNER, bytes: 1000, months: 1, amount: '5000', network: 'eip155:84532', asset: '0x' + 'c3'.repeat(20),
    tx: '0x' + 'f'.repeat(64), createdAt: new Date().toISOString(), expiresAt: new Date(Date.now() + HOUR).toISOString(), ...o
  }
}

/** a ticket and the payment that buys it */
function boughtTicket (over: Partial<UploadTicket> = {}): { ticket: UploadTicket, payment: PaymentRecord } {
  const { payment: p } = paid(newCid())
  const ticket = ticketOf({ paymentId: p.id, ...over })
  return { ticket, payment: { ...p, requestid: ticket.id, purpose: ticketPurpose(ticket.id) } }
}

function note (paymentId: string, over: Partial<SettlingRecord> = {}): SettlingRecord {
  return { paymentId, payer: OWNER, amount: '1001', purpose: 'upload:x', at: new Date().toISOString(), validBefore: String(Math.floor(Date.now() / 1000) + 600), ...over }
}

async function collect<T> (items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const x of items) out.push(x)
  return out
}

const sorted = (xs: string[]): string[] => [...xs].sort()
const query = (q: Partial<PinQuery> = {}): PinQuery => ({ match: 'exact', statuses: ALL_STATES, limit: 100, ...q })

export function describeLedgerContract (name: string, open: () => Promise<OpenedLedger>, opts: ContractOptions = {}): void {
  const gaps = new Set<string>(opts.knownGaps ?? [])
  const known = new Set<string>(Object.values(GAP))
  for (const g of gaps) if (!known.has(g)) throw new Error(`unknown contract gap: ${g}`)
  /** it, or it.fails for a gap this implementation declares */
  const test = (title: string, fn: () => Promise<void>): void => {
    if (gaps.has(title)) it.fails(`${title} (known gap of ${name})`, fn)
    else it(title, fn)
  }

  describe(`ledger contract: ${name}`, () => {
    let opened: OpenedLedger
    let ledger: Ledger
    beforeEach(async () => {
      opened = await open()
      ledger = opened.ledger
    })
    afterEach(async () => { await opened.close() })

    describe('a payment is used at most once', () => {
      it('a second pin with a used payment is refused and nothing of it is written', async () => {
        const a = paid(newCid())
        expect(await ledger.pins.paymentUsed(a.payment.id)).toBe(false)
        await ledger.pins.create(a.pin, a.payment, [a.pin.cid])
        expect(await ledger.pins.paymentUsed(a.payment.id)).toBe(true)
        expect(await ledger.pins.knownPayment(a.payment.id)).toBe(true)
        expect(await ledger.pins.payment(a.payment.id)).toEqual(a.payment)

        const blk = newCid()
        const b = paid(newCid(), { id: a.payment.id })
        await expect(ledger.pins.create(b.pin, sameIdFor(a.payment, b.pin), [blk])).rejects.toBeInstanceOf(PaymentReusedError)
        expect(await ledger.pins.get(b.pin.requestid)).toBeUndefined()
        expect(await ledger.pins.known(b.pin.requestid)).toBe(false)
        expect(await ledger.pins.refCount(blk)).toBe(0)
        // the record still names the pin it bought
        expect((await ledger.pins.payment(a.payment.id))?.requestid).toBe(a.pin.requestid)

        await expect(ledger.transaction(async (tx) => { await tx.recordPayment(a.payment) })).rejects.toBeInstanceOf(PaymentReusedError)
        // a renewal with it too
        await expect(ledger.pins.renew(a.pin.requestid, 1, a.payment, () => new Date(Date.now() + 60 * 24 * HOUR))).rejects.toBeInstanceOf(PaymentReusedError)
        expect((await ledger.pins.get(a.pin.requestid))?.months).toBe(1)
      })

      it('of N creates at once with one payment exactly one is written', async () => {
        const first = paid(newCid())
        const tries = Array.from({ length: 8 }, () => paid(newCid(), { id: first.payment.id }))
        const results = await Promise.allSettled(tries.map(async (t) => { await ledger.pins.create(t.pin, sameIdFor(first.payment, t.pin), [t.pin.cid]) }))
        expect(results.filter(r => r.status === 'fulfilled')).toHaveLength(1)
        for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(PaymentReusedError)
        expect(await ledger.pins.paymentUsed(first.payment.id)).toBe(true)
        const written = []
        for (const t of tries) if (await ledger.pins.get(t.pin.requestid) != null) written.push(t)
        expect(written).toHaveLength(1)
        const winner = tries[results.findIndex(r => r.status === 'fulfilled')]
        expect(written[0]).toBe(winner)
        expect((await ledger.pins.payment(first.payment.id))?.requestid).toBe(winner?.pin.requestid)
        // only the winner's root is referenced
        for (const t of tries) expect(await ledger.pins.refCount(t.pin.cid)).toBe(t === winner ? 1 : 0)
      })
    })

    describe('replacement chains', () => {
      it('a replaced pin is removed at once and holds its blocks until its replacement is pinned', async () => {
        const [a1, a2, shared, b1] = [newCid(), newCid(), newCid(), newCid()]
        const a = paid(newCid())
        await ledger.pins.create(a.pin, a.payment, [a1, a2, shared])
        const b = paid(newCid(), { pin: { status: 'queued', replaces: a.pin.requestid } })
        await ledger.pins.create(b.pin, b.payment)

        const old = await ledger.pins.get(a.pin.requestid)
        expect(old?.removed?.why).toBe('replaced')
        expect(old?.replacedBy).toBe(b.pin.requestid)
        expect(await ledger.pins.pendingFetches()).toEqual([b.pin.requestid])
        // still held while the replacement is unsettled
        expect(sorted(await ledger.pins.blocksOf(a.pin.requestid))).toEqual(sorted([a1, a2, shared]))
        for (const k of [a1, a2, shared]) expect(await ledger.pins.refCount(k)).toBe(1)

        const done = await ledger.pins.finishFetch(b.pin.requestid, [shared, b1], 2048, 'fetched')
        expect(done?.status).toBe('pinned')
        expect(await ledger.pins.pendingFetches()).toEqual([])
        expect(await ledger.pins.refCount(a1)).toBe(0)
        expect(await ledger.pins.refCount(a2)).toBe(0)
        // the replacement references it: it stays, once
        expect(await ledger.pins.refCount(shared)).toBe(1)
        expect(await ledger.pins.refCount(b1)).toBe(1)
        expect(await ledger.pins.blocksOf(a.pin.requestid)).toEqual([])
      })

      it('a replacement that fails or is removed before it settles releases what it replaced', async () => {
        const [x, y] = [newCid(), newCid()]
        const a = paid(newCid())
        await ledger.pins.create(a.pin, a.payment, [x])
        const b = paid(newCid(), { pin: { status: 'queued', replaces: a.pin.requestid } })
        await ledger.pins.create(b.pin, b.payment)
        expect(await ledger.pins.refCount(x)).toBe(1)
        expect((await ledger.pins.failFetch(b.pin.requestid, 'not found'))?.status).toBe('failed')
        expect(await ledger.pins.refCount(x)).toBe(0)

        const c = paid(newCid())
        await ledger.pins.create(c.pin, c.payment, [y])
        const d = paid(newCid(), { pin: { status: 'queued', replaces: c.pin.requestid } })
        await ledger.pins.create(d.pin, d.payment)
        expect(await ledger.pins.refCount(y)).toBe(1)
        await ledger.pins.remove(d.pin.requestid, 'unpinned')
        expect(await ledger.pins.refCount(y)).toBe(0)
      })

      it('in a chain A → B (queued) → C, A holds its blocks until C settles', async () => {
        const [a1, c1] = [newCid(), newCid()]
        const a = paid(newCid())
        await ledger.pins.create(a.pin, a.payment, [a1])
        const b = paid(newCid(), { pin: { status: 'queued', replaces: a.pin.requestid } })
        await ledger.pins.create(b.pin, b.payment)
        const c = paid(newCid(), { pin: { status: 'queued', replaces: b.pin.requestid } })
        await ledger.pins.create(c.pin, c.payment)

        const mid = await ledger.pins.get(b.pin.requestid)
        expect(mid?.removed?.why).toBe('replaced')
        expect(mid?.replacedBy).toBe(c.pin.requestid)
        expect(await ledger.pins.pendingFetches()).toEqual([c.pin.requestid])
        // B never settled: what it held for A passes on to C
        expect(await ledger.pins.refCount(a1)).toBe(1)
        expect(await ledger.pins.blocksOf(a.pin.requestid)).toEqual([a1])

        await ledger.pins.finishFetch(c.pin.requestid, [c1], 100, 'fetched')
        expect(await ledger.pins.refCount(a1)).toBe(0)
        expect(await ledger.pins.refCount(c1)).toBe(1)
        expect(sorted([...await collect(ledger.pins.referencedBlocks())])).toEqual([c1])
      })

      it('replacing a removed pin or another owner\'s pin is PinGoneError and writes nothing', async () => {
        const a = paid(newCid())
        await ledger.pins.create(a.pin, a.payment, [a.pin.cid])
        await ledger.pins.remove(a.pin.requestid, 'unpinned')
        const b = paid(newCid(), { pin: { status: 'queued', replaces: a.pin.requestid } })
        await expect(ledger.pins.create(b.pin, b.payment)).rejects.toBeInstanceOf(PinGoneError)
        expect(await ledger.pins.get(b.pin.requestid)).toBeUndefined()
        expect(await ledger.pins.paymentUsed(b.payment.id)).toBe(false)
        expect((await ledger.pins.get(a.pin.requestid))?.removed?.why).toBe('unpinned')

        const mine = paid(newCid())
        await ledger.pins.create(mine.pin, mine.payment, [mine.pin.cid])
        const theirs = paid(newCid(), { owner: OTHER, pin: { status: 'queued', replaces: mine.pin.requestid } })
        await expect(ledger.pins.create(theirs.pin, theirs.payment)).rejects.toBeInstanceOf(PinGoneError)
        expect(await ledger.pins.get(theirs.pin.requestid)).toBeUndefined()
        expect(await ledger.pins.paymentUsed(theirs.payment.id)).toBe(false)
        const still = await ledger.pins.get(mine.pin.requestid)
        expect(still?.removed).toBeUndefined()
        expect(still?.replacedBy).toBeUndefined()
        expect(await ledger.pins.refCount(mine.pin.cid)).toBe(1)

        // a pin that never existed
        const c = paid(newCid(), { pin: { status: 'queued', replaces: newRequestid() } })
        await expect(ledger.pins.create(c.pin, c.payment)).rejects.toBeInstanceOf(PinGoneError)
      })

      test(GAP.settledReplacement, async () => {
        // pins.ts: "the replaced pin holds its blocks until this one settles": one recorded pinned has settled
        const a1 = newCid()
        const a = paid(newCid())
        await ledger.pins.create(a.pin, a.payment, [a1])
        const b = paid(newCid(), { pin: { status: 'pinned', replaces: a.pin.requestid } })
        await ledger.pins.create(b.pin, b.payment, [b.pin.cid])
        expect((await ledger.pins.get(a.pin.requestid))?.removed?.why).toBe('replaced')
        expect(await ledger.pins.refCount(a1)).toBe(0)
      })
    })

    describe('block references and gc\'s mark', () => {
      it('refCount and referencedBlocks follow creates and removes; a block another pin holds survives', async () => {
        const [b1, b2, b3] = [newCid(), newCid(), newCid()]
        const p1 = paid(newCid())
        const p2 = paid(newCid())
        await ledger.pins.create(p1.pin, p1.payment, [b1, b2])
        // a block listed twice is one reference
        await ledger.pins.create(p2.pin, p2.payment, [b2, b3, b3])
        expect([await ledger.pins.refCount(b1), await ledger.pins.refCount(b2), await ledger.pins.refCount(b3)]).toEqual([1, 2, 1])
        expect(sorted(await ledger.pins.blocksOf(p2.pin.requestid))).toEqual(sorted([b2, b3]))
        expect(sorted([...await collect(ledger.pins.referencedBlocks())])).toEqual(sorted([b1, b2, b3]))

        const released: number[] = []
        const stop = ledger.pins.watchReleased((blocks) => { released.push(blocks) })
        const removedIds: string[] = []
        const stopRemoved = ledger.pins.watchRemoved((id) => { removedIds.push(id) })
        const gone = await ledger.pins.remove(p1.pin.requestid, 'unpinned')
        stop()
        stopRemoved()
        expect(gone?.removed?.why).toBe('unpinned')
        expect([await ledger.pins.refCount(b1), await ledger.pins.refCount(b2), await ledger.pins.refCount(b3)]).toEqual([0, 1, 1])
        expect(await ledger.pins.blocksOf(p1.pin.requestid)).toEqual([])
        expect(sorted([...await collect(ledger.pins.referencedBlocks())])).toEqual(sorted([b2, b3]))
        // only b1 lost its last reference
        expect(released).toEqual([1])
        expect(removedIds).toEqual([p1.pin.requestid])
        // removing it again changes nothing
        expect(await ledger.pins.remove(p1.pin.requestid, 'unpinned')).toBeUndefined()
        expect(await ledger.pins.refCount(b2)).toBe(1)
      })

      it('a CIDv0 and its CIDv1 are one block and one root', async () => {
        const digest = Digest.create(0x12, createHash('sha256').update(`dag-pb node ${Math.random()}`).digest())
        const v0 = CID.createV0(digest).toString()
        const v1 = CID.createV1(0x70, digest).toString()
        const p = paid(v0)
        await ledger.pins.create(p.pin, p.payment, [v0])
        expect(await ledger.pins.refCount(v1)).toBe(1)
        expect(await ledger.pins.refCount(v0)).toBe(1)
        expect([...await collect(ledger.pins.referencedBlocks())]).toEqual([v1])
        expect(await ledger.pins.requestidsOfCid(v1)).toEqual([p.pin.requestid])
        expect(await ledger.pins.livePinsOf(v1)).toEqual([p.pin.requestid])
        const q = paid(v1)
        await ledger.pins.create(q.pin, q.payment, [v1])
        expect(await ledger.pins.refCount(v0)).toBe(2)
        expect(await ledger.provides.count('roots')).toBe(1)
        expect(sorted(await ledger.pins.requestidsOfCid(v0))).toEqual(sorted([p.pin.requestid, q.pin.requestid]))
      })

      it('a pin created while gc marks is protected: watchNewRefs hears its blocks before create resolves', async () => {
        const old = Array.from({ length: 50 }, () => newCid())
        const p = paid(newCid())
        await ledger.pins.create(p.pin, p.payment, old)

        // gc: watch first, then mark; a pin is created in the middle of the mark
        const fresh = [newCid(), newCid(), newCid()]
        const late = paid(newCid())
        const watched = new Set<string>()
        let heardBeforeResolve = false
        let resolved = false
        const stop = ledger.pins.watchNewRefs((keys) => {
          for (const k of keys) watched.add(k)
          if (!resolved) heardBeforeResolve = true
        })
        const mark = new Set<string>()
        let creating: Promise<void> | undefined
        for await (const k of ledger.pins.referencedBlocks()) {
          mark.add(k)
          creating ??= ledger.pins.create(late.pin, late.payment, fresh).then(() => { resolved = true })
        }
        await creating
        stop()
        expect(heardBeforeResolve).toBe(true)
        for (const k of fresh) expect(watched.has(k)).toBe(true)
        const protectedSet = new Set([...mark, ...watched])
        for (const k of [...old, ...fresh]) expect(protectedSet.has(k)).toBe(true)

        // unsubscribed: no longer told
        watched.clear()
        const after = paid(newCid())
        await ledger.pins.create(after.pin, after.payment, [newCid()])
        expect(watched.size).toBe(0)
      })
    })

    describe('the archive', () => {
      it('a pin moved while its payment may still be valid keeps the payment used and its requestid known', async () => {
        const now = Date.now()
        const a = paid(newCid())
        const live = paid(newCid())
        await ledger.pins.create(a.pin, a.payment, [a.pin.cid])
        await ledger.pins.create(live.pin, live.payment, [live.pin.cid])
        await ledger.pins.remove(a.pin.requestid, 'unpinned', new Date(now - 2 * HOUR))

        expect(await ledger.pins.archiveDue(new Date(now - 3 * HOUR), undefined, undefined, undefined, new Date(now))).toBe(1)
        expect(await ledger.pins.known(a.pin.requestid)).toBe(true)
        expect(await ledger.pins.paymentUsed(a.payment.id)).toBe(true)
        expect(await ledger.pins.knownPayment(a.payment.id)).toBe(true)
        const b = paid(newCid(), { id: a.payment.id })
        await expect(ledger.pins.create(b.pin, sameIdFor(a.payment, b.pin))).rejects.toBeInstanceOf(PaymentReusedError)
        expect(await ledger.pins.known(b.pin.requestid)).toBe(false)
        await expect(ledger.transaction(async (tx) => { await tx.recordPayment(a.payment) })).rejects.toBeInstanceOf(PaymentReusedError)
        // live pins never move
        expect(await ledger.pins.get(live.pin.requestid)).toEqual(live.pin)
        expect(await ledger.pins.refCount(live.pin.cid)).toBe(1)
        // the snapshot (export) still has it, whole
        const snap = await ledger.snapshot()
        try {
          const pins = await collect(snap.pins())
          expect(pins.filter(p => p.requestid === a.pin.requestid)).toHaveLength(1)
          expect(await snap.pin(a.pin.requestid)).toMatchObject({ requestid: a.pin.requestid, removed: { why: 'unpinned' } })
          expect((await collect(snap.payments())).filter(p => p.id === a.payment.id)).toHaveLength(1)
        } finally {
          await snap.release()
        }
        expect((await ledger.pins.countByStatus()).removed).toBe(1)
      })

      it('a replaced pin whose replacement is unsettled is not moved: its blocks stay held', async () => {
        const a1 = newCid()
        const a = paid(newCid())
        await ledger.pins.create(a.pin, a.payment, [a1])
        const b = paid(newCid(), { pin: { status: 'queued', replaces: a.pin.requestid } })
        await ledger.pins.create(b.pin, b.payment)
        const future = new Date(Date.now() + HOUR)
        await ledger.pins.archiveDue(future, undefined, undefined, undefined, future)
        expect(await ledger.pins.refCount(a1)).toBe(1)
        await ledger.pins.finishFetch(b.pin.requestid, [newCid()], 10, 'fetched')
        expect(await ledger.pins.refCount(a1)).toBe(0)
        expect(await ledger.pins.archiveDue(future, undefined, undefined, undefined, future)).toBe(1)
        expect(await ledger.pins.known(a.pin.requestid)).toBe(true)
      })
    })

    describe('settlement notes', () => {
      it('markSettling writes a note, markSettleUncertain marks it, clearSettling removes it', async () => {
        const id = paid(newCid()).payment.id
        const n = note(id)
        await ledger.pins.markSettling(n)
        expect(await ledger.notes.get(id)).toEqual(n)
        expect(await ledger.notes.all()).toEqual([n])
        const at = new Date(Date.now() + 1000).toISOString()
        await ledger.pins.markSettleUncertain(id, at)
        expect(await ledger.notes.get(id)).toEqual({ ...n, settleFailedAt: at })
        await ledger.pins.clearSettling(id)
        expect(await ledger.notes.get(id)).toBeUndefined()
        expect(await ledger.notes.all()).toEqual([])
        // no note: nothing is written back
        await ledger.pins.markSettleUncertain(id, at)
        expect(await ledger.notes.get(id)).toBeUndefined()
      })

      it('the record a payment buys removes its note with it; a refused write leaves the note', async () => {
        const a = paid(newCid())
        await ledger.pins.markSettling(note(a.payment.id))
        await ledger.pins.create(a.pin, a.payment, [a.pin.cid])
        expect(await ledger.notes.get(a.payment.id)).toBeUndefined()

        const t = boughtTicket()
        await ledger.pins.markSettling(note(t.payment.id, { purpose: t.payment.purpose }))
        await ledger.transaction(async (tx) => { await tx.recordPayment(t.payment); await tx.putTicket(t.ticket) })
        expect(await ledger.notes.get(t.payment.id)).toBeUndefined()

        // a replacement of a pin that is gone: refused, so the note stays for reconciliation
        const b = paid(newCid(), { pin: { status: 'queued', replaces: newRequestid() } })
        const nb = note(b.payment.id)
        await ledger.pins.markSettling(nb)
        await expect(ledger.pins.create(b.pin, b.payment)).rejects.toBeInstanceOf(PinGoneError)
        expect(await ledger.notes.get(b.payment.id)).toEqual(nb)
      })

      it('notes.apply writes a verdict only on a note still as it was read', async () => {
        const [i1, i2, i3, i4] = [1, 2, 3, 4].map(() => paid(newCid()).payment.id) as [string, string, string, string]
        for (const id of [i1, i2, i3, i4]) await ledger.pins.markSettling(note(id))
        const read = await ledger.notes.all()
        const of = (id: string): SettlingRecord => read.find(n => n.paymentId === id) as SettlingRecord
        // i3: its request wrote the note again meanwhile; i4: its request removed it
        await ledger.pins.markSettling(note(i3, { at: new Date(Date.now() + 5000).toISOString() }))
        await ledger.pins.clearSettling(i4)
        const checkedAt = new Date(Date.now() + 10_000)
        const applied = await ledger.notes.apply([
          { read: of(i1), next: 'drop' },
          { read: of(i2), next: 'paid-unfulfilled' },
          { read: of(i3), next: 'drop' },
          { read: of(i4), next: 'unused-pending' }
        ], checkedAt)
        expect(applied.map(v => v.read.paymentId)).toEqual([i1, i2])
        expect(await ledger.notes.get(i1)).toBeUndefined()
        expect(await ledger.notes.get(i2)).toEqual({ ...of(i2), state: 'paid-unfulfilled', checkedAt: checkedAt.toISOString() })
        expect((await ledger.notes.get(i3))?.at).not.toBe(of(i3).at)
        // never written back
        expect(await ledger.notes.get(i4)).toBeUndefined()
        // a verdict on the state it had before: i2 is no longer as read
        expect(await ledger.notes.apply([{ read: of(i2), next: 'drop' }])).toEqual([])
        expect(await ledger.notes.get(i2)).toBeDefined()
      })

      test(GAP.noteChangedBySettleFailure, async () => {
        // settlements.ts: "each only if the note is still as read"; settleFailedAt is part of it
        const id = paid(newCid()).payment.id
        await ledger.pins.markSettling(note(id))
        const read = await ledger.notes.get(id) as SettlingRecord
        await ledger.pins.markSettleUncertain(id, new Date().toISOString())
        expect(await ledger.notes.apply([{ read, next: 'drop' }])).toEqual([])
        expect(await ledger.notes.get(id)).toBeDefined()
      })

      it('notes.close removes the note and keeps an audit record', async () => {
        const [i1, i2] = [paid(newCid()).payment.id, paid(newCid()).payment.id]
        const n1 = note(i1)
        await ledger.pins.markSettling(n1)
        await ledger.pins.markSettling(note(i2))
        const at = new Date('2026-11-28T12:00:00.000Z')
        const closed = await ledger.notes.close(i1, 'refunded by hand', at)
        expect(closed).toEqual({ note: n1, closedAt: at.toISOString(), operatorNote: 'refunded by hand' })
        expect(await ledger.notes.get(i1)).toBeUndefined()
        expect((await ledger.notes.all()).map(n => n.paymentId)).toEqual([i2])
        expect(await ledger.notes.closed()).toEqual([closed])
        expect(await ledger.notes.close(i1, 'again')).toBeUndefined()
        expect(await ledger.notes.closed()).toHaveLength(1)
      })
    })

    describe('upload tickets', () => {
      it('a ticket is recorded with its payment; a second with the same id or payment writes nothing', async () => {
        const t = boughtTicket()
        await ledger.transaction(async (tx) => { await tx.recordPayment(t.payment); await tx.putTicket(t.ticket) })
        expect(await ledger.tickets.get(t.ticket.id)).toEqual(t.ticket)
        expect(await ledger.pins.paymentUsed(t.payment.id)).toBe(true)

        // same id, a new payment: refused, and the payment stays unused
        const again = boughtTicket({ id: t.ticket.id, bytes: 9999 })
        await expect(ledger.transaction(async (tx) => { await tx.recordPayment(again.payment); await tx.putTicket(again.ticket) })).rejects.toThrow()
        expect(await ledger.pins.paymentUsed(again.payment.id)).toBe(false)
        expect(await ledger.tickets.get(t.ticket.id)).toEqual(t.ticket)

        // same payment, a new ticket: refused, and no ticket
        const other = ticketOf({ paymentId: t.payment.id })
        await expect(ledger.transaction(async (tx) => {
          await tx.recordPayment({ ...t.payment, requestid: other.id, purpose: ticketPurpose(other.id) })
          await tx.putTicket(other)
        })).rejects.toBeInstanceOf(PaymentReusedError)
        expect(await ledger.tickets.get(other.id)).toBeUndefined()
      })

      it('a transaction whose function throws after writing writes nothing', async () => {
        const t = boughtTicket()
        await expect(ledger.transaction(async (tx) => {
          await tx.recordPayment(t.payment)
          await tx.putTicket(t.ticket)
          throw new Error('the request failed')
        })).rejects.toThrow('the request failed')
        expect(await ledger.tickets.get(t.ticket.id)).toBeUndefined()
        expect(await ledger.pins.paymentUsed(t.payment.id)).toBe(false)
        // and a pin
        const p = paid(newCid())
        await expect(ledger.transaction(async (tx) => { await tx.createPin(p.pin, p.payment, [p.pin.cid]); throw new Error('no') })).rejects.toThrow('no')
        expect(await ledger.pins.get(p.pin.requestid)).toBeUndefined()
        expect(await ledger.pins.paymentUsed(p.payment.id)).toBe(false)
        expect(await ledger.pins.refCount(p.pin.cid)).toBe(0)
        // the transaction's value when it commits
        expect(await ledger.transaction(async (tx) => { await tx.recordPayment(t.payment); await tx.putTicket(t.ticket); return 42 })).toBe(42)
        expect(await ledger.tickets.get(t.ticket.id)).toEqual(t.ticket)
      })

      it('of N claims at once exactly one makes a pin, and the ticket names it', async () => {
        const t = boughtTicket()
        await ledger.transaction(async (tx) => { await tx.recordPayment(t.payment); await tx.putTicket(t.ticket) })
        const tries = Array.from({ length: 8 }, () => pinRecord(newRequestid(), newCid(), { owner: OWNER }))
        const results = await Promise.allSettled(tries.map(async (pin) => {
          await ledger.transaction(async (tx) => {
            await tx.claimTicket(t.ticket.id, OWNER, pin.requestid)
            await tx.createPin(pin, undefined, [pin.cid])
          })
        }))
        expect(results.filter(r => r.status === 'fulfilled')).toHaveLength(1)
        for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ name: 'TicketClaimError', why: 'used' })
        const winner = tries[results.findIndex(r => r.status === 'fulfilled')] as PinRecord
        for (const pin of tries) expect(await ledger.pins.get(pin.requestid) != null).toBe(pin === winner)
        expect((await ledger.tickets.get(t.ticket.id))?.claimed?.requestid).toBe(winner.requestid)
        await expect(ledger.tickets.check(t.ticket.id, OWNER)).rejects.toMatchObject({ why: 'used' })
      })

      it('a claim by another owner, of an expired, used or unknown ticket is TicketClaimError and writes nothing', async () => {
        const t = boughtTicket()
        await ledger.transaction(async (tx) => { await tx.recordPayment(t.payment); await tx.putTicket(t.ticket) })
        const claim = async (id: string, owner: string, now?: Date): Promise<{ err: unknown, pin: PinRecord }> => {
          const pin = pinRecord(newRequestid(), newCid(), { owner })
          const err = await ledger.transaction(async (tx) => {
            await tx.claimTicket(id, owner, pin.requestid, now)
            await tx.createPin(pin, undefined, [pin.cid])
          }).then(() => undefined, (e: unknown) => e)
          return { err, pin }
        }
        const expectRefused = async (r: { err: unknown, pin: PinRecord }, why: TicketClaimError['why']): Promise<void> => {
          expect(r.err).toBeInstanceOf(TicketClaimError)
          expect((r.err as TicketClaimError).why).toBe(why)
          expect(await ledger.pins.get(r.pin.requestid)).toBeUndefined()
          expect(await ledger.pins.refCount(r.pin.cid)).toBe(0)
        }
        await expectRefused(await claim(t.ticket.id, OTHER), 'not-owner')
        await expectRefused(await claim(t.ticket.id, OWNER, new Date(Date.parse(t.ticket.expiresAt) + 1)), 'expired')
        await expectRefused(await claim(newRequestid(), OWNER), 'unknown')
        expect((await ledger.tickets.get(t.ticket.id))?.claimed).toBeUndefined()
        await expect(ledger.tickets.check(t.ticket.id, OTHER)).rejects.toMatchObject({ why: 'not-owner' })
        expect((await ledger.tickets.check(t.ticket.id, OWNER)).id).toBe(t.ticket.id)

        const ok = await claim(t.ticket.id, OWNER)
        expect(ok.err).toBeUndefined()
        await expectRefused(await claim(t.ticket.id, OWNER), 'used')
        expect((await ledger.tickets.get(t.ticket.id))?.claimed?.requestid).toBe(ok.pin.requestid)
      })

      it('a claim whose pin is refused leaves the ticket unclaimed', async () => {
        const t = boughtTicket()
        await ledger.transaction(async (tx) => { await tx.recordPayment(t.payment); await tx.putTicket(t.ticket) })
        // the pin replaces one that does not exist: its check fails, the claim goes with it
        const pin = pinRecord(newRequestid(), newCid(), { owner: OWNER, replaces: newRequestid() })
        await expect(ledger.transaction(async (tx) => {
          await tx.claimTicket(t.ticket.id, OWNER, pin.requestid)
          await tx.createPin(pin, undefined, [pin.cid])
        })).rejects.toBeInstanceOf(PinGoneError)
        expect((await ledger.tickets.get(t.ticket.id))?.claimed).toBeUndefined()
        expect(await ledger.pins.get(pin.requestid)).toBeUndefined()
        expect((await ledger.tickets.check(t.ticket.id, OWNER)).id).toBe(t.ticket.id)
      })

      it('noteFailed adds to an unclaimed ticket\'s failedBytes only', async () => {
        const t = boughtTicket()
        await ledger.transaction(async (tx) => { await tx.recordPayment(t.payment); await tx.putTicket(t.ticket) })
        await ledger.tickets.noteFailed(t.ticket.id, 100)
        await ledger.tickets.noteFailed(t.ticket.id, 50)
        expect((await ledger.tickets.get(t.ticket.id))?.failedBytes).toBe(150)
        const pin = pinRecord(newRequestid(), newCid(), { owner: OWNER })
        await ledger.transaction(async (tx) => { await tx.claimTicket(t.ticket.id, OWNER, pin.requestid); await tx.createPin(pin) })
        await ledger.tickets.noteFailed(t.ticket.id, 7)
        expect((await ledger.tickets.get(t.ticket.id))?.failedBytes).toBe(150)
        await ledger.tickets.noteFailed(newRequestid(), 7)
      })

      it('a transaction holds one pin write: a second is refused and nothing of it is written', async () => {
        const a = paid(newCid())
        const b = paid(newCid())
        await expect(ledger.transaction(async (tx) => { await tx.createPin(a.pin, a.payment); await tx.createPin(b.pin, b.payment) })).rejects.toThrow()
        expect(await ledger.pins.get(a.pin.requestid)).toBeUndefined()
        expect(await ledger.pins.get(b.pin.requestid)).toBeUndefined()
        expect(await ledger.pins.paymentUsed(a.payment.id)).toBe(false)
      })
    })

    describe('tokens', () => {
      it('revokeToken revokes one jti; revokeOwner the owner\'s tokens issued at or before its time', async () => {
        const owner = '0x' + 'd4'.repeat(20)
        const at = new Date('2026-11-28T12:00:00.000Z')
        const iat = at.getTime() / 1000
        expect(await ledger.tokens.isRevoked({ jti: 'j1', sub: owner, iat })).toBe(false)
        await ledger.tokens.revokeToken('j1', at)
        expect(await ledger.tokens.isRevoked({ jti: 'j1', sub: owner, iat })).toBe(true)
        expect(await ledger.tokens.revokedAt('j1')).toBe(at.toISOString())
        expect(await ledger.tokens.isRevoked({ jti: 'j2', sub: owner, iat })).toBe(false)
        expect(await ledger.tokens.revokedAt('j2')).toBeUndefined()

        await ledger.tokens.revokeOwner(owner, at)
        expect(await ledger.tokens.isRevoked({ jti: 'j2', sub: owner, iat })).toBe(true)
        expect(await ledger.tokens.isRevoked({ jti: 'j3', sub: owner, iat: iat - 100 })).toBe(true)
        expect(await ledger.tokens.isRevoked({ jti: 'j4', sub: owner, iat: iat + 1 })).toBe(false)
        expect(await ledger.tokens.isRevoked({ jti: 'j5', sub: OTHER, iat: iat - 100 })).toBe(false)
        // an earlier revocation does not take back a later one
        await ledger.tokens.revokeOwner(owner, new Date(at.getTime() - 3600_000))
        expect(await ledger.tokens.isRevoked({ jti: 'j2', sub: owner, iat })).toBe(true)
      })

      it('recordIssued, listIssued and wasIssued: operator tokens, with their revocation', async () => {
        const rec = (jti: string, owner: string, issuedAt: string): Parameters<Ledger['tokens']['recordIssued']>[0] =>
          ({ jti, owner, permissions: ['pins:write'], issuedAt, expiresAt: '2027-11-28T00:00:00.000Z', kid: 'k1', note: `token ${jti}` })
        const a = rec('op-a', OWNER, '2026-11-01T00:00:00.000Z')
        const b = rec('op-b', OTHER, '2026-11-02T00:00:00.000Z')
        const c = rec('op-c', '0x' + 'e5'.repeat(20), '2026-11-03T00:00:00.000Z')
        for (const r of [a, b, c]) await ledger.tokens.recordIssued(r)
        expect(await ledger.tokens.wasIssued('op-a')).toBe(true)
        expect(await ledger.tokens.wasIssued('wallet-jti')).toBe(false)
        await ledger.tokens.revokeToken('op-a', new Date('2026-11-10T00:00:00.000Z'))
        await ledger.tokens.revokeOwner(OTHER, new Date('2026-11-05T00:00:00.000Z'))
        const listed = await ledger.tokens.listIssued()
        const byJti = new Map(listed.map(r => [r.jti, r]))
        expect(listed).toHaveLength(3)
        expect(byJti.get('op-a')).toEqual({ ...a, revoked: '2026-11-10T00:00:00.000Z' })
        expect(byJti.get('op-b')?.revoked).toEqual(expect.any(String))
        expect(byJti.get('op-c')).toEqual(c)
      })
    })

    describe('denials', () => {
      const rule = (key: string, reason: string, at: string) => ({ key, rule: `/ipfs/${key}`, reason, by: 'op', at })

      it('add, get, all, remove, and the history of every add and rm in order', async () => {
        const k1 = 'zQmKeyOne'
        const k2 = 'zQmKeyTwo'
        const r1 = rule(k1, 'dmca', '2026-11-01T00:00:00.000Z')
        const r2 = rule(k2, 'abuse', '2026-11-02T00:00:00.000Z')
        // deny-admin reads add's result as the rule it replaced (none here)
        expect(await ledger.denials.add(r1)).toBeUndefined()
        expect(await ledger.denials.add(r2)).toBeUndefined()
        expect(await ledger.denials.get(k1)).toEqual(r1)
        expect(sorted((await ledger.denials.all()).map(r => r.key))).toEqual(sorted([k1, k2]))

        // a second add of a key: the rule in force is the new one, the old one is returned
        const r1b = rule(k1, 'dmca, second notice', '2026-11-03T00:00:00.000Z')
        expect(await ledger.denials.add(r1b)).toEqual(r1)
        expect(await ledger.denials.get(k1)).toEqual(r1b)
        expect(await ledger.denials.all()).toHaveLength(2)

        expect(await ledger.denials.remove(k2, { by: 'op2', at: '2026-11-04T00:00:00.000Z', reason: 'counter-notice' })).toEqual(r2)
        expect(await ledger.denials.get(k2)).toBeUndefined()
        expect(await ledger.denials.remove(k2, { by: 'op2', at: '2026-11-05T00:00:00.000Z' })).toBeUndefined()
        expect((await ledger.denials.all()).map(r => r.key)).toEqual([k1])

        expect(await ledger.denials.history()).toEqual([
          { op: 'add', key: k1, rule: r1.rule, reason: 'dmca', by: 'op', at: r1.at },
          { op: 'add', key: k2, rule: r2.rule, reason: 'abuse', by: 'op', at: r2.at },
          { op: 'add', key: k1, rule: r1b.rule, reason: r1b.reason, by: 'op', at: r1b.at },
          { op: 'rm', key: k2, rule: r2.rule, reason: 'counter-notice', by: 'op2', at: '2026-11-04T00:00:00.000Z' }
        ])
      })
    })

    describe('the provide schedule', () => {
      const mhOf = (cid: string): Buffer => Buffer.from(CID.parse(cid).multihash.bytes)

      it('a pin holding blocks schedules its root and blocks at once; the last pin of a CID to go unschedules it', async () => {
        let woken = 0
        const stop = ledger.provides.onNewKeys(() => { woken++ })
        const root = newCid()
        const inner = newCid()
        const p1 = paid(root)
        const before = Date.now()
        await ledger.pins.create(p1.pin, p1.payment, [root, inner])
        stop()
        expect(woken).toBeGreaterThan(0)
        expect(await ledger.provides.count('roots')).toBe(1)
        expect(await ledger.provides.count('blocks')).toBe(2)
        const now = Date.now()
        expect(await ledger.provides.countDue('roots', now)).toBe(1)
        expect(await ledger.provides.countDue('roots', before - 1000)).toBe(0)
        const first = await ledger.provides.firstDue('roots')
        expect(first).toBeGreaterThanOrEqual(before - 1000)
        expect(first).toBeLessThanOrEqual(now)
        const due = await ledger.provides.due('roots', now, 10)
        expect(due).toHaveLength(1)
        expect(Buffer.from(due[0]?.mh as Uint8Array).equals(mhOf(root))).toBe(true)
        expect(due[0]?.at).toBe(0)
        expect(sorted((await ledger.provides.due('blocks', now, 10)).map(k => Buffer.from(k.mh).toString('hex')))).toEqual(sorted([root, inner].map(c => mhOf(c).toString('hex'))))

        // announced: due again in an hour
        const kad = due[0]?.kad as Buffer
        const next = now + HOUR
        await ledger.provides.reschedule('roots', [{ kad, due: next, at: now }])
        expect(await ledger.provides.countDue('roots', now)).toBe(0)
        expect(await ledger.provides.due('roots', now, 10)).toEqual([])
        expect(await ledger.provides.firstDue('roots')).toBe(next)
        expect(await ledger.provides.countDue('roots', next)).toBe(1)
        const [inRange] = await ledger.provides.inRange('roots', { start: kad })
        expect(inRange?.kad.equals(kad)).toBe(true)
        expect([inRange?.due, inRange?.at]).toEqual([next, now])

        // a second pin of the same root: one key, held twice
        const p2 = paid(root)
        await ledger.pins.create(p2.pin, p2.payment, [root])
        expect(await ledger.provides.count('roots')).toBe(1)
        expect(await ledger.provides.firstDue('roots')).toBe(next)
        await ledger.pins.remove(p1.pin.requestid, 'unpinned')
        expect(await ledger.provides.count('roots')).toBe(1)
        expect(await ledger.provides.count('blocks')).toBe(1)
        await ledger.pins.remove(p2.pin.requestid, 'expired')
        expect(await ledger.provides.count('roots')).toBe(0)
        expect(await ledger.provides.count('blocks')).toBe(0)
        expect(await ledger.provides.firstDue('roots')).toBeUndefined()
        // released meanwhile: a reschedule brings nothing back
        await ledger.provides.reschedule('roots', [{ kad, due: next }])
        expect(await ledger.provides.count('roots')).toBe(0)
      })

      it('identity CIDs are never scheduled', async () => {
        const root = identityCid('tiny root')
        const leaf = identityCid('tiny leaf')
        const real = newCid()
        const p = paid(root)
        await ledger.pins.create(p.pin, p.payment, [root, leaf, real])
        expect(await ledger.pins.refCount(leaf)).toBe(1)
        expect(await ledger.provides.count('roots')).toBe(0)
        expect(await ledger.provides.count('blocks')).toBe(1)
        expect((await ledger.provides.due('blocks', Date.now(), 10)).map(k => Buffer.from(k.mh).toString('hex'))).toEqual([mhOf(real).toString('hex')])
      })
    })

    describe('snapshots', () => {
      it('a snapshot reads the ledger of its instant while writes and archive moves go on', async () => {
        const now = Date.now()
        const gone = paid(newCid())
        await ledger.pins.create(gone.pin, gone.payment, [gone.pin.cid])
        await ledger.pins.remove(gone.pin.requestid, 'unpinned', new Date(now - HOUR))
        const a = paid(newCid())
        const blocks = [a.pin.cid, newCid()]
        await ledger.pins.create(a.pin, a.payment, blocks)
        const t1 = boughtTicket()
        await ledger.transaction(async (tx) => { await tx.recordPayment(t1.payment); await tx.putTicket(t1.ticket) })
        const removedGone = await ledger.pins.get(gone.pin.requestid)

        const snap = await ledger.snapshot()
        try {
          // meanwhile: a removal, a new pin, a new ticket, a claim, an archive move
          await ledger.pins.remove(a.pin.requestid, 'unpinned')
          const b = paid(newCid())
          await ledger.pins.create(b.pin, b.payment, [b.pin.cid])
          const t2 = boughtTicket()
          await ledger.transaction(async (tx) => { await tx.recordPayment(t2.payment); await tx.putTicket(t2.ticket) })
          const c = pinRecord(newRequestid(), newCid(), { owner: OWNER })
          await ledger.transaction(async (tx) => { await tx.claimTicket(t1.ticket.id, OWNER, c.requestid); await tx.createPin(c) })
          expect(await ledger.pins.archiveDue(new Date(now - 30 * 60_000))).toBe(1)

          const pins = await collect(snap.pins())
          expect(sorted(pins.map(p => p.requestid))).toEqual(sorted([gone.pin.requestid, a.pin.requestid]))
          expect(pins.find(p => p.requestid === a.pin.requestid)).toEqual(a.pin)
          expect(pins.find(p => p.requestid === gone.pin.requestid)).toEqual(removedGone)
          expect(sorted((await collect(snap.payments())).map(p => p.id))).toEqual(sorted([gone.payment.id, a.payment.id, t1.payment.id]))
          expect(await collect(snap.tickets())).toEqual([t1.ticket])
          expect(await snap.ticket(t1.ticket.id)).toEqual(t1.ticket)
          expect(await snap.ticket(t2.ticket.id)).toBeUndefined()
          expect(await snap.pin(a.pin.requestid)).toEqual(a.pin)
          expect(await snap.pin(b.pin.requestid)).toBeUndefined()
          expect(sorted(await snap.blocksOf(a.pin.requestid))).toEqual(sorted(blocks))

          // the ledger itself has moved on
          expect((await ledger.pins.get(a.pin.requestid))?.removed?.why).toBe('unpinned')
          expect(await ledger.pins.blocksOf(a.pin.requestid)).toEqual([])
          expect((await ledger.tickets.get(t1.ticket.id))?.claimed?.requestid).toBe(c.requestid)
        } finally {
          await snap.release()
        }
        // released: the next snapshot sees the present
        const now2 = await ledger.snapshot()
        try {
          expect((await now2.pin(a.pin.requestid))?.removed?.why).toBe('unpinned')
          expect(await collect(now2.tickets())).toHaveLength(2)
        } finally {
          await now2.release()
        }
      })
    })

    describe('list', () => {
      /** pins created in this order (createdUs increasing) */
      async function seed (): Promise<Record<string, PinRecord>> {
        const soon = new Date(Date.now() + 30 * 24 * HOUR).toISOString()
        const past = new Date(Date.now() - HOUR).toISOString()
        const specs: Array<[string, Partial<PinRecord>]> = [
          ['p1', { owner: OWNER, name: 'Photo album', meta: { kind: 'img' }, status: 'pinned' }],
          ['p2', { owner: OWNER, name: 'notes', meta: { kind: 'txt' }, status: 'queued' }],
          ['q1', { owner: OTHER, name: 'Photo album', meta: { kind: 'img' }, status: 'pinned' }],
          ['p3', { owner: OWNER, name: 'photo', meta: { kind: 'img', year: '2026' }, status: 'pinning' }],
          ['p4', { owner: OWNER, status: 'failed', meta: {} }],
          ['p5', { owner: OWNER, name: 'old', status: 'pinned', pinnedUntil: past }],
          ['p6', { owner: OWNER, name: 'gone', status: 'pinned' }],
          ['p7', { owner: OWNER, name: 'Photos 2', status: 'pinned' }]
        ]
        const out: Record<string, PinRecord> = {}
        for (const [key, extra] of specs) {
          const pin = pinRecord(newRequestid(), newCid(), { pinnedUntil: soon, ...extra })
          await ledger.pins.create(pin, undefined, [pin.cid])
          out[key] = pin
        }
        await ledger.pins.remove((out.p6 as PinRecord).requestid, 'unpinned')
        return out
      }
      const ids = (r: { results: PinRecord[] }): string[] => r.results.map(p => p.requestid)

      it('one owner\'s pins, newest first, without removed or expired ones; limit and count', async () => {
        const p = await seed()
        const id = (k: string): string => (p[k] as PinRecord).requestid
        const all = await ledger.pins.list(OWNER, query())
        // p5 expired, p6 removed, q1 another owner's
        expect(ids(all)).toEqual(['p7', 'p4', 'p3', 'p2', 'p1'].map(id))
        expect(all.count).toBe(5)
        expect(all.results[0]).toEqual(p.p7)
        const page = await ledger.pins.list(OWNER, query({ limit: 2 }))
        expect(ids(page)).toEqual(['p7', 'p4'].map(id))
        expect(page.count).toBe(5)
        expect(await ledger.pins.list(OTHER, query())).toEqual({ count: 1, results: [p.q1] })
        const everyone = await ledger.pins.list(undefined, query({ limit: 3 }))
        expect(everyone.count).toBe(6)
        expect(ids(everyone)).toEqual(['p7', 'p4', 'p3'].map(id))
        expect(await ledger.pins.list('0x' + '00'.repeat(20), query())).toEqual({ count: 0, results: [] })
      })

      it('statuses, name, meta, cid and before/after filters', async () => {
        const p = await seed()
        const id = (k: string): string => (p[k] as PinRecord).requestid
        // owner null: every owner's (an undefined argument would take the default)
        const list = async (q: Partial<PinQuery>, owner: string | null = OWNER): Promise<string[]> => ids(await ledger.pins.list(owner ?? undefined, query(q)))
        expect(await list({ statuses: new Set(['queued', 'pinning']) })).toEqual(['p3', 'p2'].map(id))
        expect(await list({ statuses: new Set(['failed']) })).toEqual([id('p4')])
        expect(await list({ statuses: new Set(['pinned']) })).toEqual(['p7', 'p1'].map(id))
        expect(await list({ name: 'Photo album' })).toEqual([id('p1')])
        expect(await list({ name: 'photo album' })).toEqual([])
        expect(await list({ name: 'photo album', match: 'iexact' })).toEqual([id('p1')])
        expect(await list({ name: 'Photo', match: 'partial' })).toEqual(['p7', 'p1'].map(id))
        expect(await list({ name: 'PHOTO', match: 'ipartial' })).toEqual(['p7', 'p3', 'p1'].map(id))
        expect(await list({ name: 'Photo album' }, null)).toEqual(['q1', 'p1'].map(id))
        expect(await list({ meta: { kind: 'img' } })).toEqual(['p3', 'p1'].map(id))
        expect(await list({ meta: { kind: 'img', year: '2026' } })).toEqual([id('p3')])
        expect(await list({ cids: new Set([(p.p3 as PinRecord).cid]) })).toEqual([id('p3')])
        expect(await list({ cids: new Set([(p.q1 as PinRecord).cid]) })).toEqual([])
        expect(await list({ cids: new Set([(p.q1 as PinRecord).cid, (p.p1 as PinRecord).cid]) }, null)).toEqual(['q1', 'p1'].map(id))
        // a removed pin's CID finds nothing
        expect(await list({ cids: new Set([(p.p6 as PinRecord).cid]) })).toEqual([])
        // strictly before / after a creation time
        const us = (k: string): number => (p[k] as PinRecord).createdUs
        expect(await list({ beforeUs: us('p4') })).toEqual(['p3', 'p2', 'p1'].map(id))
        expect(await list({ afterUs: us('p2') })).toEqual(['p7', 'p4', 'p3'].map(id))
        expect(await list({ afterUs: us('p1'), beforeUs: us('p4') })).toEqual(['p3', 'p2'].map(id))
        const window = await ledger.pins.list(OWNER, query({ afterUs: us('p1'), beforeUs: us('p7'), limit: 1 }))
        expect(window.count).toBe(3)
        expect(ids(window)).toEqual([id('p4')])
        const named = await ledger.pins.list(OWNER, query({ name: 'photo', match: 'ipartial', limit: 1 }))
        expect(named.count).toBe(3)
        expect(ids(named)).toEqual([id('p7')])
      })
    })

    describe('durability', () => {
      it('what was written is read back after a reopen', async (ctx) => {
        // an implementation that cannot reopen has nothing to show here
        if (opened.reopen == null) ctx.skip()
        const a = paid(newCid())
        const blocks = [a.pin.cid, newCid()]
        await ledger.pins.create(a.pin, a.payment, blocks)
        const q = paid(newCid(), { pin: { status: 'queued' } })
        await ledger.pins.create(q.pin, q.payment)
        const t = boughtTicket()
        await ledger.transaction(async (tx) => { await tx.recordPayment(t.payment); await tx.putTicket(t.ticket) })
        const n = note(paid(newCid()).payment.id)
        await ledger.pins.markSettling(n)
        await ledger.tokens.revokeToken('jti-1', new Date('2026-11-28T00:00:00.000Z'))
        const d = { key: 'zQmDurable', rule: '/ipfs/zQmDurable', reason: 'r', by: 'op', at: '2026-11-28T00:00:00.000Z' }
        await ledger.denials.add(d)
        const settings = { tokenIssuer: 'https://pind.example', tokenTtl: 3600, expiryGrace: 86400, provideStrategy: 'roots', reprovideInterval: 79200 }
        await ledger.recordSettings(settings)
        const schema = await ledger.schemaVersion()

        const again = await (opened.reopen as () => Promise<Ledger>)()
        expect(await again.pins.get(a.pin.requestid)).toEqual(a.pin)
        expect(await again.pins.payment(a.payment.id)).toEqual(a.payment)
        expect(await again.pins.paymentUsed(a.payment.id)).toBe(true)
        expect(sorted(await again.pins.blocksOf(a.pin.requestid))).toEqual(sorted(blocks))
        expect(await again.pins.refCount(blocks[1] as string)).toBe(1)
        expect(await again.pins.pendingFetches()).toEqual([q.pin.requestid])
        expect(await again.tickets.get(t.ticket.id)).toEqual(t.ticket)
        expect(await again.pins.paymentUsed(t.payment.id)).toBe(true)
        expect(await again.notes.get(n.paymentId)).toEqual(n)
        expect(await again.tokens.revokedAt('jti-1')).toBe('2026-11-28T00:00:00.000Z')
        expect(await again.denials.get(d.key)).toEqual(d)
        expect(await again.recordedSettings()).toEqual(settings)
        expect(await again.schemaVersion()).toEqual(schema)
        expect(await again.provides.count('roots')).toBe(1)
        expect((await again.pins.list(OWNER, query())).count).toBe(2)
        // and it still refuses the payment
        const b = paid(newCid(), { id: a.payment.id })
        await expect(again.pins.create(b.pin, sameIdFor(a.payment, b.pin))).rejects.toBeInstanceOf(PaymentReusedError)
      })
    })
  })
}
