/**
 * GET /pins with name, meta or cid filters keeps what it found
 * (PinLedger.listings) for the same query: until the ledger's next
 * transaction ends, until the first pin it counted expires, and not across
 * a clock set back.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Listings, MAX_KEPT, MAX_KEPT_IDS } from '../../../src/ledger/lmdb/listings.js'
import { listPins } from '../../../src/ledger/lmdb/listing.js'
import { parsePinQuery } from '../../../src/service/pins/pin-query.js'
import { closeTestLedgers, openTestLedger } from '../../helpers/ledger.js'
import { OWNER, pinRecord } from '../../helpers/records.js'

afterEach(async () => { await closeTestLedgers() })

const V1 = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const DAY = 86400_000

describe('kept listings', () => {
  it('answers a repeated query from what it found, until a transaction ends or a pin it counted expires', async () => {
    const { env, ledger } = await openTestLedger({ upgrade: true })
    const now = Date.now()
    let n = 0
    const pin = (name: string, untilMs: number) => pinRecord(`019ab3f1-2c4d-7e8f-9a0b-${String(n++).padStart(12, '0')}`, V1, { owner: OWNER, name, meta: { app: 'a' }, pinnedUntil: new Date(untilMs).toISOString() })
    const a = pin('report-a', now + 3 * DAY)
    const b = pin('report-b', now + 3 * DAY)
    for (const p of [a, b, pin('photo-c', now + 3 * DAY)]) await ledger.create(p)
    const q = parsePinQuery(new URLSearchParams('name=report&match=partial&meta={"app":"a"}'))
    const list = (at: number) => { const r = listPins(ledger, OWNER, q, new Date(at)); return { count: r.count, ids: r.results.map(p => p.requestid) } }
    expect(list(now)).toEqual({ count: 2, ids: [b.requestid, a.requestid] })

    // b renamed in the index behind the ledger's back (no transaction): the kept listing still answers
    const byOwner = env.db<unknown[]>('pins-by-owner')
    const key = [OWNER, b.createdUs, b.requestid]
    const stored = [...byOwner.get(key) as unknown[]]
    stored[5] = 'photo-b'
    await byOwner.put(key, stored)
    expect(list(now)).toEqual({ count: 2, ids: [b.requestid, a.requestid] })

    // a transaction ends: read again
    const d = pin('report-d', now + DAY)
    await ledger.create(d)
    expect(list(now)).toEqual({ count: 2, ids: [d.requestid, a.requestid] })
    // d expires: read again
    expect(list(now + DAY + 1)).toEqual({ count: 1, ids: [a.requestid] })
    // the clock set back: read again
    expect(list(now)).toEqual({ count: 2, ids: [d.requestid, a.requestid] })
  })

  it('keeps the listings of the queries asked most recently', async () => {
    const { env, ledger } = await openTestLedger({ upgrade: true })
    const p = pinRecord('019ab3f1-2c4d-7e8f-9a0b-000000000001', V1, { owner: OWNER, name: 'report', meta: {} })
    await ledger.create(p)
    const count = (limit: number) => listPins(ledger, OWNER, parsePinQuery(new URLSearchParams(`name=report&limit=${limit}`))).count
    for (let limit = 1; limit <= MAX_KEPT; limit++) expect(count(limit)).toBe(1)
    // renamed behind the ledger's back: what is kept still answers
    const byOwner = env.db<unknown[]>('pins-by-owner')
    const key = [OWNER, p.createdUs, p.requestid]
    const stored = [...byOwner.get(key) as unknown[]]
    stored[5] = 'photo'
    await byOwner.put(key, stored)
    expect(count(1)).toBe(1)
    // one more query: the least recently asked (limit=2, as limit=1 was asked again) is no longer kept
    expect(count(MAX_KEPT + 1)).toBe(0)
    expect(count(3)).toBe(1)
    expect(count(2)).toBe(0)
  })

  it('keeps no more requestids in all than its bound, however large the pages asked for', () => {
    const kept = new Listings(() => 0)
    const page = (n: number, tag: string) => ({ count: n, ids: Array.from({ length: n }, (_, i) => `${tag}-${i}`) })
    const perPage = 1000
    const pages = Math.floor(MAX_KEPT_IDS / perPage)
    for (let i = 0; i <= pages; i++) kept.keep(`q${i}`, 0, Infinity, page(perPage, `q${i}`))
    // one page more than fits: the least recently asked went, the rest stay
    expect(kept.get('q0', 0)).toBeUndefined()
    for (let i = 1; i <= pages; i++) expect(kept.get(`q${i}`, 0)?.ids).toHaveLength(perPage)
    // a page as large as the bound alone leaves only itself
    kept.keep('big', 0, Infinity, page(MAX_KEPT_IDS, 'big'))
    expect(kept.get('q1', 0)).toBeUndefined()
    expect(kept.get('big', 0)?.ids).toHaveLength(MAX_KEPT_IDS)
  })
})
