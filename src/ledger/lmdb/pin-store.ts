/**
 * Pin and payment records as the ledger reads and writes them (./stored.ts
 * stores them): the table of assets, a pin with its payment (by reference),
 * a payment in payments-binary or payments, and the write of a pin with its
 * owner-index summary and counts.
 */
import { seedClock } from '../clock.js'
import type { PaymentRecord, PinRecord } from '../records.js'
import { binaryFastIn, type LedgerSnapshot } from './snapshot.js'
import { cidOf, cidOfPacked, type AssetTable, paymentKey, readPayment, readPin, storePayment, storePin, storeSummary, type StoredPayment } from './stored.js'
import type { OwnerCounts } from './owner-counts.js'
import { summaryOf } from './summaries.js'
import { cidKey, type PinTables } from './tables.js'

/** the meta fact holding the highest `created` (µs) of any pin the ledger has held */
export const CREATED_HIGH = 'createdHighUs'
/** the meta fact holding the ledger's table of assets (./stored.ts: a pin's payment names its asset by its index here) */
const ASSETS = 'assets'

export class PinStore {
  constructor (private readonly t: PinTables, private readonly counts: OwnerCounts) {
    // until the clock:created-high upgrade has run (a ledger of an earlier pind), upgrade() seeds it
    const high = t.env.fact(CREATED_HIGH)
    if (typeof high === 'number') seedClock(high)
  }

  /**
   * Keeps the highest `created` of any pin ever written (inside the
   * transaction that writes the pin), so that the next start seeds the clock
   * (./clock.ts) with it exactly: a clock stepped back across a restart then
   * still hands out values after every pin's, removed and imported ones too.
   */
  noteCreated (us: number): void {
    const high = this.t.env.fact(CREATED_HIGH)
    if (typeof high !== 'number' || us > high) void this.t.env.setFact(CREATED_HIGH, us)
  }

  /**
   * Writes a pin and its owner-index summary (inside a transaction). A pin
   * whose payment record is in the ledger keeps only a reference to it
   * (./stored.ts): write the payment first.
   */
  putPin (requestid: string, pin: PinRecord): void {
    // (the payment's purpose may name this pin's CID: the pin is not written yet)
    this.t.pins.put(requestid, storePin(pin, this.getPayment(pin.payment.id, (id) => id === requestid ? pin.cid : this.pinCid(id)), this.assets))
    this.noteCreated(pin.createdUs)
    if (this.t.changes.noting) this.t.changes.pin({ root: cidKey(pin.cid), requestid, status: pin.status, until: Date.parse(pin.pinnedUntil), removed: pin.removed != null })
    // the owner's counts follow its index entry, in this transaction: as it was, as it will be
    if (this.counts.ownerCountsKept(pin.owner)) {
      this.counts.recount(pin.owner, requestid, pin.createdUs, this.counts.liveStateAt([pin.owner, pin.createdUs, requestid]), pin.removed == null ? { status: pin.status, until: Date.parse(pin.pinnedUntil) } : undefined)
    }
    // a removed pin leaves the owner and CID indexes: every listing, takedown and liveness check
    // skips it (most of a ledger's pins)
    if (pin.removed != null) {
      this.t.byOwner.remove([pin.owner, pin.createdUs, requestid])
      this.t.byCid.remove([cidKey(pin.cid), requestid])
    } else {
      this.t.byOwner.put([pin.owner, pin.createdUs, requestid], storeSummary(summaryOf(pin)))
    }
  }

  /**
   * The table of assets: read from the meta fact each time (it is short), so
   * that a transaction that added an asset and was then aborted leaves no
   * index behind; an asset not there yet is added inside the writing
   * transaction (every putPin is in one).
   */
  readonly assets: AssetTable = {
    indexOf: (asset) => {
      const table = this.assetTable()
      const i = table.indexOf(asset)
      if (i >= 0) return i
      void this.t.env.setFact(ASSETS, [...table, asset])
      return table.length
    },
    at: (index) => this.assetTable()[index]
  }

  private assetTable (at?: LedgerSnapshot): string[] {
    const v = this.t.env.fact(ASSETS, at)
    return Array.isArray(v) ? v as string[] : []
  }

  /** the table of assets to read records with: as it was in the snapshot `at` (reads only) */
  assetsIn (at: LedgerSnapshot | undefined): AssetTable {
    return at == null ? this.assets : { indexOf: this.assets.indexOf, at: (index) => this.assetTable(at)[index] }
  }

  getPin (requestid: string, at?: LedgerSnapshot): PinRecord | undefined {
    const stored = this.t.pins.get(requestid, at?.read)
    return stored == null ? undefined : readPin(requestid, stored, this.paymentOfPin(requestid, at), this.assetsIn(at))
  }

  getPayment (id: string, pinCid?: (requestid: string) => string | undefined, at?: LedgerSnapshot): PaymentRecord | undefined {
    const stored = this.storedPayment(id, at)
    return stored == null ? undefined : readPayment(id, stored, pinCid ?? this.pinCidIn(at))
  }

  /** an x402 payment from payments-binary (or, until the compact:payment-keys upgrade has moved it, payments); any other from payments */
  private storedPayment (id: string, at?: LedgerSnapshot): StoredPayment | undefined {
    const key = paymentKey(id)
    return (key != null ? this.t.paymentsBinary.get(key, at?.read) : undefined) ?? this.t.payments.get(id, at?.read)
  }

  /** reads a pin's payment record: the purpose may name the pin's CID, which the pin's reader has already */
  paymentOfPin (requestid: string, at?: LedgerSnapshot): (id: string, cid: string) => PaymentRecord | undefined {
    return (id, cid) => this.getPayment(id, (rid) => rid === requestid ? cid : this.pinCid(rid, at), at)
  }

  /** the CID of a pin the ledger holds (a payment's purpose may name it); `at`: in that snapshot */
  readonly pinCid = (requestid: string, at?: LedgerSnapshot): string | undefined => {
    const raw = binaryFastIn(this.t.pins, requestid, at)
    if (raw == null) return undefined
    const cid = cidOfPacked(raw)
    if (cid != null) return cid
    const stored = this.t.pins.get(requestid, at?.read)
    return stored == null ? undefined : cidOf(stored)
  }

  pinCidIn (at: LedgerSnapshot | undefined): (requestid: string) => string | undefined {
    return at == null ? this.pinCid : (requestid) => this.pinCid(requestid, at)
  }

  /** Writes a payment record (inside a transaction); `pinCid`: the CID of the pin it paid for, when that pin is written in the same transaction. */
  putPayment (p: PaymentRecord, pinCid = this.pinCid(p.requestid)): void {
    const key = paymentKey(p.id)
    if (key != null) this.t.paymentsBinary.put(key, storePayment(p, pinCid))
    else this.t.payments.put(p.id, storePayment(p, pinCid))
  }

  /** every pin, whole, in requestid order; `at`: as the snapshot holds them */
  * allPins (at?: LedgerSnapshot): Generator<PinRecord> {
    const assets = this.assetsIn(at)
    for (const { key, value } of this.t.pins.getRange(at?.read)) yield readPin(key, value, this.paymentOfPin(key, at), assets)
  }
}
