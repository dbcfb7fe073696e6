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
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { Key } from 'interface-datastore'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { identity } from 'multiformats/hashes/identity'
import type { CommittedChanges, PinChange } from '../../src/ledger/changes.js'
import { PaymentReusedError, PinGoneError, TicketClaimError } from '../../src/ledger/errors.js'
import type { Ledger } from '../../src/ledger/ledger.js'
import type { PinQuery } from '../../src/ledger/query.js'
import type { PaymentRecord, PinRecord, PinState } from '../../src/ledger/records.js'
import { newRequestid } from '../../src/ledger/requestid.js'
import type { SettlingRecord } from '../../src/ledger/settlements.js'
import type { ProvideKey } from '../../src/ledger/provides.js'
import { ticketPurpose, type UploadTicket } from '../../src/ledger/tickets.js'
import { OWNER, paidPin, pinRecord } from '../helpers/records.js'

export interface OpenedLedger {
  ledger: Ledger
  /** closes the ledger and opens the same store again */
  reopen?: () => Promise<Ledger>
  /** closes whichever ledger is open and removes what the test made */
  close(): Promise<void>
}

/** an OpenedLedger whose reopen closes the ledger and opens the same store again with `open`; `cleanup` removes the store */
export async function reopenable<L extends Ledger> (open: () => Promise<L>, cleanup: () => Promise<void>): Promise<OpenedLedger> {
  let current = await open()
  return {
    ledger: current,
    reopen: async () => {
      await current.close()
      current = await open()
      return current
    },
    close: async () => {
      await current.close()
      await cleanup()
    }
  }
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

/** a new payment renewing `pin` */
function renewal (pin: PinRecord): PaymentRecord {
  return { ...paid(newCid()).payment, requestid: pin.requestid, purpose: `renew:${pin.requestid}:1` }
}

/** waits for what a watcher is told: a ledger may tell its watchers after the write's promise resolves */
async function eventually (check: () => void): Promise<void> {
  await vi.waitFor(check, { timeout: 10_000, interval: 5 })
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
      it('revocations lists every revoked jti (recorded or not) and every owner revocation, the latest time per owner', async () => {
        expect(await ledger.tokens.revocations()).toEqual({ tokens: [], owners: [] })
        await ledger.tokens.revokeToken('jti-wallet', new Date('2026-11-01T00:00:00.000Z'))
        await ledger.tokens.revokeOwner('0x' + 'E5'.repeat(20), new Date('2026-11-02T00:00:00.000Z'))
        await ledger.tokens.revokeOwner('0x' + 'e5'.repeat(20), new Date('2026-11-01T00:00:00.000Z'))
        const r = await ledger.tokens.revocations()
        expect(r.tokens).toEqual([{ jti: 'jti-wallet', at: '2026-11-01T00:00:00.000Z' }])
        expect(r.owners).toEqual([{ owner: '0x' + 'e5'.repeat(20), iat: Date.parse('2026-11-02T00:00:00.000Z') / 1000 }])
      })

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

      it('useNonce: a nonce is used once until its time; concurrent uses, one wins; past its time it is forgotten', async () => {
        const now = new Date('2026-11-29T12:00:00.000Z')
        const until = new Date(now.getTime() + 600_000)
        expect(await ledger.tokens.useNonce('a1b2c3d4e5f6a7b8', until, now)).toBe(true)
        expect(await ledger.tokens.useNonce('a1b2c3d4e5f6a7b8', until, now)).toBe(false)
        expect(await ledger.tokens.useNonce('a1b2c3d4e5f6a7b8', new Date(until.getTime() + 999_999), new Date(until.getTime() - 1))).toBe(false)
        expect(await ledger.tokens.useNonce('A1B2C3D4E5F6A7B8', until, now)).toBe(true)
        const raced = await Promise.all(Array.from({ length: 8 }, async () => await ledger.tokens.useNonce('raced00000000000', until, now)))
        expect(raced.filter(Boolean)).toHaveLength(1)
        // past its time the nonce is free (its message can no longer be valid), and old ones are forgotten as others are used
        const later = new Date(until.getTime() + 1)
        expect(await ledger.tokens.useNonce('a1b2c3d4e5f6a7b8', new Date(later.getTime() + 600_000), later)).toBe(true)
        expect(await ledger.tokens.useNonce('a1b2c3d4e5f6a7b8', new Date(later.getTime() + 600_000), later)).toBe(false)
        expect(await ledger.tokens.useNonce('raced00000000000', new Date(later.getTime() + 600_000), later)).toBe(true)
        if (opened.reopen != null) {
          ledger = await opened.reopen()
          expect(await ledger.tokens.useNonce('raced00000000000', new Date(later.getTime() + 600_000), later)).toBe(false)
        }
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

      it('claim holds each key once until it is rescheduled or the hold passes; a key read before it was announced is not taken', async () => {
        const roots = [newCid(), newCid(), newCid()]
        for (const r of roots) { const p = paid(r); await ledger.pins.create(p.pin, p.payment, [r]) }
        const now = Date.now()
        const due = await ledger.provides.due('roots', now, 10)
        expect(due).toHaveLength(3)
        const [a, b, c] = due as [ProvideKey, ProvideKey, ProvideKey]
        const hex = (ks: Buffer[]): string[] => sorted(ks.map(k => k.toString('hex')))
        expect(hex(await ledger.provides.claim('roots', [a], now + HOUR))).toEqual(hex([a.kad]))
        // held: not taken again, however it is read; the others are
        expect(hex(await ledger.provides.claim('roots', [a, b], now + HOUR))).toEqual(hex([b.kad]))
        // holding changes nothing of when keys are due
        expect(await ledger.provides.countDue('roots', now)).toBe(3)
        // announced by its holder (rescheduled, naming the announcer): free again, at its new due time only
        await ledger.provides.reschedule('roots', [{ kad: a.kad, due: now + 2 * HOUR, at: now, by: 'peer-a' }])
        expect(await ledger.provides.claim('roots', [a], now + HOUR)).toEqual([])
        expect(hex(await ledger.provides.claim('roots', [{ kad: a.kad, due: now + 2 * HOUR }], now + HOUR))).toEqual(hex([a.kad]))
        // a hold that has passed (its holder died) is taken over
        expect(hex(await ledger.provides.claim('roots', [c], Date.now() - 1))).toEqual(hex([c.kad]))
        expect(hex(await ledger.provides.claim('roots', [c], now + HOUR))).toEqual(hex([c.kad]))
        expect(await ledger.provides.countDue('roots', now)).toBe(2)
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

      it('due pages through the keys due by a time in due order; inRange reads a keyspace region; cycleStart is fixed at its first call', async () => {
        const roots = [newCid(), newCid(), newCid(), newCid()]
        for (const r of roots) {
          const p = paid(r)
          await ledger.pins.create(p.pin, p.payment, [r])
        }
        const now = Date.now()
        const keys = (await ledger.provides.due('roots', now, 10)).map(k => k.kad)
        expect(keys).toHaveLength(4)
        // each root's key: kad = sha256(multihash)
        const kadOf = new Map(keys.map(k => [k.toString('hex'), k]))
        const byRoot = roots.map(r => kadOf.get(createHash('sha256').update(mhOf(r)).digest().toString('hex')) as Buffer)
        for (const k of byRoot) expect(k).toBeDefined()
        // due one, two, three and four hours from now, in the order of the roots
        await ledger.provides.reschedule('roots', byRoot.map((kad, i) => ({ kad, due: now + (i + 1) * HOUR, at: now - i })))
        const hex = (ks: Array<{ kad: Buffer }>): string[] => ks.map(k => Buffer.from(k.kad).toString('hex'))
        const want = hex(byRoot.map(kad => ({ kad })))

        expect(await ledger.provides.due('roots', now, 10)).toEqual([])
        const two = await ledger.provides.due('roots', now + 2.5 * HOUR, 10)
        expect(hex(two)).toEqual(want.slice(0, 2))
        expect(two.map(k => [k.due, k.at])).toEqual([[now + HOUR, now], [now + 2 * HOUR, now - 1]])
        expect(Buffer.from(two[0]?.mh as Uint8Array).equals(mhOf(roots[0] as string))).toBe(true)
        expect(await ledger.provides.countDue('roots', now + 2.5 * HOUR)).toBe(2)
        expect(await ledger.provides.firstDue('roots')).toBe(now + HOUR)
        // a page of two, then the next from where it ended
        const first = await ledger.provides.due('roots', now + 5 * HOUR, 2)
        expect(hex(first)).toEqual(want.slice(0, 2))
        const last = first[1] as { due: number, kad: Buffer }
        const next = await ledger.provides.due('roots', now + 5 * HOUR, 2, { due: last.due, kad: last.kad })
        expect(hex(next)).toEqual(want.slice(2))
        expect(await ledger.provides.due('roots', now + 5 * HOUR, 2, { due: (next[1] as ProvideKey).due, kad: (next[1] as ProvideKey).kad })).toEqual([])

        // rescheduled without `at`: when it was last announced stays
        await ledger.provides.reschedule('roots', [{ kad: byRoot[0] as Buffer, due: now + 10 * HOUR }])
        expect(hex(await ledger.provides.due('roots', now + 5 * HOUR, 10))).toEqual(want.slice(1))
        const [again] = await ledger.provides.inRange('roots', { start: byRoot[0] as Buffer, end: Buffer.concat([byRoot[0] as Buffer, Buffer.from([0])]) })
        expect([again?.due, again?.at]).toEqual([now + 10 * HOUR, now])

        // regions: from start (inclusive) to end (exclusive), in keyspace order
        const ordered = [...byRoot].sort(Buffer.compare)
        expect(hex(await ledger.provides.inRange('roots', { start: ordered[1] as Buffer, end: ordered[3] as Buffer }))).toEqual(hex(ordered.slice(1, 3).map(kad => ({ kad }))))
        expect(hex(await ledger.provides.inRange('roots', { start: ordered[2] as Buffer }))).toEqual(hex(ordered.slice(2).map(kad => ({ kad }))))
        expect(hex(await ledger.provides.inRange('roots', { start: Buffer.alloc(32) }))).toEqual(hex(ordered.map(kad => ({ kad }))))

        expect(await ledger.provides.cycleStart(now)).toBe(now)
        expect(await ledger.provides.cycleStart(now + HOUR)).toBe(now)
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

      it('as of `now`: a pin is listed until its pinned_until plus the grace, a failed one after it too', async () => {
        const p = await seed()
        const id = (k: string): string => (p[k] as PinRecord).requestid
        const grace = ledger.pins.graceMs
        // before p5 expired
        const earlier = await ledger.pins.list(OWNER, query(), new Date(Date.now() - 2 * HOUR - grace))
        expect(ids(earlier)).toEqual(['p7', 'p5', 'p4', 'p3', 'p2', 'p1'].map(id))
        expect(earlier.count).toBe(6)
        // after every pin's pinned_until and the grace: the failed one only
        const later = await ledger.pins.list(OWNER, query(), new Date(Date.now() + 31 * 24 * HOUR + grace))
        expect(later).toEqual({ count: 1, results: [p.p4] })
        expect(ids(await ledger.pins.list(undefined, query(), new Date(Date.now() + 31 * 24 * HOUR + grace)))).toEqual([id('p4')])
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

    describe('pin writes', () => {
      it('update changes a pin and its indexes; an unknown pin is undefined', async () => {
        const q = paid(newCid(), { pin: { status: 'queued' } })
        await ledger.pins.create(q.pin, q.payment)
        const giveUpAt = new Date(Date.now() + HOUR).toISOString()
        const seen: PinRecord[] = []
        const started = await ledger.pins.update(q.pin.requestid, (p) => {
          seen.push(p)
          return { ...p, status: 'pinning', statusDetails: 'attempt 1', fetch: { attempts: 1, giveUpAt } }
        })
        expect(seen.length).toBeGreaterThan(0)
        for (const s of seen) expect(s).toEqual(q.pin)
        const want: PinRecord = { ...q.pin, status: 'pinning', statusDetails: 'attempt 1', fetch: { attempts: 1, giveUpAt } }
        expect(started).toEqual(want)
        expect(await ledger.pins.get(q.pin.requestid)).toEqual(want)
        // still waiting for its DAG, and listed and counted by its new status
        expect(await ledger.pins.pendingFetches()).toEqual([q.pin.requestid])
        expect((await ledger.pins.list(OWNER, query({ statuses: new Set(['pinning']) }))).results).toEqual([want])
        expect((await ledger.pins.list(OWNER, query({ statuses: new Set(['queued']) }))).count).toBe(0)
        expect(await ledger.pins.countByStatus()).toMatchObject({ queued: 0, pinning: 1 })

        let called = false
        expect(await ledger.pins.update(newRequestid(), (p) => { called = true; return p })).toBeUndefined()
        expect(called).toBe(false)
      })

      it('remove records why and when and takes the pin out of the queue, listings and liveness; a removed or unknown pin is undefined', async () => {
        const q = paid(newCid(), { pin: { status: 'queued' } })
        await ledger.pins.create(q.pin, q.payment)
        const at = new Date(Date.now() - 5 * 60_000)
        const gone = await ledger.pins.remove(q.pin.requestid, 'expired', at)
        // the record stays whole, for accounting
        expect(gone).toEqual({ ...q.pin, removed: { at: at.toISOString(), why: 'expired' } })
        expect(await ledger.pins.get(q.pin.requestid)).toEqual(gone)
        expect(ledger.pins.isLive(gone as PinRecord)).toBe(false)
        expect(await ledger.pins.pendingFetches()).toEqual([])
        expect(await ledger.pins.livePinsOf(q.pin.cid)).toEqual([])
        expect(await ledger.pins.list(OWNER, query())).toEqual({ count: 0, results: [] })
        expect(await ledger.pins.known(q.pin.requestid)).toBe(true)
        expect(await ledger.pins.paymentUsed(q.payment.id)).toBe(true)

        expect(await ledger.pins.remove(q.pin.requestid, 'unpinned')).toBeUndefined()
        expect((await ledger.pins.get(q.pin.requestid))?.removed).toEqual({ at: at.toISOString(), why: 'expired' })
        expect(await ledger.pins.remove(newRequestid(), 'unpinned')).toBeUndefined()
      })

      it('takeDown: the pin fails with the reason, lets go of its blocks and its fetch, and update leaves it as it is', async () => {
        const [b1, shared] = [newCid(), newCid()]
        const p = paid(newCid())
        await ledger.pins.create(p.pin, p.payment, [p.pin.cid, b1, shared])
        const other = paid(newCid())
        await ledger.pins.create(other.pin, other.payment, [shared])
        const q = paid(newCid(), { pin: { status: 'queued' } })
        await ledger.pins.create(q.pin, q.payment)
        const heard: string[] = []
        const stop = ledger.pins.watchRemoved((id) => { heard.push(id) })

        const at = new Date('2026-11-28T12:00:00.000Z')
        const down = await ledger.pins.takeDown(p.pin.requestid, 'court order 12', at)
        expect(down).toMatchObject({ requestid: p.pin.requestid, cid: p.pin.cid, owner: OWNER, status: 'failed', takedown: { at: at.toISOString(), reason: 'court order 12' } })
        // the owner sees the reason
        expect(down?.statusDetails).toContain('court order 12')
        expect(await ledger.pins.get(p.pin.requestid)).toEqual(down)
        expect(ledger.pins.isLive(down as PinRecord)).toBe(false)
        expect([await ledger.pins.refCount(p.pin.cid), await ledger.pins.refCount(b1), await ledger.pins.refCount(shared)]).toEqual([0, 0, 1])
        expect(await ledger.pins.blocksOf(p.pin.requestid)).toEqual([])
        expect(await ledger.pins.livePinsOf(p.pin.cid)).toEqual([])
        // shown to its owner, failed, until it would have expired
        expect((await ledger.pins.list(OWNER, query({ statuses: new Set(['failed']) }))).results).toEqual([down])

        // update leaves it as it is
        const kept = await ledger.pins.update(p.pin.requestid, (pin) => ({ ...pin, status: 'pinned', statusDetails: 'fetched again' }))
        expect(kept).toEqual(down)
        expect(await ledger.pins.get(p.pin.requestid)).toEqual(down)
        // taken down already, unknown, removed: nothing
        expect(await ledger.pins.takeDown(p.pin.requestid, 'again')).toBeUndefined()
        expect((await ledger.pins.get(p.pin.requestid))?.takedown?.reason).toBe('court order 12')
        expect(await ledger.pins.takeDown(newRequestid(), 'none')).toBeUndefined()
        const r = paid(newCid())
        await ledger.pins.create(r.pin, r.payment, [r.pin.cid])
        await ledger.pins.remove(r.pin.requestid, 'unpinned')
        expect(await ledger.pins.takeDown(r.pin.requestid, 'late')).toBeUndefined()
        expect((await ledger.pins.get(r.pin.requestid))?.takedown).toBeUndefined()

        // a pin waiting for its fetch leaves the queue, and a fetch that finishes anyway pins nothing
        expect((await ledger.pins.takeDown(q.pin.requestid, 'abuse'))?.status).toBe('failed')
        expect(await ledger.pins.pendingFetches()).toEqual([])
        const late = newCid()
        expect(await ledger.pins.finishFetch(q.pin.requestid, [late], 10, 'fetched')).toBeUndefined()
        expect(await ledger.pins.refCount(late)).toBe(0)
        expect((await ledger.pins.get(q.pin.requestid))?.status).toBe('failed')
        expect(await ledger.pins.failFetch(q.pin.requestid, 'gave up')).toBeUndefined()
        expect((await ledger.pins.get(q.pin.requestid))?.takedown?.reason).toBe('abuse')

        // what fetches it hears to stop
        await eventually(() => { expect(sorted(heard)).toEqual(sorted([p.pin.requestid, q.pin.requestid, r.pin.requestid])) })
        stop()
      })

      it('taking down a replacement still unsettled releases what its chain held', async () => {
        const a1 = newCid()
        const a = paid(newCid())
        await ledger.pins.create(a.pin, a.payment, [a1])
        const b = paid(newCid(), { pin: { status: 'queued', replaces: a.pin.requestid } })
        await ledger.pins.create(b.pin, b.payment)
        expect(await ledger.pins.refCount(a1)).toBe(1)
        await ledger.pins.takeDown(b.pin.requestid, 'abuse')
        expect(await ledger.pins.refCount(a1)).toBe(0)

        // C → D (queued) → E (queued): E holds C's blocks, and its takedown lets go of them
        const c1 = newCid()
        const c = paid(newCid())
        await ledger.pins.create(c.pin, c.payment, [c1])
        const d = paid(newCid(), { pin: { status: 'queued', replaces: c.pin.requestid } })
        await ledger.pins.create(d.pin, d.payment)
        const e = paid(newCid(), { pin: { status: 'queued', replaces: d.pin.requestid } })
        await ledger.pins.create(e.pin, e.payment)
        expect(await ledger.pins.refCount(c1)).toBe(1)
        await ledger.pins.takeDown(e.pin.requestid, 'abuse')
        expect(await ledger.pins.refCount(c1)).toBe(0)
        expect([...await collect(ledger.pins.referencedBlocks())]).toEqual([])
      })

      it('renew extends a pin to until(pin), adds its months and records the payment', async () => {
        const p = paid(newCid())
        await ledger.pins.create(p.pin, p.payment, [p.pin.cid])
        const r = renewal(p.pin)
        const next = new Date(Date.parse(p.pin.pinnedUntil) + 60 * 24 * HOUR)
        const seen: PinRecord[] = []
        const renewed = await ledger.pins.renew(p.pin.requestid, 2, r, (pin) => { seen.push(pin); return next })
        expect(seen.length).toBeGreaterThan(0)
        for (const s of seen) expect(s).toEqual(p.pin)
        expect(renewed).toEqual({ ...p.pin, months: 3, pinnedUntil: next.toISOString() })
        expect(await ledger.pins.get(p.pin.requestid)).toEqual(renewed)
        expect(await ledger.pins.paymentUsed(r.id)).toBe(true)
        expect(await ledger.pins.payment(r.id)).toEqual(r)
        expect((await ledger.pins.payment(p.payment.id))?.requestid).toBe(p.pin.requestid)
        // past the old pinned_until it is live, and not expired
        const between = new Date(Date.parse(p.pin.pinnedUntil) + ledger.pins.graceMs + HOUR)
        expect(await ledger.pins.livePinsOf(p.pin.cid, between)).toEqual([p.pin.requestid])
        expect(await collect(ledger.pins.expiredBy(between))).toEqual([])
        // the renewal's payment buys nothing else
        const again = { ...r, purpose: `renew:${p.pin.requestid}:again` }
        await expect(ledger.pins.renew(p.pin.requestid, 1, again, () => new Date(next.getTime() + HOUR))).rejects.toBeInstanceOf(PaymentReusedError)
        expect(await ledger.pins.get(p.pin.requestid)).toEqual(renewed)
        // without a payment (an operator's)
        const free = await ledger.pins.renew(p.pin.requestid, 1, undefined, (pin) => new Date(Date.parse(pin.pinnedUntil) + HOUR))
        expect(free.pinnedUntil).toBe(new Date(next.getTime() + HOUR).toISOString())
        expect(free.months).toBe(4)
      })

      it('renew refuses a gone pin, a used payment or what until refuses, and writes nothing', async () => {
        const p = paid(newCid())
        await ledger.pins.create(p.pin, p.payment, [p.pin.cid])
        const other = paid(newCid())
        await ledger.pins.create(other.pin, other.payment, [other.pin.cid])
        const later = (pin: PinRecord): Date => new Date(Date.parse(pin.pinnedUntil) + 30 * 24 * HOUR)

        // another pin's payment
        await expect(ledger.pins.renew(p.pin.requestid, 1, { ...other.payment, requestid: p.pin.requestid, purpose: `renew:${p.pin.requestid}:1` }, later)).rejects.toBeInstanceOf(PaymentReusedError)
        expect(await ledger.pins.get(p.pin.requestid)).toEqual(p.pin)
        expect(await ledger.pins.payment(other.payment.id)).toEqual(other.payment)

        // until refuses (more months than may be bought ahead)
        const fresh = renewal(p.pin)
        await expect(ledger.pins.renew(p.pin.requestid, 1, fresh, () => { throw new Error('too many months ahead') })).rejects.toThrow('too many months ahead')
        expect(await ledger.pins.get(p.pin.requestid)).toEqual(p.pin)
        expect(await ledger.pins.paymentUsed(fresh.id)).toBe(false)

        // removed, unknown
        const removed = await ledger.pins.remove(p.pin.requestid, 'unpinned')
        await expect(ledger.pins.renew(p.pin.requestid, 1, fresh, later)).rejects.toBeInstanceOf(PinGoneError)
        expect(await ledger.pins.get(p.pin.requestid)).toEqual(removed)
        expect(await ledger.pins.paymentUsed(fresh.id)).toBe(false)
        const unknown = newRequestid()
        await expect(ledger.pins.renew(unknown, 1, fresh, later)).rejects.toBeInstanceOf(PinGoneError)
        expect(await ledger.pins.paymentUsed(fresh.id)).toBe(false)
        expect(await ledger.pins.known(unknown)).toBe(false)
        // the payment is still good for a pin that is there
        await ledger.pins.renew(other.pin.requestid, 1, { ...fresh, requestid: other.pin.requestid }, later)
        expect(await ledger.pins.paymentUsed(fresh.id)).toBe(true)
      })
    })

    describe('reads of pins', () => {
      it('expiredBy lists the pins past pinned_until before the cutoff that are not removed', async () => {
        const now = Date.now()
        const until = (ms: number): string => new Date(now + ms).toISOString()
        const e2 = paid(newCid(), { pin: { pinnedUntil: until(-2 * HOUR) } })
        const e1 = paid(newCid(), { pin: { pinnedUntil: until(-HOUR), status: 'failed' } })
        const live = paid(newCid(), { pin: { pinnedUntil: until(HOUR) } })
        const gone = paid(newCid(), { pin: { pinnedUntil: until(-3 * HOUR) } })
        for (const x of [e2, e1, live, gone]) await ledger.pins.create(x.pin, x.payment, [x.pin.cid])
        await ledger.pins.remove(gone.pin.requestid, 'unpinned')
        const expired = async (ms: number): Promise<string[]> => sorted(await collect(ledger.pins.expiredBy(new Date(now + ms))))
        expect(await expired(-30 * 60_000)).toEqual(sorted([e2.pin.requestid, e1.pin.requestid]))
        expect(await expired(-90 * 60_000)).toEqual([e2.pin.requestid])
        expect(await expired(-4 * HOUR)).toEqual([])
        expect(await expired(2 * HOUR)).toEqual(sorted([e2.pin.requestid, e1.pin.requestid, live.pin.requestid]))
        // renewed: no longer expired; expired by the sweeper: no longer listed
        await ledger.pins.renew(e2.pin.requestid, 1, undefined, () => new Date(now + 10 * HOUR))
        await ledger.pins.remove(e1.pin.requestid, 'expired')
        expect(await expired(2 * HOUR)).toEqual([live.pin.requestid])
        // and expired again past its new pinned_until
        expect(await expired(11 * HOUR)).toEqual(sorted([e2.pin.requestid, live.pin.requestid]))
      })

      it('isLive: not removed, not failed, and before pinned_until plus the grace', async () => {
        const until = Date.now() + HOUR
        const { pin } = paid(newCid(), { pin: { pinnedUntil: new Date(until).toISOString() } })
        const grace = ledger.pins.graceMs
        expect(grace).toBeGreaterThanOrEqual(0)
        const live = (p: PinRecord, at?: number): boolean => ledger.pins.isLive(p, at == null ? undefined : new Date(at))
        expect(live(pin, until - 1)).toBe(true)
        expect(live(pin, until + grace - 1)).toBe(true)
        expect(live(pin, until + grace)).toBe(false)
        expect(live({ ...pin, status: 'queued' }, until - 1)).toBe(true)
        expect(live({ ...pin, status: 'pinning' }, until - 1)).toBe(true)
        expect(live({ ...pin, status: 'failed' }, until - 1)).toBe(false)
        expect(live({ ...pin, removed: { at: new Date().toISOString(), why: 'unpinned' } }, until - 1)).toBe(false)
        // now by default
        expect(live(pin)).toBe(true)
        expect(live({ ...pin, pinnedUntil: new Date(Date.now() - grace - HOUR).toISOString() })).toBe(false)
      })

      it('livePinsOf and requestidsOfCid find a root\'s pins by its CIDv0 or CIDv1', async () => {
        const digest = Digest.create(0x12, createHash('sha256').update(`root ${Math.random()}`).digest())
        const v0 = CID.createV0(digest).toString()
        const v1 = CID.createV1(0x70, digest).toString()
        const now = Date.now()
        const pinned = paid(v0)
        const queued = paid(v1, { pin: { status: 'queued' } })
        const failed = paid(v0, { pin: { status: 'failed' } })
        const expired = paid(v1, { pin: { pinnedUntil: new Date(now - ledger.pins.graceMs - HOUR).toISOString() } })
        const toRemove = paid(v1)
        const toTakeDown = paid(v0)
        const elsewhere = paid(newCid())
        for (const x of [pinned, failed, expired, toRemove, toTakeDown, elsewhere]) await ledger.pins.create(x.pin, x.payment, [x.pin.cid])
        await ledger.pins.create(queued.pin, queued.payment)
        await ledger.pins.takeDown(toTakeDown.pin.requestid, 'abuse')
        const id = (x: { pin: PinRecord }): string => x.pin.requestid
        const ofRoot = sorted([pinned, queued, failed, expired, toRemove, toTakeDown].map(id))
        expect(sorted(await ledger.pins.requestidsOfCid(v0))).toEqual(ofRoot)
        expect(sorted(await ledger.pins.requestidsOfCid(CID.parse(v1)))).toEqual(ofRoot)
        expect(await ledger.pins.requestidsOfCid(newCid())).toEqual([])

        await ledger.pins.remove(toRemove.pin.requestid, 'unpinned')
        expect(sorted(await ledger.pins.requestidsOfCid(v1))).toEqual(sorted([pinned, queued, failed, expired, toTakeDown].map(id)))
        // live: not failed, not removed, not expired
        expect(sorted(await ledger.pins.livePinsOf(v0))).toEqual(sorted([id(pinned), id(queued)]))
        expect(sorted(await ledger.pins.livePinsOf(CID.parse(v1)))).toEqual(sorted([id(pinned), id(queued)]))
        // as of another time: before the expired one expired, after both others will have
        expect(sorted(await ledger.pins.livePinsOf(v1, new Date(now - ledger.pins.graceMs - 2 * HOUR)))).toEqual(sorted([id(pinned), id(queued), id(expired)]))
        expect(await ledger.pins.livePinsOf(v1, new Date(now + 31 * 24 * HOUR + ledger.pins.graceMs))).toEqual([])
        expect(await ledger.pins.livePinsOf(elsewhere.pin.cid)).toEqual([id(elsewhere)])
      })

      it('requestidsOfCid leaves out the removed pins of a root', async () => {
        const cid = newCid()
        const a = paid(cid)
        const b = paid(cid)
        await ledger.pins.create(a.pin, a.payment, [cid])
        await ledger.pins.create(b.pin, b.payment, [cid])
        await ledger.pins.remove(a.pin.requestid, 'unpinned')
        expect(await ledger.pins.requestidsOfCid(cid)).toEqual([b.pin.requestid])
      })

      it('known: every pin ever recorded, live, removed or archived; not a refused one', async () => {
        const now = Date.now()
        const live = paid(newCid())
        const gone = paid(newCid())
        for (const x of [live, gone]) await ledger.pins.create(x.pin, x.payment, [x.pin.cid])
        await ledger.pins.remove(gone.pin.requestid, 'unpinned', new Date(now - 2 * HOUR))
        expect(await ledger.pins.known(gone.pin.requestid)).toBe(true)
        // moved whole: its removal is past the cutoff
        expect(await ledger.pins.archiveDue(new Date(now - HOUR))).toBe(1)
        expect(await ledger.pins.known(live.pin.requestid)).toBe(true)
        expect(await ledger.pins.known(gone.pin.requestid)).toBe(true)
        expect(await ledger.pins.known(newRequestid())).toBe(false)
        const refused = paid(newCid(), { pin: { replaces: gone.pin.requestid } })
        await expect(ledger.pins.create(refused.pin, refused.payment)).rejects.toBeInstanceOf(PinGoneError)
        expect(await ledger.pins.known(refused.pin.requestid)).toBe(false)
      })

      it('countByStatus counts pins by status, and the removed ones, archived ones too', async () => {
        const now = Date.now()
        const mk = async (pin: Partial<PinRecord> = {}): Promise<string> => {
          const x = paid(newCid(), { pin })
          await ledger.pins.create(x.pin, x.payment, pin.status === 'queued' ? [] : [x.pin.cid])
          return x.pin.requestid
        }
        expect(await ledger.pins.countByStatus()).toEqual({ queued: 0, pinning: 0, pinned: 0, failed: 0, removed: 0 })
        await mk()
        await mk()
        const [toPinning, toFail] = [await mk({ status: 'queued' }), await mk({ status: 'queued' })]
        await mk({ status: 'queued' })
        const [toTakeDown, r1, r2] = [await mk(), await mk(), await mk()]
        await ledger.pins.update(toPinning, p => ({ ...p, status: 'pinning' }))
        await ledger.pins.failFetch(toFail, 'not found')
        await ledger.pins.takeDown(toTakeDown, 'abuse')
        await ledger.pins.remove(r1, 'unpinned', new Date(now - 2 * HOUR))
        await ledger.pins.remove(r2, 'expired')
        const want = { queued: 1, pinning: 1, pinned: 2, failed: 2, removed: 2 }
        expect(await ledger.pins.countByStatus()).toEqual(want)
        expect(await ledger.pins.archiveDue(new Date(now - HOUR))).toBe(1)
        expect(await ledger.pins.countByStatus()).toEqual(want)
      })
    })

    describe('the fetch queue', () => {
      it('a pin by CID is pending until finishFetch pins it with its blocks or failFetch fails it', async () => {
        const [q1, q2, q3] = [1, 2, 3].map(() => paid(newCid(), { pin: { status: 'queued' } })) as [ReturnType<typeof paid>, ReturnType<typeof paid>, ReturnType<typeof paid>]
        for (const q of [q1, q2, q3]) await ledger.pins.create(q.pin, q.payment)
        const pending = async (): Promise<string[]> => sorted(await ledger.pins.pendingFetches())
        expect(await pending()).toEqual(sorted([q1, q2, q3].map(q => q.pin.requestid)))
        // being fetched: still pending
        const giveUpAt = new Date(Date.now() + HOUR).toISOString()
        await ledger.pins.update(q1.pin.requestid, p => ({ ...p, status: 'pinning', fetch: { attempts: 1, giveUpAt } }))
        expect(await pending()).toEqual(sorted([q1, q2, q3].map(q => q.pin.requestid)))

        const blocks = [q1.pin.cid, newCid(), newCid()]
        const done = await ledger.pins.finishFetch(q1.pin.requestid, blocks, 4096, 'pinned: 3 blocks')
        expect(done).toMatchObject({ requestid: q1.pin.requestid, status: 'pinned', dagSize: 4096, statusDetails: 'pinned: 3 blocks' })
        // the fetch's bookkeeping is for pins still waiting
        expect(done?.fetch).toBeUndefined()
        expect(await ledger.pins.get(q1.pin.requestid)).toEqual(done)
        expect(sorted(await ledger.pins.blocksOf(q1.pin.requestid))).toEqual(sorted(blocks))
        for (const b of blocks) expect(await ledger.pins.refCount(b)).toBe(1)
        expect(sorted([...await collect(ledger.pins.referencedBlocks())])).toEqual(sorted(blocks))
        expect(await ledger.pins.livePinsOf(q1.pin.cid)).toEqual([q1.pin.requestid])
        expect(await pending()).toEqual(sorted([q2, q3].map(q => q.pin.requestid)))
        expect((await ledger.pins.list(OWNER, query({ statuses: new Set(['pinned']) }))).results).toEqual([done])

        const failed = await ledger.pins.failFetch(q2.pin.requestid, 'not found within the retry window')
        expect(failed).toMatchObject({ requestid: q2.pin.requestid, status: 'failed', statusDetails: 'not found within the retry window' })
        expect(await ledger.pins.get(q2.pin.requestid)).toEqual(failed)
        expect(ledger.pins.isLive(failed as PinRecord)).toBe(false)
        expect(await ledger.pins.livePinsOf(q2.pin.cid)).toEqual([])
        expect(await pending()).toEqual([q3.pin.requestid])
        expect((await ledger.pins.list(OWNER, query({ statuses: new Set(['failed']) }))).results).toEqual([failed])

        // removed while waiting: a fetch that ends anyway changes nothing
        await ledger.pins.remove(q3.pin.requestid, 'unpinned')
        expect(await pending()).toEqual([])
        const late = newCid()
        expect(await ledger.pins.finishFetch(q3.pin.requestid, [late], 10, 'fetched')).toBeUndefined()
        expect(await ledger.pins.refCount(late)).toBe(0)
        expect(await ledger.pins.failFetch(q3.pin.requestid, 'gave up')).toBeUndefined()
        expect(await ledger.pins.get(q3.pin.requestid)).toMatchObject({ status: 'queued', removed: { why: 'unpinned' } })
        expect(await ledger.pins.finishFetch(newRequestid(), [late], 10, 'fetched')).toBeUndefined()
        expect(await ledger.pins.refCount(late)).toBe(0)
      })
    })

    describe('imports', () => {
      it('importPins and importTickets write records as they are', async () => {
        const a = paid(newCid())
        const q = paid(newCid(), { pin: { status: 'queued' } })
        const r = paid(newCid(), { pin: { removed: { at: new Date(Date.now() - HOUR).toISOString(), why: 'unpinned' } } })
        const t1 = boughtTicket()
        const t2 = boughtTicket({ claimed: { requestid: a.pin.requestid, at: new Date().toISOString() }, failedBytes: 10 })
        const aBlocks = [a.pin.cid, newCid()]
        await ledger.transaction(async (tx) => {
          await tx.importPins([{ pin: a.pin, blocks: aBlocks }, { pin: q.pin }, { pin: r.pin }], [a.payment, q.payment, r.payment, t1.payment, t2.payment])
          await tx.importTickets([t1.ticket, t2.ticket])
        })
        for (const x of [a, q, r]) {
          expect(await ledger.pins.get(x.pin.requestid)).toEqual(x.pin)
          expect(await ledger.pins.payment(x.payment.id)).toEqual(x.payment)
          expect(await ledger.pins.known(x.pin.requestid)).toBe(true)
        }
        expect(await ledger.pins.paymentUsed(t1.payment.id)).toBe(true)
        expect(sorted(await ledger.pins.blocksOf(a.pin.requestid))).toEqual(sorted(aBlocks))
        for (const b of aBlocks) expect(await ledger.pins.refCount(b)).toBe(1)
        expect(await ledger.pins.pendingFetches()).toEqual([q.pin.requestid])
        expect(await ledger.tickets.get(t1.ticket.id)).toEqual(t1.ticket)
        expect(await ledger.tickets.get(t2.ticket.id)).toEqual(t2.ticket)
        const listed = await ledger.pins.list(OWNER, query())
        expect(sorted(listed.results.map(p => p.requestid))).toEqual(sorted([a.pin.requestid, q.pin.requestid]))
        expect(listed.count).toBe(2)
        // tickets alone
        const t3 = boughtTicket()
        await ledger.transaction(async (tx) => { await tx.importTickets([t3.ticket]) })
        expect(await ledger.tickets.get(t3.ticket.id)).toEqual(t3.ticket)
      })

      it('an import holding a pin, ticket or payment id that exists is refused whole', async () => {
        const a = paid(newCid())
        const t1 = boughtTicket()
        await ledger.transaction(async (tx) => {
          await tx.importPins([{ pin: a.pin, blocks: [a.pin.cid] }], [a.payment])
          await tx.importTickets([t1.ticket])
        })
        const b = paid(newCid())
        const t2 = boughtTicket()
        const nothingWritten = async (): Promise<void> => {
          expect(await ledger.pins.get(b.pin.requestid)).toBeUndefined()
          expect(await ledger.pins.known(b.pin.requestid)).toBe(false)
          expect(await ledger.pins.paymentUsed(b.payment.id)).toBe(false)
          expect(await ledger.pins.refCount(b.pin.cid)).toBe(0)
          expect(await ledger.tickets.get(t2.ticket.id)).toBeUndefined()
          expect(await ledger.pins.get(a.pin.requestid)).toEqual(a.pin)
          expect(await ledger.tickets.get(t1.ticket.id)).toEqual(t1.ticket)
          expect(await ledger.pins.refCount(a.pin.cid)).toBe(1)
        }
        // a pin that exists
        await expect(ledger.transaction(async (tx) => {
          await tx.importPins([{ pin: b.pin, blocks: [b.pin.cid] }, { pin: { ...a.pin, name: 'again' }, blocks: [a.pin.cid] }], [b.payment])
          await tx.importTickets([t2.ticket])
        })).rejects.toThrow()
        await nothingWritten()
        // a ticket that exists
        await expect(ledger.transaction(async (tx) => {
          await tx.importPins([{ pin: b.pin, blocks: [b.pin.cid] }], [b.payment])
          await tx.importTickets([t2.ticket, { ...t1.ticket, bytes: 1 }])
        })).rejects.toThrow()
        await nothingWritten()
        await expect(ledger.transaction(async (tx) => { await tx.importTickets([t2.ticket, t1.ticket]) })).rejects.toThrow()
        await nothingWritten()
        // a payment that exists
        const c = paid(newCid(), { id: a.payment.id })
        await expect(ledger.transaction(async (tx) => {
          await tx.importPins([{ pin: b.pin, blocks: [b.pin.cid] }, { pin: c.pin }], [b.payment, sameIdFor(a.payment, c.pin)])
        })).rejects.toBeInstanceOf(PaymentReusedError)
        await nothingWritten()
        expect(await ledger.pins.get(c.pin.requestid)).toBeUndefined()
        expect(await ledger.pins.payment(a.payment.id)).toEqual(a.payment)
      })

      it('releaseUnheld releases the imported block lists nothing holds, and keeps those a replacement still holds', async () => {
        const removedAt = new Date(Date.now() - HOUR).toISOString()
        const [x, y, z, w] = [newCid(), newCid(), newCid(), newCid()]
        const gone = paid(newCid(), { pin: { removed: { at: removedAt, why: 'unpinned' } } })
        const live = paid(newCid())
        // replaced by a pin still queued: holds its blocks
        const held = paid(newCid())
        const repl = paid(newCid(), { pin: { status: 'queued', replaces: held.pin.requestid } })
        held.pin = { ...held.pin, removed: { at: removedAt, why: 'replaced' }, replacedBy: repl.pin.requestid }
        // replaced by a pin that settled: holds nothing
        const done = paid(newCid())
        const settled = paid(newCid(), { pin: { replaces: done.pin.requestid } })
        done.pin = { ...done.pin, removed: { at: removedAt, why: 'replaced' }, replacedBy: settled.pin.requestid }
        const all = [gone, live, held, repl, done, settled]
        await ledger.transaction(async (tx) => {
          await tx.importPins([
            { pin: gone.pin, blocks: [x] }, { pin: live.pin, blocks: [y] }, { pin: held.pin, blocks: [z] },
            { pin: repl.pin }, { pin: done.pin, blocks: [w] }, { pin: settled.pin, blocks: [settled.pin.cid] }
          ], all.map(p => p.payment))
        })
        // as they were
        for (const k of [x, y, z, w, settled.pin.cid]) expect(await ledger.pins.refCount(k)).toBe(1)

        expect(await ledger.pins.releaseUnheld()).toBe(2)
        expect([await ledger.pins.refCount(x), await ledger.pins.refCount(w)]).toEqual([0, 0])
        expect(await ledger.pins.blocksOf(gone.pin.requestid)).toEqual([])
        expect(await ledger.pins.blocksOf(done.pin.requestid)).toEqual([])
        expect([await ledger.pins.refCount(y), await ledger.pins.refCount(z), await ledger.pins.refCount(settled.pin.cid)]).toEqual([1, 1, 1])
        expect(sorted([...await collect(ledger.pins.referencedBlocks())])).toEqual(sorted([y, z, settled.pin.cid]))
        expect(await ledger.pins.releaseUnheld()).toBe(0)
        // the held list goes once its replacement settles
        await ledger.pins.finishFetch(repl.pin.requestid, [repl.pin.cid], 10, 'fetched')
        expect(await ledger.pins.refCount(z)).toBe(0)
      })
    })

    describe('archive passes', () => {
      /** `n` pins removed two hours ago (a second apart), oldest first */
      async function removedPins (n: number, now: number): Promise<string[]> {
        const ids: string[] = []
        for (let i = 0; i < n; i++) {
          const p = paid(newCid())
          await ledger.pins.create(p.pin, p.payment, [p.pin.cid])
          await ledger.pins.remove(p.pin.requestid, 'unpinned', new Date(now - 2 * HOUR + i * 1000))
          ids.push(p.pin.requestid)
        }
        return ids
      }

      it('holdArchive: while held, archiveDue moves nothing; once released it moves', async () => {
        const now = Date.now()
        const [a] = await removedPins(1, now)
        const cutoff = new Date(now - HOUR)
        const release = ledger.pins.holdArchive()
        try {
          expect(await ledger.pins.archiveDue(cutoff)).toBe(0)
          expect(await ledger.pins.archiveDue(cutoff, undefined, undefined, undefined, new Date(now))).toBe(0)
          expect(await ledger.pins.known(a as string)).toBe(true)
        } finally {
          release()
        }
        expect(await ledger.pins.archiveDue(cutoff)).toBe(1)
        expect(await ledger.pins.known(a as string)).toBe(true)

        // two holds: the archive moves once both are released
        await removedPins(1, now)
        const r1 = ledger.pins.holdArchive()
        const r2 = ledger.pins.holdArchive()
        r1()
        expect(await ledger.pins.archiveDue(cutoff)).toBe(0)
        r2()
        expect(await ledger.pins.archiveDue(cutoff)).toBe(1)
      })

      it('archiveDue moves batchSize pins a batch, runs between between batches, and no batch begins once stop says so', async () => {
        const now = Date.now()
        const ids = await removedPins(5, now)
        const cutoff = new Date(now - HOUR)
        expect(await ledger.pins.archiveDue(cutoff, undefined, () => true, 2)).toBe(0)

        let betweens = 0
        let stopping = false
        expect(await ledger.pins.archiveDue(cutoff, async () => { betweens++; stopping = true }, () => stopping, 2)).toBe(2)
        expect(betweens).toBe(1)

        betweens = 0
        // the three left: two batches, one gap between them
        expect(await ledger.pins.archiveDue(cutoff, async () => { betweens++ }, () => false, 2)).toBe(3)
        expect(betweens).toBeGreaterThanOrEqual(1)
        for (const id of ids) expect(await ledger.pins.known(id)).toBe(true)
        expect((await ledger.pins.countByStatus()).removed).toBe(5)
        expect(await ledger.pins.archiveDue(cutoff)).toBe(0)
      })
    })

    describe('watchers', () => {
      it('watchQueued is called after a transaction that queued a fetch commits, never for one that aborted', async () => {
        const used = paid(newCid())
        await ledger.pins.create(used.pin, used.payment, [used.pin.cid])
        let calls = 0
        const stop = ledger.pins.watchQueued(() => { calls++ })
        const refused = paid(newCid(), { id: used.payment.id, pin: { status: 'queued' } })
        await expect(ledger.pins.create(refused.pin, sameIdFor(used.payment, refused.pin))).rejects.toBeInstanceOf(PaymentReusedError)
        const a = paid(newCid(), { pin: { status: 'queued' } })
        await expect(ledger.transaction(async (tx) => { await tx.createPin(a.pin, a.payment); throw new Error('the request failed') })).rejects.toThrow('the request failed')
        await ledger.pins.committed()
        expect(calls).toBe(0)

        const queuedBy = async (write: () => Promise<unknown>): Promise<void> => {
          const before = calls
          await write()
          await eventually(() => { expect(calls).toBeGreaterThan(before) })
        }
        await queuedBy(async () => { await ledger.pins.create(a.pin, a.payment) })
        const b = paid(newCid(), { pin: { status: 'queued' } })
        await queuedBy(async () => { await ledger.transaction(async (tx) => { await tx.createPin(b.pin, b.payment) }) })
        const c = paid(newCid(), { pin: { status: 'queued' } })
        await queuedBy(async () => { await ledger.transaction(async (tx) => { await tx.importPins([{ pin: c.pin }], [c.payment]) }) })
        expect(sorted(await ledger.pins.pendingFetches())).toEqual(sorted([a.pin.requestid, b.pin.requestid, c.pin.requestid]))

        // unsubscribed: another watcher hears the next one, this one does not
        stop()
        const was = calls
        let other = 0
        const stopOther = ledger.pins.watchQueued(() => { other++ })
        const d = paid(newCid(), { pin: { status: 'queued' } })
        await ledger.pins.create(d.pin, d.payment)
        await eventually(() => { expect(other).toBeGreaterThan(0) })
        stopOther()
        expect(calls).toBe(was)
      })

      it('watchRemoved hears each pin a committed write removed: unpinned, expired, replaced or taken down', async () => {
        const heard: string[] = []
        const stop = ledger.pins.watchRemoved((id) => { heard.push(id) })
        const [a, b, d] = [paid(newCid()), paid(newCid()), paid(newCid())]
        for (const x of [a, b, d]) await ledger.pins.create(x.pin, x.payment, [x.pin.cid])
        const q = paid(newCid(), { pin: { status: 'queued' } })
        await ledger.pins.create(q.pin, q.payment)
        await ledger.pins.remove(a.pin.requestid, 'unpinned')
        // the replaced pin is removed by its replacement's create
        const c = paid(newCid(), { pin: { status: 'queued', replaces: b.pin.requestid } })
        await ledger.pins.create(c.pin, c.payment)
        await ledger.pins.takeDown(q.pin.requestid, 'abuse')
        await ledger.pins.remove(d.pin.requestid, 'expired')
        // refused: nothing removed
        const e = paid(newCid(), { pin: { status: 'queued', replaces: a.pin.requestid } })
        await expect(ledger.pins.create(e.pin, e.payment)).rejects.toBeInstanceOf(PinGoneError)
        expect(await ledger.pins.remove(a.pin.requestid, 'unpinned')).toBeUndefined()
        const want = sorted([a, b, q, d].map(x => x.pin.requestid))
        await eventually(() => { expect(sorted([...new Set(heard)])).toEqual(want) })
        stop()
        // unsubscribed
        const f = paid(newCid())
        await ledger.pins.create(f.pin, f.payment, [f.pin.cid])
        const others: string[] = []
        const stopOthers = ledger.pins.watchRemoved((id) => { others.push(id) })
        await ledger.pins.remove(f.pin.requestid, 'unpinned')
        await eventually(() => { expect(others).toContain(f.pin.requestid) })
        stopOthers()
        expect(heard).not.toContain(f.pin.requestid)
      })

      it('watchReleased tells the blocks no pin references any more, and their bytes by the pin\'s dag size', async () => {
        const told: Array<[number, number]> = []
        const stop = ledger.pins.watchReleased((blocks, bytes) => { told.push([blocks, bytes]) })
        const sum = (i: 0 | 1): number => told.reduce((n, t) => n + t[i], 0)
        // all of a pin's blocks: its dag size
        const whole = paid(newCid(), { pin: { dagSize: 3000 } })
        await ledger.pins.create(whole.pin, whole.payment, [whole.pin.cid, newCid(), newCid()])
        await ledger.pins.remove(whole.pin.requestid, 'unpinned')
        await eventually(() => { expect(sum(0)).toBe(3) })
        expect(sum(1)).toBe(3000)

        // a block another pin holds stays, and so does its share of the bytes
        told.length = 0
        const shared = newCid()
        const p = paid(newCid(), { pin: { dagSize: 4000 } })
        await ledger.pins.create(p.pin, p.payment, [p.pin.cid, shared, newCid(), newCid()])
        const q = paid(newCid(), { pin: { dagSize: 500 } })
        await ledger.pins.create(q.pin, q.payment, [shared])
        await ledger.pins.takeDown(p.pin.requestid, 'abuse')
        await eventually(() => { expect(sum(0)).toBe(3) })
        expect(sum(1)).toBeGreaterThan(0)
        expect(sum(1)).toBeLessThan(4000)
        await ledger.pins.remove(q.pin.requestid, 'unpinned')
        await eventually(() => { expect(sum(0)).toBe(4) })
        stop()
      })

      it('watchCommitted tells what each committed transaction changed, in commit order, never an aborted one', async () => {
        const told: CommittedChanges[] = []
        const stop = ledger.pins.watchCommitted((c) => { told.push(c) })
        const [shared, o1, p1] = [newCid(), newCid(), newCid()]
        const old = paid(newCid())
        await ledger.pins.create(old.pin, old.payment, [shared, o1])
        const digest = Digest.create(0x12, createHash('sha256').update(`watched root ${Math.random()}`).digest())
        const rootV0 = CID.createV0(digest).toString()
        const rootV1 = CID.createV1(0x70, digest).toString()
        const p = paid(rootV0)
        await ledger.pins.create(p.pin, p.payment, [rootV0, shared, p1])
        // aborted: a used payment, a throwing transaction
        const [x, y] = [newCid(), newCid()]
        const refused = paid(newCid(), { id: p.payment.id })
        await expect(ledger.pins.create(refused.pin, sameIdFor(p.payment, refused.pin), [x])).rejects.toBeInstanceOf(PaymentReusedError)
        const thrown = paid(newCid())
        await expect(ledger.transaction(async (tx) => { await tx.createPin(thrown.pin, thrown.payment, [y]); throw new Error('no') })).rejects.toThrow('no')
        await ledger.pins.remove(old.pin.requestid, 'unpinned')
        const until = new Date(Date.parse(p.pin.pinnedUntil) + 24 * HOUR)
        await ledger.pins.renew(p.pin.requestid, 1, undefined, () => until)

        const changes = (): CommittedChanges[] => told.filter(c => c.referenced.length + c.released.length + c.pins.length > 0)
        await eventually(() => { expect(changes()).toHaveLength(4) })
        const [c0, c1, c2, c3] = changes() as [CommittedChanges, CommittedChanges, CommittedChanges, CommittedChanges]
        const pinChange = (x: { pin: PinRecord }, o: Partial<PinChange> = {}): PinChange =>
          ({ root: CID.parse(x.pin.cid).toV1().toString(), requestid: x.pin.requestid, status: x.pin.status, until: Date.parse(x.pin.pinnedUntil), removed: false, ...o })
        expect(c0).toEqual({ referenced: expect.any(Array), released: [], pins: [pinChange(old)] })
        expect(sorted(c0.referenced)).toEqual(sorted([shared, o1]))
        // the blocks no pin referenced before, as CIDv1
        expect(c1.pins).toEqual([pinChange(p, { root: rootV1 })])
        expect(sorted(c1.referenced)).toEqual(sorted([rootV1, p1]))
        expect(c1.released).toEqual([])
        expect(c2).toEqual({ referenced: [], released: [o1], pins: [pinChange(old, { removed: true })] })
        expect(c3).toEqual({ referenced: [], released: [], pins: [pinChange(p, { root: rootV1, until: until.getTime() })] })
        for (const c of told) {
          for (const k of [x, y]) expect(c.referenced).not.toContain(k)
          for (const id of [refused.pin.requestid, thrown.pin.requestid]) expect(c.pins.map(q => q.requestid)).not.toContain(id)
        }

        // a replacement: both pins, the replaced one removed
        told.length = 0
        const r = paid(newCid(), { pin: { status: 'queued', replaces: p.pin.requestid } })
        await ledger.pins.create(r.pin, r.payment)
        await eventually(() => { expect(changes()).toHaveLength(1) })
        const last = new Map((changes()[0] as CommittedChanges).pins.map(c => [c.requestid, c]))
        expect(last.get(p.pin.requestid)).toMatchObject({ removed: true })
        expect(last.get(r.pin.requestid)).toEqual(pinChange(r))

        // renewals racing: told in the order they committed, the last as the pin stays
        told.length = 0
        await Promise.all(Array.from({ length: 6 }, async () => {
          await ledger.pins.renew(r.pin.requestid, 1, undefined, (pin) => new Date(Date.parse(pin.pinnedUntil) + HOUR))
        }))
        const final = Date.parse((await ledger.pins.get(r.pin.requestid) as PinRecord).pinnedUntil)
        expect(final).toBe(Date.parse(r.pin.pinnedUntil) + 6 * HOUR)
        const untils = (): number[] => changes().flatMap(c => c.pins.filter(q => q.requestid === r.pin.requestid).map(q => q.until))
        await eventually(() => { expect(untils()).toHaveLength(6) })
        expect(untils()).toEqual([...untils()].sort((m, n) => m - n))
        expect(untils().at(-1)).toBe(final)
        stop()

        // unsubscribed
        const s = paid(newCid())
        const others: CommittedChanges[] = []
        const stopOthers = ledger.pins.watchCommitted((c) => { others.push(c) })
        const before = told.length
        await ledger.pins.create(s.pin, s.payment, [s.pin.cid])
        await eventually(() => { expect(others.some(c => c.pins.some(q => q.requestid === s.pin.requestid))).toBe(true) })
        stopOthers()
        expect(told).toHaveLength(before)
      })

      it('referencedBatches and livePinBatches read every referenced block and every pin not removed, a batch at a time', async () => {
        const digest = Digest.create(0x12, createHash('sha256').update(`batched root ${Math.random()}`).digest())
        const v0 = CID.createV0(digest).toString()
        const pins = [paid(v0), paid(newCid(), { pin: { status: 'failed' } }), paid(newCid(), { pin: { pinnedUntil: new Date(Date.now() - 2 * HOUR).toISOString() } }), paid(newCid())]
        const blocks: string[] = []
        for (const x of pins) {
          const bs = [x.pin.cid, newCid()]
          await ledger.pins.create(x.pin, x.payment, bs)
          blocks.push(...bs.map(b => CID.parse(b).toV1().toString()))
        }
        const q = paid(newCid(), { pin: { status: 'queued' } })
        await ledger.pins.create(q.pin, q.payment)
        const gone = paid(newCid())
        await ledger.pins.create(gone.pin, gone.payment, [gone.pin.cid])
        await ledger.pins.remove(gone.pin.requestid, 'unpinned')

        const refBatches = await collect(ledger.pins.referencedBatches(3))
        for (const b of refBatches) expect(b.length).toBeLessThanOrEqual(3)
        expect(refBatches.length).toBeGreaterThanOrEqual(3)
        expect(sorted(refBatches.flat())).toEqual(sorted(blocks))

        const pinBatches = await collect(ledger.pins.livePinBatches(2))
        for (const b of pinBatches) expect(b.length).toBeLessThanOrEqual(2)
        const got = pinBatches.flat().sort((m, n) => m.requestid < n.requestid ? -1 : 1)
        const want = [...pins, q].map((x): PinChange => ({ root: CID.parse(x.pin.cid).toV1().toString(), requestid: x.pin.requestid, status: x.pin.status, until: Date.parse(x.pin.pinnedUntil), removed: false }))
        expect(got).toEqual(want.sort((m, n) => m.requestid < n.requestid ? -1 : 1))
      })

      it('committed() resolves once every write begun before it has committed', async () => {
        const gone = paid(newCid())
        await ledger.pins.create(gone.pin, gone.payment, [gone.pin.cid])
        const ps = Array.from({ length: 5 }, () => paid(newCid()))
        const writes = ps.map(async p => { await ledger.pins.create(p.pin, p.payment, [p.pin.cid]) })
        const removing = ledger.pins.remove(gone.pin.requestid, 'unpinned')
        await ledger.pins.committed()
        for (const p of ps) {
          expect(await ledger.pins.get(p.pin.requestid)).toEqual(p.pin)
          expect(await ledger.pins.refCount(p.pin.cid)).toBe(1)
        }
        expect((await ledger.pins.get(gone.pin.requestid))?.removed?.why).toBe('unpinned')
        expect(await ledger.pins.refCount(gone.pin.cid)).toBe(0)
        await Promise.all([...writes, removing])
      })
    })

    describe('the ledger', () => {
      it('recordedSettings: nothing before any serve recorded, then what was recorded last, also after a reopen', async () => {
        expect(await ledger.recordedSettings()).toEqual({})
        const s1 = { tokenIssuer: 'https://pind.example', tokenTtl: 3600, expiryGrace: 86400, provideStrategy: 'roots', reprovideInterval: 79200 }
        await ledger.recordSettings(s1)
        expect(await ledger.recordedSettings()).toEqual(s1)
        const s2 = { tokenIssuer: 'https://other.example', tokenTtl: 7200, expiryGrace: 0, provideStrategy: 'all', reprovideInterval: 3600 }
        await ledger.recordSettings(s2)
        expect(await ledger.recordedSettings()).toEqual(s2)
        if (opened.reopen == null) return
        const again = await opened.reopen()
        expect(await again.recordedSettings()).toEqual(s2)
      })

      it('schemaVersion answers, the same across writes', async () => {
        const v = await ledger.schemaVersion()
        expect(v).not.toBeUndefined()
        expect(v).not.toBeNull()
        const p = paid(newCid())
        await ledger.pins.create(p.pin, p.payment, [p.pin.cid])
        expect(await ledger.schemaVersion()).toEqual(v)
      })

      it('upgradeLater on a fresh ledger: done resolves, stop() returns, and the ledger goes on answering', async () => {
        const u = ledger.upgradeLater(() => {})
        expect(await u.done).toBe(true)
        await u.stop()
        const p = paid(newCid())
        await ledger.pins.create(p.pin, p.payment, [p.pin.cid])
        expect(await ledger.pins.get(p.pin.requestid)).toEqual(p.pin)

        const stopped = ledger.upgradeLater()
        await stopped.stop()
        expect(typeof await stopped.done).toBe('boolean')
        const q = paid(newCid())
        await ledger.pins.create(q.pin, q.payment, [q.pin.cid])
        expect(await ledger.pins.get(q.pin.requestid)).toEqual(q.pin)
      })

      it('datastore: put, get, has, delete and a query by prefix', async () => {
        const ds = ledger.datastore()
        const k = new Key('/peers/contract-test/a')
        const k2 = new Key('/peers/contract-test/b')
        const elsewhere = new Key('/other/contract-test')
        expect(await ds.has(k)).toBe(false)
        await expect((async () => await ds.get(k))()).rejects.toMatchObject({ name: 'NotFoundError' })
        await ds.put(k, Uint8Array.from([1, 2, 3]))
        await ds.put(k2, Uint8Array.from([4]))
        await ds.put(elsewhere, Uint8Array.from([5]))
        expect(await ds.has(k)).toBe(true)
        expect(Buffer.from(await ds.get(k))).toEqual(Buffer.from([1, 2, 3]))
        // a put replaces
        await ds.put(k, Uint8Array.from([9]))
        expect(Buffer.from(await ds.get(k))).toEqual(Buffer.from([9]))
        const found: string[] = []
        for await (const { key } of ds.query({ prefix: '/peers/contract-test' })) found.push(key.toString())
        expect(sorted(found)).toEqual(sorted([k.toString(), k2.toString()]))
        await ds.delete(k)
        expect(await ds.has(k)).toBe(false)
        await expect((async () => await ds.get(k))()).rejects.toMatchObject({ name: 'NotFoundError' })
        expect(await ds.has(k2)).toBe(true)
        // a second ledger.datastore() is the same store
        expect(Buffer.from(await ledger.datastore().get(k2))).toEqual(Buffer.from([4]))
      })

      it('unknown ids: a ticket, a token\'s revocation, a denial\'s removal', async () => {
        expect(await ledger.tickets.get(newRequestid())).toBeUndefined()
        const t = boughtTicket()
        await ledger.transaction(async (tx) => { await tx.recordPayment(t.payment); await tx.putTicket(t.ticket) })
        expect(await ledger.tickets.get(t.ticket.id)).toEqual(t.ticket)
        // the payment that bought it, as recorded
        expect(await ledger.pins.payment(t.payment.id)).toEqual(t.payment)
        expect(await ledger.pins.payment(paid(newCid()).payment.id)).toBeUndefined()
        expect(await ledger.tokens.revokedAt('never-revoked')).toBeUndefined()
        await ledger.tokens.revokeOwner(OWNER, new Date('2026-11-28T00:00:00.000Z'))
        // an owner's revocation is no revocation of a jti
        expect(await ledger.tokens.revokedAt('never-revoked')).toBeUndefined()
        const d = { key: 'zQmKept', rule: '/ipfs/zQmKept', reason: 'r', by: 'op', at: '2026-11-28T00:00:00.000Z' }
        await ledger.denials.add(d)
        expect(await ledger.denials.remove('zQmNever', { by: 'op', at: '2026-11-28T01:00:00.000Z' })).toBeUndefined()
        expect(await ledger.denials.all()).toEqual([d])
        expect(await ledger.denials.get('zQmNever')).toBeUndefined()
      })
    })
  })
}
