/**
 * The ledger's upgrades: indexes added after a ledger was created, and
 * repairs of what older versions left (PinLedger.upgrade,
 * upgradeBeforeServing, upgradeLater).
 */
import { holdClock, seedClock } from '../clock.js'
import { removedMs } from './archive-moves.js'
import { COMPACT_BATCH, noTick, upgradeStep, UpgradeHalted, type Tick, type UpgradeBatches, type UpgradeProgress } from './batches.js'
import { OWNER_COUNTS_AFTER, type OwnerCounts } from './owner-counts.js'
import { CREATED_HIGH, type PinStore } from './pin-store.js'
import type { ProvideKeys } from './provide-keys.js'
import { createdUsOf, currentPaymentLayout, oldLayout, paymentByRef, paymentKey, pinWithNames, readPayment, readPin, readSummary, storePayment, storePin, storeSummary, type StoredPayment } from './stored.js'
import { summaryOf } from './summaries.js'
import type { CidKey, OwnerKey, PinTables } from './tables.js'

/**
 * records per transaction of the upgrade's steps that run while serve serves
 * (upgradeLater): each batch holds the event loop while it reads and rewrites
 * its records (~100-200 ms for 1,000 on a busy machine), requests wait meanwhile
 */
export const LATER_BATCH = 100
/** the meta fact holding, while the index:provide-keys upgrade runs, the last pin (requestid) whose keys it has held */
const PROVIDE_KEYS_AFTER = 'index:provide-keys:after'
/** the meta fact holding, while the repair:replacement-chains upgrade runs, the last pin (requestid) whose block list it has checked */
const REPLACEMENT_CHAINS_AFTER = 'repair:replacement-chains:after'

/** what the upgrades work on: PinLedger's tables and the modules it delegates to */
export interface UpgradeParts {
  t: PinTables
  store: PinStore
  counts: OwnerCounts
  batches: UpgradeBatches
  provides: ProvideKeys
  /** PinLedger's releaseUnheld walk, with the meta fact keeping the last list checked */
  releaseUnheld: (tick: Tick, resume: string) => Promise<number>
}

export class Upgrades {
  constructor (private readonly p: UpgradeParts) {}

  /** PinLedger.upgrade */
  async upgrade (onProgress: (p: UpgradeProgress) => void): Promise<void> {
    await this.upgradeBeforeServing(onProgress)
    // nothing else runs meanwhile: larger batches
    await this.upgradeLater(onProgress, COMPACT_BATCH)
  }

  /** PinLedger.upgradeBeforeServing */
  async upgradeBeforeServing (onProgress: (p: UpgradeProgress) => void): Promise<void> {
    const { t, store, counts, batches } = this.p
    const env = t.env
    const step = upgradeStep(onProgress)
    // the steps write in batches (COMPACT_BATCH pins a transaction), and are marked done in a
    // transaction of their own once every batch is in. The puts of the index steps are idempotent: stopped
    // midway, the next start does the step again from its first pin; the steps whose writes count (provide
    // keys, block references) go on after the last batch committed instead.
    if (!env.upgraded('index:owner-summaries')) {
      await batches.inBatches(t.pins, COMPACT_BATCH, step('index:owner-summaries'), (key, value) => {
        const pin = readPin(key, value, store.paymentOfPin(key), store.assets)
        if (pin.removed != null) return
        const ownerKey: OwnerKey = [pin.owner, pin.createdUs, pin.requestid]
        if (counts.ownerCountsKept(pin.owner)) counts.recount(pin.owner, pin.requestid, pin.createdUs, counts.liveStateAt(ownerKey), { status: pin.status, until: Date.parse(pin.pinnedUntil) })
        t.byOwner.put(ownerKey, storeSummary(summaryOf(pin)))
      })
      await env.transaction(() => { env.setUpgraded('index:owner-summaries') })
    }
    if (!env.upgraded('index:pins-by-expiry')) {
      await batches.inBatches(t.pins, COMPACT_BATCH, step('index:pins-by-expiry'), (key, value) => {
        const pin = readPin(key, value, store.paymentOfPin(key), store.assets)
        if (pin.removed == null) t.byExpiry.put([Date.parse(pin.pinnedUntil), pin.requestid], pin.requestid)
      })
      await env.transaction(() => { env.setUpgraded('index:pins-by-expiry') })
    }
    if (!env.upgraded('repair:replacement-chains')) {
      // releaseRefs removes a pin's block list with the references it drops, in the same transaction (its
      // batch's), so no list is released twice; each batch records the last pin it checked too, and a start
      // after a crash goes on from there (without checking again the lists it kept)
      await this.p.releaseUnheld(step('repair:replacement-chains'), REPLACEMENT_CHAINS_AFTER)
      await env.transaction(() => {
        env.setUpgraded('repair:replacement-chains')
        env.removeFact(REPLACEMENT_CHAINS_AFTER)
      })
    }
    if (!env.upgraded('index:provide-keys')) {
      // every pin holding block references is announced (the same rule as addRefs/releaseRefs). hold() counts
      // the pins holding each key, so a pin done twice would hold its keys twice (and they would outlive its
      // release): each batch records the last pin it did in its own transaction, and a start after a crash goes
      // on from there
      await batches.inBatches(t.pinBlocks, COMPACT_BATCH, step('index:provide-keys'), (requestid, blocks) => {
        const pin = store.getPin(requestid)
        if (pin != null && blocks.length > 0) this.p.provides.hold(pin.cid, blocks)
      }, PROVIDE_KEYS_AFTER)
      await env.transaction(() => {
        env.setUpgraded('index:provide-keys')
        env.removeFact(PROVIDE_KEYS_AFTER)
      })
    }
  }

