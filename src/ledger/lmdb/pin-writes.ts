/**
 * The writes of pin records (PinLedger's create, update, remove, takeDown,
 * renew and importBatch): each one LMDB transaction that updates the record,
 * its indexes, the fetch queue and the block references together.
 */
import type { CID } from 'multiformats/cid'
import { seedClock } from '../clock.js'
import type { PaymentRecord, PinRecord } from '../records.js'
import { removedMs } from './archive-moves.js'
import type { BlockRefs } from './block-refs.js'
import { PaymentReusedError, PinGoneError } from './errors.js'
import type { FetchQueue } from './fetch-queue.js'
import { paymentUsed } from './payments.js'
import type { PinStore } from './pin-store.js'
import { paymentByRef, paymentIdOf, readPin, storePin } from './stored.js'
import { cidKey, type PinTables } from './tables.js'

export class PinWrites {
  private readonly removedWatchers = new Set<(requestid: string) => void>()

  constructor (private readonly t: PinTables, private readonly store: PinStore, private readonly refs: BlockRefs, private readonly queue: FetchQueue) {}

  /** PinLedger.watchRemoved */
  watchRemoved (fn: (requestid: string) => void): () => void {
    this.removedWatchers.add(fn)
    return () => { this.removedWatchers.delete(fn) }
  }

  /** PinLedger.create */
  async create (pin: PinRecord, payment: PaymentRecord | undefined, blocks: Array<string | CID>, within: (() => void) | undefined): Promise<void> {
    const { t, store } = this
    const keys = [...new Set(blocks.map(cidKey))]
    let replaced: string | undefined
    await t.env.transaction(() => {
      if (t.pins.doesExist(pin.requestid)) throw new Error(`pin ${pin.requestid} exists already`)
      // another record's write in the same transaction (an upload ticket's claim): throws to abort it all
      within?.()
      if (payment != null && paymentUsed(t, payment.id)) throw new PaymentReusedError(payment.id)
      if (pin.replaces != null) {
        const old = store.getPin(pin.replaces)
        if (old == null || old.removed != null || old.owner !== pin.owner) throw new PinGoneError(pin.replaces)
        const at = new Date()
        store.putPin(old.requestid, { ...old, removed: { at: at.toISOString(), why: 'replaced' }, replacedBy: pin.requestid })
        t.removedIdx.put([at.getTime(), old.requestid], 1)
        t.fetchQueue.remove(old.requestid)
        t.byExpiry.remove([Date.parse(old.pinnedUntil), old.requestid])
        replaced = old.requestid
      }
      // the payment first: the pin then keeps only a reference to it
      if (payment != null) {
        store.putPayment(payment, payment.requestid === pin.requestid ? pin.cid : undefined)
        t.settling.remove(payment.id)
      }
      store.putPin(pin.requestid, pin)
      if (pin.removed == null) {
        t.byCid.put([cidKey(pin.cid), pin.requestid], 1)
        t.byExpiry.put([Date.parse(pin.pinnedUntil), pin.requestid], pin.requestid)
      }
      if (pin.status === 'queued' || pin.status === 'pinning') t.fetchQueue.put(pin.requestid, pin.createdUs)
      this.refs.addRefs(pin.requestid, keys)
      // a replacement recorded settled (pinned or failed) lets go of what it replaced now: no fetch will
      if (pin.replaces != null && pin.status !== 'queued' && pin.status !== 'pinning') this.refs.releaseReplaced(pin)
    })
    // the replaced pin is removed: a fetch of it stops
    if (replaced != null) for (const w of this.removedWatchers) w(replaced)
    if (pin.status === 'queued' || pin.status === 'pinning') this.queue.queued()
  }

  /** PinLedger.update */
  async update (requestid: string, change: (pin: PinRecord) => PinRecord): Promise<PinRecord | undefined> {
    let updated: PinRecord | undefined
    await this.t.env.transaction(() => {
      const current = this.store.getPin(requestid)
      if (current == null) return
      if (current.takedown != null) {
        updated = current
        return
      }
      updated = change(structuredClone(current))
      this.store.putPin(requestid, updated)
    })
    return updated
  }

  /** PinLedger.remove */
  async remove (requestid: string, why: NonNullable<PinRecord['removed']>['why'], at: Date): Promise<PinRecord | undefined> {
    const { t, store, refs } = this
    let removed: PinRecord | undefined
    await t.env.transaction(() => {
      const pin = store.getPin(requestid)
      if (pin == null || pin.removed != null) return
      removed = { ...pin, removed: { at: at.toISOString(), why } }
      store.putPin(requestid, removed)
      t.removedIdx.put([at.getTime(), requestid], 1)
      t.fetchQueue.remove(requestid)
      t.byExpiry.remove([Date.parse(pin.pinnedUntil), requestid])
      refs.releaseRefs(requestid)
      // a replacement removed before it settled also lets go of what it replaced
      refs.releaseReplaced(pin)
    })
    if (removed != null) for (const w of this.removedWatchers) w(requestid)
    return removed
  }

