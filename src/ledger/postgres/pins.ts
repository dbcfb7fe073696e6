/**
 * The pin ledger's contract (../pins.ts) on PostgreSQL: reads straight off
 * the pool, each write one transaction (./pin-writes.ts), walks in keyset
 * pages so a large ledger is never read in one result.
 */
import { isoMicros } from '../clock.js'
import type { CID } from 'multiformats/cid'
import type { PinChange } from '../changes.js'
import type { PinLedger } from '../pins.js'
import { isLive, type PinRecord } from '../records.js'
import { archiveDue } from './archive.js'
import { blocksOf, holdsRefs, releaseRefs } from './block-refs.js'
import { fetchClaims } from './fetch-claims.js'
import { listPins } from './listing.js'
import { cidKey, getPayment, getPin, storableKey, type Db } from './pin-store.js'
import { createPin, failFetch, finishFetch, removePin, renewPin, takeDownPin, updatePin } from './pin-writes.js'
import { noteWrites } from './settlements.js'
import { watch, type Tx, type Watchers } from './tx.js'

/** requestids are UUIDs; a far longer string cannot be one */
const MAX_REQUESTID_LENGTH = 128
const PAGE = 1000
/** pin block lists checked per transaction by releaseUnheld */
const RELEASE_BATCH = 200

export interface PinLedgerParts {
  db: Db
  watchers: Watchers
  graceMs: number
  /** one write transaction (retried when the database asks for it: a deadlock, a serialization failure) */
  write: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>
  /** resolves once every write begun before it has committed */
  committed: () => Promise<void>
}

/** a walk in keyset pages: `page` gives the statement for the page after the last row seen (none at first); `batch` rows a page */
async function * keyPages<R extends Record<string, unknown>> (db: Db, batch: number, page: (last: R | undefined) => [string, unknown[]]): AsyncGenerator<R[]> {
  let last: R | undefined
  for (;;) {
    const [sql, params] = page(last)
    const r = await db.query<R>(sql, params)
    if (r.rows.length > 0) yield r.rows
    if (r.rows.length < batch) return
    last = r.rows[r.rows.length - 1]
  }
}