  /** PinLedger.upgradeLater */
  async upgradeLater (onProgress: (p: UpgradeProgress) => void, batch: number): Promise<boolean> {
    const { t, store, counts, batches } = this.p
    const env = t.env
    const step = upgradeStep(onProgress)
    let seeded: (() => void) | undefined
    // synchronously, before the first await: no pin is created before the clock knows every pin's created
    if (!env.upgraded('clock:created-high')) holdClock(new Promise<void>(resolve => { seeded = resolve }))
    try {
      if (!env.upgraded('clock:created-high')) {
        // one read of every pin's `created` (in batches); from now on each write of a pin keeps the mark,
        // including those made while this step reads (noteCreated keeps the higher)
        let high = 0
        await batches.inBatches(t.pins, batch, step('clock:created-high'), (_key, value) => { high = Math.max(high, createdUsOf(value)) })
        await env.transaction(() => {
          if (high > 0) store.noteCreated(high)
          env.setUpgraded('clock:created-high')
        })
        const mark = env.fact(CREATED_HIGH)
        if (typeof mark === 'number') seedClock(mark)
      }
      seeded?.()
      if (!env.upgraded('index:owner-counts')) {
        // GET /pins counts by reading the owner's index until this is done (ownerCount)
        await this.buildOwnerCounts(batch, step('index:owner-counts'))
        await env.transaction(() => {
          env.setUpgraded('index:owner-counts')
          env.removeFact(OWNER_COUNTS_AFTER)
        })
        counts.countsBuilt = true
      }
      if (!env.upgraded('compact:records')) {
        await this.compactRecords(batch, step('compact:records'))
        await env.transaction(() => { env.setUpgraded('compact:records') })
      }
      if (!env.upgraded('compact:payment-keys')) {
        await this.movePaymentKeys(batch, step('compact:payment-keys'))
        await env.transaction(() => { env.setUpgraded('compact:payment-keys') })
      }
      if (!env.upgraded('compact:pin-numbers')) {
        // pins written before name their status, source, payment method and asset by number (./stored.ts); rewritten in place, never larger
        await batches.inBatches(t.pins, batch, step('compact:pin-numbers'), (key, value) => {
          if (!pinWithNames(value)) return
          const pin = readPin(key, value, store.paymentOfPin(key), store.assets)
          t.pins.put(key, storePin(pin, store.getPayment(pin.payment.id), store.assets))
        })
        await env.transaction(() => { env.setUpgraded('compact:pin-numbers') })
      }
      if (!env.upgraded('index:removed-pins')) {
        // the removed pins an older ledger holds, for the archiver to move (./archive.ts); in batches
        // (the puts are idempotent, and the step is marked done only once all are in)
        await batches.inBatches(t.pins, batch, step('index:removed-pins'), (key, value) => {
          const pin = readPin(key, value, store.paymentOfPin(key), store.assets)
          if (pin.removed != null) t.removedIdx.put([removedMs(pin), key], 1)
        })
        await env.transaction(() => { env.setUpgraded('index:removed-pins') })
      }
      return true
    } catch (err) {
      if (err instanceof UpgradeHalted) return false
      throw err
    } finally {
      seeded?.()
    }
  }

