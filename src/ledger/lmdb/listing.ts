/**
 * GET /pins on the LMDB ledger: the owner index's summaries filtered by the
 * query (../query.ts), only the page's pins read in full, and one owner's
 * listings kept between writes (./listings.ts).
 */
import { matcher, stateMatches, type PinQuery } from '../query.js'
import { summaryOf, type ListedSummary, type PinRecord } from '../records.js'
import type { PinLedger } from './pins.js'

/**
 * Filters and counts on the owner index's summaries (no record is read for
 * that); only the page's pins are read in full. Without name, meta or cid
 * filters only each summary's status and pinned_until are read (statesByOwner),
 * and the count is the one the ledger keeps per owner and status
 * (PinLedger.ownerCount: it takes off the pins past their pinned_until
 * itself; with before/after, its counts per ~72 minutes of creation and the
 * pins at the window's ends): only the page's entries are read besides. Until
 * a ledger of an earlier pind has its counts built (its upgrade), or for a
 * window shorter than two of those spans, every match is counted. With
 * name, meta or cid filters every summary of the owner is read, and what was
 * found is kept (PinLedger.listings) for the same query until the ledger's
 * next transaction ends or a pin it counted expires.
 */
export function listPins (ledger: Pick<PinLedger, 'get' | 'graceMs' | 'summariesByOwner' | 'statesByOwner'> & Partial<Pick<PinLedger, 'ownerCount' | 'listings'>>, owner: string, q: PinQuery, now: Date = new Date()): { count: number, results: PinRecord[] } {
  const results: PinRecord[] = []
  let count = 0
  const t = now.getTime()
  const page = (id: string): void => {
    count++
    if (results.length < q.limit) {
      const pin = ledger.get(id)
      if (pin != null) results.push(pin)
    }
  }
  if (q.name == null && q.meta == null && q.cids == null) {
    const kept = ledger.ownerCount?.(owner, q.statuses, t, q.beforeUs, q.afterUs)
    if (kept !== undefined) {
      for (const s of ledger.statesByOwner(owner, q.beforeUs, q.afterUs)) {
        if (results.length >= q.limit) break
        if (stateMatches(s, q, t, ledger.graceMs)) page(s.id)
      }
      return { count: kept, results }
    }
    for (const s of ledger.statesByOwner(owner, q.beforeUs, q.afterUs)) if (stateMatches(s, q, t, ledger.graceMs)) page(s.id)
  } else {
    const key = `${owner}\n${queryKey(q)}`
    const kept = ledger.listings?.get(key, t)
    if (kept !== undefined) {
      for (const id of kept.ids) {
        const pin = ledger.get(id)
        if (pin != null) results.push(pin)
      }
      return { count: kept.count, results }
    }
    const test = matcher(q, t, ledger.graceMs)
    // the listing holds until the first pin it counts expires (failed ones do not)
    let until = Number.POSITIVE_INFINITY
    for (const s of ledger.summariesByOwner(owner, q.beforeUs, q.afterUs, q.cids != null)) {
      if (!test(s)) continue
      page(s.id)
      if (!s.removed && s.status !== 'failed') until = Math.min(until, s.until + ledger.graceMs)
    }
    ledger.listings?.keep(key, t, until, { count, ids: results.map(p => p.requestid) })
  }
  return { count, results }
}

/** a query as the key of its kept listing: every filter, the page's size too */
function queryKey (q: PinQuery): string {
  return JSON.stringify([q.cids == null ? null : [...q.cids], q.name ?? null, q.match, [...q.statuses], q.beforeUs ?? null, q.afterUs ?? null, q.limit, q.meta == null ? null : Object.entries(q.meta)])
}

/**
 * GET /pins's filters over every owner: newest first, `count` of every match.
 * With `cid` it reads only those CIDs' pins (the CID index); otherwise it
 * filters every pin's summary (the owner index) and keeps the newest `limit`.
 */
export function listAllOwners (ledger: Pick<PinLedger, 'get' | 'graceMs' | 'requestidsOfCid' | 'allSummaries'>, q: PinQuery, now: Date = new Date()): { count: number, results: PinRecord[] } {
  const t = now.getTime()
  let count = 0
  let newest: Array<{ createdUs: number, id: string }> = []
  const test = matcher(q, t, ledger.graceMs)
  const consider = (s: ListedSummary, createdUs: number): void => {
    if (!test(s)) return
    count++
    newest.push({ createdUs, id: s.id })
    if (newest.length >= 2 * q.limit + 64) newest = top(newest, q.limit)
  }
  if (q.cids != null) {
    for (const cid of q.cids) {
      for (const id of ledger.requestidsOfCid(cid)) {
        const pin = ledger.get(id)
        if (pin == null) continue
        if ((q.beforeUs != null && pin.createdUs >= q.beforeUs) || (q.afterUs != null && pin.createdUs <= q.afterUs)) continue
        consider(summaryOf(pin), pin.createdUs)
      }
    }
  } else {
    // no CID filter here (those are read through the CID index): the summaries' CIDs are left undecoded
    for (const { createdUs, summary } of ledger.allSummaries(q.beforeUs, q.afterUs, false)) consider(summary, createdUs)
  }
  const results: PinRecord[] = []
  for (const { id } of top(newest, q.limit)) {
    const pin = ledger.get(id)
    if (pin != null) results.push(pin)
  }
  return { count, results }
}

function top (items: Array<{ createdUs: number, id: string }>, n: number): Array<{ createdUs: number, id: string }> {
  return items.sort((a, b) => b.createdUs - a.createdUs).slice(0, n)
}
