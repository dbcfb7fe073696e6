/**
 * Writes large ledgers for benchmarks fast, straight into LMDB in the layout
 * of src/ledger/lmdb/pins.ts (the sub-databases, their keys, the owner-index
 * summaries, the index flags), so no hand-copy of that layout lives in each
 * benchmark. If PinLedger's layout changes, change it here too;
 * scripts/bench-pins-list.mjs and bench-export.mjs then check the result
 * through the real server and CLI.
 * Records are written as maps, the layout of versions before the compact
 * one (src/ledger/lmdb/stored.ts): pind reads them, and rewrites them once at its
 * first open (the compact:records upgrade), as it does an older ledger.
 */
import { join } from 'node:path'
import { open } from 'lmdb'
import { CID } from 'multiformats/cid'

/** RFC 3339 with microseconds, as src/ledger/clock.ts isoMicros writes it. */
export const isoMicros = (us) => { const base = new Date(Math.floor(us / 1000)).toISOString(); return us % 1000 === 0 ? base : `${base.slice(0, 23)}${String(us % 1000).padStart(3, '0')}Z` }

export async function openBenchLedger (dataDir) {
  const root = open({ path: join(dataDir, 'ledger.mdb'), maxDbs: 32, compression: false, mapSize: 2 ** 36 })
  const meta = root.openDB({ name: 'meta' })
  const pins = root.openDB({ name: 'pins' })
  const byOwner = root.openDB({ name: 'pins-by-owner' })
  const byCid = root.openDB({ name: 'pins-by-cid' })
  const byExpiry = root.openDB({ name: 'pins-by-expiry' })
  const payments = root.openDB({ name: 'payments' })
  const pinBlocks = root.openDB({ name: 'pin-blocks' })
  const blockRefs = root.openDB({ name: 'block-refs' })
  await meta.transaction(() => {
    meta.put('schemaVersion', 1)
    meta.put('created', new Date().toISOString())
    meta.put('index:pins-by-expiry', true)
    meta.put('index:owner-summaries', true)
  })
  return {
    /** run `fn` in one synchronous write transaction (batch many puts) */
    batch: (fn) => root.transactionSync(fn),
    /** a PinRecord with its indexes (call inside batch) */
    putPin (pin) {
      const cidV1 = CID.parse(pin.cid).toV1().toString()
      pins.put(pin.requestid, pin)
      byOwner.put([pin.owner, pin.createdUs, pin.requestid], {
        id: pin.requestid, cid: cidV1, status: pin.status, until: Date.parse(pin.pinnedUntil), removed: pin.removed != null,
        ...(pin.name != null ? { name: pin.name } : {}), meta: pin.meta
      })
      byCid.put([cidV1, pin.requestid], pin.owner)
      if (pin.removed == null) byExpiry.put([Date.parse(pin.pinnedUntil), pin.requestid], pin.requestid)
    },
    /** the block CIDs a pinned pin references, as PinLedger.addRefs writes them (call inside batch) */
    putBlocks (requestid, cids) {
      const keys = cids.map(c => CID.parse(c).toV1().toString())
      pinBlocks.put(requestid, keys)
      for (const k of keys) blockRefs.put(k, (blockRefs.get(k) ?? 0) + 1)
    },
    /** a PaymentRecord (call inside batch) */
    putPayment (p) { payments.put(p.id, p) },
    close: async () => { await root.close() }
  }
}