  /**
   * The index:owner-counts upgrade: each owner's counts from its index
   * entries, owner after owner in owner order, each owner whole in one
   * transaction with the fact that it is done (ownerCountsKept: from then on
   * putPin keeps them), owners of fewer than `batch` pins together.
   */
  private async buildOwnerCounts (batch: number, tick: Tick): Promise<void> {
    const { t, counts, batches } = this.p
    let more = true
    while (more) {
      batches.checkHalted()
      await t.env.transaction(() => {
        let entries = 0
        while (entries < batch) {
          const after = t.env.fact(OWNER_COUNTS_AFTER)
          let owner: string | undefined
          for (const key of t.byOwner.getKeys(typeof after === 'string' ? { start: [after, Number.MAX_SAFE_INTEGER] } : {})) {
            if (key[0] === after) continue
            owner = key[0]
            break
          }
          if (owner === undefined) { more = false; return }
          for (const { key } of t.ownerCounts.getRange({ start: [owner], end: [owner, '\uffff'] })) t.ownerCounts.remove(key)
          for (const { key } of t.ownerBuckets.getRange({ start: [owner], end: [owner, '\uffff'] })) t.ownerBuckets.remove(key)
          for (const { key } of t.ownerExpiry.getRange({ start: [owner], end: [owner, Number.MAX_VALUE] })) t.ownerExpiry.remove(key)
          for (const key of t.byOwner.getKeys({ start: [owner], end: [owner, Number.MAX_SAFE_INTEGER] })) {
            tick()
            entries++
            counts.recount(owner, key[2], key[1], undefined, counts.liveStateAt(key))
          }
          void t.env.setFact(OWNER_COUNTS_AFTER, owner)
        }
      })
    }
  }

  /**
   * Moves x402 payments from payments (text keys) to payments-binary (their
   * 52 bytes) in the layout this pind writes, `batch` per transaction, each
   * record put there and removed here in the same one: stopped midway, the
   * next start goes on with what is left, and every record is in exactly one
   * of the two meanwhile (getPayment reads both). Other ids stay, rewritten
   * in place when their layout is older.
   */
  async movePaymentKeys (batch = COMPACT_BATCH, tick = noTick): Promise<void> {
    const { t, store, batches } = this.p
    let after: string | undefined
    let more = true
    while (more) {
      batches.checkHalted()
      await t.env.transaction(() => {
        const entries: Array<{ key: string, value: StoredPayment }> = []
        for (const e of t.payments.getRange(after === undefined ? { limit: batch + 1 } : { start: after, limit: batch + 1 })) {
          if (e.key === after) continue
          if (entries.length === batch) break
          entries.push({ key: e.key, value: e.value })
        }
        for (const { key, value } of entries) {
          tick()
          const rec = readPayment(key, value, store.pinCid)
          const binary = paymentKey(key)
          if (binary != null) {
            t.paymentsBinary.put(binary, storePayment(rec, store.pinCid(rec.requestid)))
            t.payments.remove(key)
          } else if (!currentPaymentLayout(value)) {
            t.payments.put(key, storePayment(rec, store.pinCid(rec.requestid)))
          }
        }
        after = entries[entries.length - 1]?.key
        more = entries.length === batch
      })
    }
  }

  /**
   * Rewrites records as ./stored.ts stores them: without the fields equal to
   * their keys, and a pin's payment as a reference when the payments database
   * holds its record (a record already so is left alone). In transactions of
   * `batch` records: lmdb cannot reuse a page freed inside the transaction
   * that freed it, so one transaction over a whole ledger would grow the file
   * by all it rewrites; between batches the pages the last one freed are used
   * again. Idempotent: stopped midway, the next start goes on.
   */
  async compactRecords (batch = COMPACT_BATCH, tick = noTick): Promise<void> {
    const { t, store, batches } = this.p
    // payments first: a pin then refers to its payment's record
    await batches.inBatches(t.payments, batch, tick, (key, value) => {
      if (!oldLayout(value)) return
      const rec = readPayment(key, value, store.pinCid)
      t.payments.put(key, storePayment(rec, store.pinCid(rec.requestid)))
    })
    await batches.inBatches(t.pins, batch, tick, (key, value) => {
      if (!oldLayout(value) && paymentByRef(value)) return
      const pin = readPin(key, value, store.paymentOfPin(key), store.assets)
      const stored = storePin(pin, store.getPayment(pin.payment.id), store.assets)
      if (oldLayout(value) || paymentByRef(stored)) t.pins.put(key, stored)
    })
    const removed: OwnerKey[] = []
    await batches.inBatches(t.byOwner, batch, tick, (key, value) => {
      const summary = readSummary(key[2], value)
      if (summary.removed) removed.push(key)
      else if (oldLayout(value)) t.byOwner.put(key, storeSummary(summary))
    })
    // removed pins leave the owner index (after the pass: it goes on from the last key it did)
    for (let i = 0; i < removed.length; i += batch) {
      batches.checkHalted()
      await t.env.transaction(() => { for (const key of removed.slice(i, i + batch)) t.byOwner.remove(key) })
    }
    // the CID index's value was the owner, which nothing reads; removed pins leave it
    const gone: CidKey[] = []
    await batches.inBatches(t.byCid, batch, tick, (key, value) => {
      const pin = store.getPin(key[1])
      if (pin == null || pin.removed != null) gone.push(key)
      else if (value !== 1) t.byCid.put(key, 1)
    })
    for (let i = 0; i < gone.length; i += batch) {
      batches.checkHalted()
      await t.env.transaction(() => { for (const key of gone.slice(i, i + batch)) t.byCid.remove(key) })
    }
  }
}
