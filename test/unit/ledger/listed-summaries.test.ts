/**
 * GET /pins with name or meta filters but no cid filter reads every summary
 * of the owner without its CID (PinLedger.summariesByOwner's withCid): the
 * listing answers the same, and a summary whose CID could not even be
 * decoded lists by its other fields; the operator's listing over every
 * owner too.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { listPins } from '../../../src/ledger/lmdb/listing.js'
import { parsePinQuery } from '../../../src/service/pins/pin-query.js'
import { runPinsOp } from '../../../src/service/admin/pins-admin.js'
import { closeTestLedgers, contractOf, openTestLedger } from '../../helpers/ledger.js'
import { OWNER, pinRecord } from '../../helpers/records.js'

afterEach(async () => { await closeTestLedgers() })

const V1 = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

describe('listing without CIDs', () => {
  it('lists by name and meta a pin whose summary holds a CID that does not decode', async () => {
    const t = await openTestLedger({ upgrade: true })
    const { env, ledger } = t
    const ids = ['report-1', 'photo-2', 'Report-3'].map((name, i) => {
      const requestid = `019ab3f1-2c4d-7e8f-9a0b-${String(i).padStart(12, '0')}`
      return { requestid, name, pin: pinRecord(requestid, V1, { owner: OWNER, name, meta: { app: i === 1 ? 'b' : 'a' } }) }
    })
    for (const { pin } of ids) await ledger.create(pin)
    // the newest pin's summary: its CID bytes replaced by bytes no CID decodes from
    const bad = ids[2]?.pin
    const byOwner = env.db<unknown[]>('pins-by-owner')
    const key = [OWNER, bad?.createdUs, bad?.requestid]
    const stored = [...byOwner.get(key) as unknown[]]
    stored[2] = Buffer.from([0x99, 0x99, 0x99])
    await byOwner.put(key, stored)
    expect(() => [...ledger.summariesByOwner(OWNER)]).toThrow()

    const got = listPins(ledger, OWNER, parsePinQuery(new URLSearchParams('name=report&match=ipartial&meta={"app":"a"}')))
    expect(got.count).toBe(2)
    expect(got.results.map(p => p.requestid)).toEqual([ids[2]?.requestid, ids[0]?.requestid])
    expect(got.results[0]?.cid).toBe(V1)
    const byMeta = listPins(ledger, OWNER, parsePinQuery(new URLSearchParams('meta={"app":"b"}')))
    expect(byMeta.results.map(p => p.requestid)).toEqual([ids[1]?.requestid])
    // the operator's listing over every owner (pind pins ls) reads them alike
    expect(() => [...ledger.allSummaries()]).toThrow()
    const all = await runPinsOp({ op: 'ls', query: { name: 'report', match: 'ipartial', meta: '{"app":"a"}' } }, { ledger: contractOf(t).pins })
    expect(all.count).toBe(2)
    expect(all.results?.map(p => p.requestid)).toEqual([ids[2]?.requestid, ids[0]?.requestid])
  })
})