  /** PinLedger.takeDown */
  async takeDown (requestid: string, reason: string, at: Date): Promise<PinRecord | undefined> {
    const { t, store, refs } = this
    let down: PinRecord | undefined
    await t.env.transaction(() => {
      const pin = store.getPin(requestid)
      if (pin == null || pin.removed != null || pin.takedown != null) return
      down = { ...pin, status: 'failed', statusDetails: `removed by the operator on ${at.toISOString()}: ${reason}`, takedown: { at: at.toISOString(), reason } }
      delete down.fetch
      store.putPin(requestid, down)
      t.fetchQueue.remove(requestid)
      refs.releaseRefs(requestid)
      // a replacement taken down before it settled lets go of what its chain held, as a removal does
      refs.releaseReplaced(pin)
    })
    if (down != null) for (const w of this.removedWatchers) w(requestid)
    return down
  }

  /** PinLedger.renew */
  async renew (requestid: string, months: number, payment: PaymentRecord | undefined, until: (pin: PinRecord) => Date): Promise<PinRecord> {
    const { t, store } = this
    let renewed: PinRecord | undefined
    await t.env.transaction(() => {
      const pin = store.getPin(requestid)
      if (pin == null || pin.removed != null) throw new PinGoneError(requestid)
      const pinnedUntil = until(pin)
      if (payment != null && paymentUsed(t, payment.id)) throw new PaymentReusedError(payment.id)
      renewed = { ...pin, pinnedUntil: pinnedUntil.toISOString(), months: pin.months + months }
      store.putPin(requestid, renewed)
      t.byExpiry.remove([Date.parse(pin.pinnedUntil), requestid])
      t.byExpiry.put([pinnedUntil.getTime(), requestid], requestid)
      if (payment != null) {
        store.putPayment(payment)
        t.settling.remove(payment.id)
      }
    })
    return renewed as PinRecord
  }

  /** PinLedger.importBatch */
  async importBatch (pins: Array<{ pin: PinRecord, blocks?: string[] }>, payments: PaymentRecord[], within: (() => void) | undefined): Promise<void> {
    const { t, store } = this
    await t.env.transaction(() => {
      within?.()
      // payments first, so that a pin of this batch keeps only a reference to its payment
      const batchCids = new Map(pins.map(({ pin }) => [pin.requestid, pin.cid]))
      for (const p of payments) {
        if (paymentUsed(t, p.id)) throw new PaymentReusedError(p.id)
        store.putPayment(p, batchCids.get(p.requestid) ?? store.pinCid(p.requestid))
      }
      for (const { pin, blocks } of pins) {
        if (t.pins.doesExist(pin.requestid)) throw new Error(`pin ${pin.requestid} exists already`)
        store.putPin(pin.requestid, pin)
        if (pin.removed == null) t.byCid.put([cidKey(pin.cid), pin.requestid], 1)
        // references as the source ledger had them (a replaced pin keeps its blocks until its replacement settles)
        if (blocks != null && blocks.length > 0) this.refs.addRefs(pin.requestid, [...new Set(blocks.map(cidKey))])
        if (pin.removed != null) {
          t.removedIdx.put([removedMs(pin), pin.requestid], 1)
          // a removed pin still holding blocks: the next upgrade checks its chain of replacements, as for a
          // ledger an older pind left (the export may come from one)
          if (blocks != null && blocks.length > 0) t.env.setUpgraded('repair:replacement-chains', false)
          continue
        }
        t.byExpiry.put([Date.parse(pin.pinnedUntil), pin.requestid], pin.requestid)
        if (pin.status === 'queued' || pin.status === 'pinning') t.fetchQueue.put(pin.requestid, pin.createdUs)
      }
      // a pin of an earlier batch whose payment came in this one: now a reference (an export lists every pin before the payments)
      for (const p of payments) {
        const stored = t.pins.get(p.requestid)
        if (stored == null || paymentByRef(stored) || paymentIdOf(stored) !== p.id) continue
        t.pins.put(p.requestid, storePin(readPin(p.requestid, stored, store.paymentOfPin(p.requestid), store.assets), p, store.assets))
      }
    })
    let maxUs = 0
    for (const { pin } of pins) maxUs = Math.max(maxUs, pin.createdUs)
    seedClock(maxUs)
    if (pins.some(({ pin }) => pin.removed == null && (pin.status === 'queued' || pin.status === 'pinning'))) this.queue.queued()
  }
}