export function pinLedger (p: PinLedgerParts): PinLedger {
  const { db, watchers, graceMs, write } = p
  const count = async (sql: string, params: unknown[]): Promise<number> => Number((await db.query<{ n: string }>(sql, params)).rows[0]?.n ?? 0)
  const paymentKnown = async (id: string): Promise<boolean> => storableKey(id) && (await db.query('SELECT 1 FROM payments WHERE id = $1', [id])).rows.length > 0
  const referencedBatches = async function * (batch = 10_000): AsyncGenerator<string[]> {
    const pages = keyPages<{ cid: string }>(db, batch, (last) => last == null
      ? ['SELECT cid FROM block_refs ORDER BY cid LIMIT $1', [batch]]
      : ['SELECT cid FROM block_refs WHERE cid > $2 ORDER BY cid LIMIT $1', [batch, last.cid]])
    for await (const rows of pages) yield rows.map(r => r.cid)
  }
  let holds = 0
  return {
    // one row every front end steps: a value after every one handed out, by a millisecond at least
    nextCreated: async () => {
      const us = Number((await db.query<{ us: string }>('UPDATE clock SET last_us = GREATEST(last_us + 1000, $1) RETURNING last_us AS us', [Date.now() * 1000])).rows[0]?.us)
      return { us, iso: isoMicros(us) }
    },
    graceMs,
    isLive: (pin, now = new Date()) => isLive(pin, now, graceMs),
    get: async (id) => id.length > MAX_REQUESTID_LENGTH ? undefined : await getPin(db, id),
    known: async (id) => id.length <= MAX_REQUESTID_LENGTH && storableKey(id) && (await db.query('SELECT 1 FROM pins WHERE requestid = $1', [id])).rows.length > 0,
    requestidsOfCid: async (cid) => (await db.query<{ requestid: string }>('SELECT requestid FROM pins WHERE cid = $1 AND NOT removed ORDER BY requestid', [cidKey(cid)])).rows.map(r => r.requestid),
    livePinsOf: async (cid, now = new Date()) => {
      const r = await db.query<{ record: PinRecord }>('SELECT record FROM pins WHERE cid = $1 AND NOT removed ORDER BY requestid', [cidKey(cid)])
      return r.rows.map(row => row.record).filter(pin => isLive(pin, now, graceMs)).map(pin => pin.requestid)
    },
    list: async (owner, q, now = new Date()) => await listPins(db, owner, q, now.getTime(), graceMs),
    countByStatus: async (now = new Date()) => {
      const out = { queued: 0, pinning: 0, pinned: 0, failed: 0, removed: 0 }
      const r = await db.query<{ status: keyof typeof out, n: string }>(`SELECT status, count(*) AS n FROM pins WHERE NOT removed AND (status = 'failed' OR until_ms + $1 > $2) GROUP BY status`, [graceMs, now.getTime()])
      for (const row of r.rows) out[row.status] = Number(row.n)
      out.removed = await count('SELECT count(*) AS n FROM pins WHERE removed', [])
      return out
    },
    usage: async (owner, now = new Date()) => {
      const pins = { queued: 0, pinning: 0, pinned: 0, failed: 0 }
      const r = await db.query<{ status: keyof typeof pins, n: string, bytes: string | null, next: number | null }>(`SELECT status, count(*) AS n,
          sum(coalesce((record->>'dagSize')::bigint, 0)) FILTER (WHERE status = 'pinned') AS bytes,
          min(until_ms) FILTER (WHERE status <> 'failed') AS next
        FROM pins WHERE owner = $1 AND NOT removed AND (status = 'failed' OR until_ms + $2 > $3) GROUP BY status`, [owner, graceMs, now.getTime()])
      let bytes = 0
      let nextExpiry: number | undefined
      for (const row of r.rows) {
        pins[row.status] = Number(row.n)
        bytes += Number(row.bytes ?? 0)
        if (row.next != null && (nextExpiry == null || row.next < nextExpiry)) nextExpiry = row.next
      }
      // an x402 payment's id begins with its payer (payer:nonce): the owner's payments are one range of the key
      const paid = await db.query<{ network: string, amount: string }>(`SELECT record->>'network' AS network, sum(amount::numeric)::text AS amount
        FROM payments WHERE id > $1 AND id < $2 AND NOT archived GROUP BY 1`, [`${owner}:`, `${owner};`])
      const spent: Record<string, bigint> = {}
      for (const row of paid.rows) spent[row.network] = BigInt(row.amount)
      return { pins, bytes, spent, ...(nextExpiry != null ? { nextExpiry } : {}) }
    },
    payment: async (id) => await getPayment(db, id),
    // a payment id, once recorded, is used for good (./archive.ts)
    paymentUsed: paymentKnown,
    knownPayment: paymentKnown,
    ...noteWrites(db, write),
    create: async (pin, payment, blocks = []) => { await write(async (tx) => { await createPin(tx, pin, payment, blocks) }) },
    update: async (id, change) => await write(async (tx) => await updatePin(tx, id, change)),
    remove: async (id, why, at = new Date()) => await write(async (tx) => await removePin(tx, id, why, at)),
    takeDown: async (id, reason, at = new Date()) => await write(async (tx) => await takeDownPin(tx, id, reason, at)),
    renew: async (id, months, payment, until) => await write(async (tx) => await renewPin(tx, id, months, payment, until)),
    pendingFetches: async () => (await db.query<{ requestid: string }>('SELECT requestid FROM fetch_queue ORDER BY created_us, requestid')).rows.map(r => r.requestid),
    ...fetchClaims(db),
    finishFetch: async (id, blocks: Array<string | CID>, dagSize, details) => await write(async (tx) => await finishFetch(tx, id, blocks, dagSize, details)),
    failFetch: async (id, details) => await write(async (tx) => await failFetch(tx, id, details)),
    blocksOf: async (id) => await blocksOf(db, id),
    refCount: async (cid) => Number((await db.query<{ n: number }>('SELECT n FROM block_refs WHERE cid = $1', [cidKey(cid)])).rows[0]?.n ?? 0),
    referencedBlocks: async function * () {
      for await (const batch of referencedBatches(PAGE)) yield * batch
    },
    expiredBy: async function * (cutoff) {
      const pages = keyPages<{ requestid: string, until_ms: number }>(db, PAGE, (last) => last == null
        ? ['SELECT requestid, until_ms FROM pins WHERE NOT removed AND until_ms <= $2 ORDER BY until_ms, requestid LIMIT $1', [PAGE, cutoff.getTime()]]
        : ['SELECT requestid, until_ms FROM pins WHERE NOT removed AND until_ms <= $2 AND (until_ms, requestid) > ($3, $4) ORDER BY until_ms, requestid LIMIT $1', [PAGE, cutoff.getTime(), last.until_ms, last.requestid]])
      for await (const rows of pages) {
        for (const r of rows) yield r.requestid
      }
    },
    releaseUnheld: async () => {
      let released = 0
      let after = ''
      for (;;) {
        const ids = (await db.query<{ requestid: string }>('SELECT requestid FROM pin_blocks WHERE requestid > $1 ORDER BY requestid LIMIT $2', [after, RELEASE_BATCH])).rows.map(r => r.requestid)
        if (ids.length === 0) return released
        released += await write(async (tx) => {
          let n = 0
          for (const id of ids) {
            const pin = await getPin(tx, id, true)
            if (pin != null && await holdsRefs(tx, pin)) continue
            await releaseRefs(tx, id)
            n++
          }
          return n
        })
        after = ids[ids.length - 1] as string
      }
    },
    // while a hold is open nothing moves, and a hold taken during a pass stops it before its next batch
    archiveDue: async (cutoff, between = async () => {}, stop = () => false, batchSize = 100, moveBefore = cutoff) =>
      holds > 0 ? 0 : await archiveDue(write, cutoff, between, () => stop() || holds > 0, batchSize, moveBefore),
    // this process's holds (an import that merges); another front end's archive passes are not held
    holdArchive: () => {
      holds++
      let released = false
      return () => { if (!released) { released = true; holds-- } }
    },
    watchQueued: (fn) => watch(watchers.queued, fn),
    watchRemoved: (fn) => watch(watchers.removed, fn),
    watchNewRefs: (fn) => watch(watchers.newRefs, fn),
    watchReleased: (fn) => watch(watchers.released, fn),
    committed: p.committed,
    watchCommitted: (fn) => watch(watchers.committed, fn),
    watchLost: (fn) => watch(watchers.lost, fn),
    referencedBatches,
    livePinBatches: async function * (batch = 10_000): AsyncGenerator<PinChange[]> {
      const pages = keyPages<{ requestid: string, cid: string, status: PinRecord['status'], until_ms: number }>(db, batch, (last) => last == null
        ? ['SELECT requestid, cid, status, until_ms FROM pins WHERE NOT removed ORDER BY requestid LIMIT $1', [batch]]
        : ['SELECT requestid, cid, status, until_ms FROM pins WHERE NOT removed AND requestid > $2 ORDER BY requestid LIMIT $1', [batch, last.requestid]])
      for await (const rows of pages) {
        yield rows.map(r => ({ root: r.cid, requestid: r.requestid, status: r.status, until: r.until_ms, removed: false }))
      }
    }
  }
}
