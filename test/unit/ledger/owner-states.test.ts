/**
 * GET /pins without name, meta or cid filters reads only each summary's
 * status and pinned_until, from its bytes (PinLedger.statesByOwner,
 * stored.ts summaryStateOf): what it reads is what decoding the summary
 * reads, for every status, removed pins, CIDv0 and v1, and listPins answers
 * the same as filtering the decoded summaries.
 */
import { pack } from 'msgpackr'
import { afterEach, describe, expect, it } from 'vitest'
import { summaryStateOf } from '../../../src/ledger/lmdb/stored.js'
import { listPins } from '../../../src/ledger/lmdb/listing.js'
import { matches } from '../../../src/ledger/query.js'
import { parsePinQuery } from '../../../src/service/pins/pin-query.js'
import { closeTestLedgers, openTestLedger } from '../../helpers/ledger.js'
import { OWNER, pinRecord } from '../../helpers/records.js'

afterEach(async () => { await closeTestLedgers() })

const V1 = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const V0 = 'QmPZ9gcCEpqKTo6aq61g2nXGUhM4iCL3ewB6LDXZCtioEB'
const DAY = 86400_000

describe('owner states', () => {
  it('reads the status and pinned_until of each pin as its decoded summary has them', async () => {
    const { ledger } = await openTestLedger({ upgrade: true })
    const statuses = ['queued', 'pinning', 'pinned', 'failed'] as const
    const ids: string[] = []
    for (let i = 0; i < 24; i++) {
      const requestid = `019ab3f1-2c4d-7e8f-9a0b-${String(i).padStart(12, '0')}`
      ids.push(requestid)
      // expired, live, and far-off ends; named or not, with meta or not
      const until = new Date(Date.now() + (i % 3 === 0 ? -DAY : i % 3 === 1 ? DAY : 3650 * DAY)).toISOString()
      await ledger.create(pinRecord(requestid, i % 2 === 0 ? V1 : V0, { owner: OWNER, status: statuses[i % 4], pinnedUntil: until, ...(i % 5 === 0 ? { name: `n-${i}` } : {}), meta: i % 7 === 0 ? { app: 'x' } : {} }))
    }
    for (const id of ids.filter((_, i) => i % 6 === 5)) await ledger.remove(id, 'unpinned')
    const decoded = [...ledger.summariesByOwner(OWNER)].map(s => s.removed ? undefined : { id: s.id, status: s.status, until: s.until })
    expect(decoded.length).toBe(20)
    expect([...ledger.statesByOwner(OWNER)]).toEqual(decoded)
    const created = ledger.get(ids[10] as string)?.createdUs as number
    expect([...ledger.statesByOwner(OWNER, created)]).toEqual([...ledger.summariesByOwner(OWNER, created)].map(s => s.removed ? undefined : { id: s.id, status: s.status, until: s.until }))

    // listPins: the same counts and pages as filtering every decoded summary
    const now = new Date()
    for (const query of ['', 'status=queued,pinning,failed', 'status=pinned,failed&limit=3', 'limit=1000&status=queued,pinning,pinned,failed', `before=${encodeURIComponent(new Date(Math.floor(created / 1000)).toISOString())}`, 'name=n-0', `cid=${V0}`, 'meta={"app":"x"}&status=pinned,failed,queued']) {
      const q = parsePinQuery(new URLSearchParams(query))
      const all = [...ledger.summariesByOwner(OWNER, q.beforeUs, q.afterUs)].filter(s => matches(s, q, now.getTime(), ledger.graceMs))
      const got = listPins(ledger, OWNER, q, now)
      expect(got.count, query).toBe(all.length)
      expect(got.results.map(p => p.requestid), query).toEqual(all.slice(0, q.limit).map(s => s.id))
    }
  })

  it('reads the forms msgpack gives the fields, and leaves any other shape to decoding', () => {
    const until = Date.parse('2030-01-02T03:04:05.678Z')
    const cidBytes = Buffer.from('0155122086', 'hex')
    expect(summaryStateOf(pack([1, false, cidBytes, 'pinned', until, null, {}]))).toEqual({ status: 'pinned', until })
    expect(summaryStateOf(pack([1, false, V1, 'failed', 123456]))).toEqual({ status: 'failed', until: 123456 })
    expect(summaryStateOf(pack([1, false, cidBytes, 'queued', 7]))).toEqual({ status: 'queued', until: 7 })
    expect(summaryStateOf(pack([1, true]))).toBe('removed')
    // another layout, a map (older versions), a status not known, a time as a string, bytes cut short
    expect(summaryStateOf(pack([2, false, cidBytes, 'pinned', until]))).toBeUndefined()
    expect(summaryStateOf(pack({ removed: false, cid: V1, status: 'pinned', until }))).toBeUndefined()
    expect(summaryStateOf(pack([1, false, cidBytes, 'constructor', until]))).toBeUndefined()
    expect(summaryStateOf(pack([1, false, cidBytes, 'pinned', 'soon']))).toBeUndefined()
    expect(summaryStateOf(pack([1, false, cidBytes, 'pinned', until]).subarray(0, 20))).toBeUndefined()
    // read in place from a longer buffer: only its first `size` bytes count
    const whole = pack([1, false, cidBytes, 'pinned', until])
    const longer = Buffer.concat([whole, Buffer.alloc(16, 0xff)])
    expect(summaryStateOf(longer, whole.length)).toEqual({ status: 'pinned', until })
    expect(summaryStateOf(longer, whole.length - 3)).toBeUndefined()
  })
})
