/**
 * The provide schedule in the ledger (real LMDB): what pins hold is announced,
 * counted per pin (one CID, many pins), and leaves the schedule in the same
 * transaction that releases it — unpinned, replaced, expired, failed.
 */
import { CID } from 'multiformats/cid'
import { identity } from 'multiformats/hashes/identity'
import * as raw from 'multiformats/codecs/raw'
import * as Digest from 'multiformats/hashes/digest'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { LedgerEnv } from '../../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../../src/ledger/lmdb/pins.js'
import { kadKeyOf } from '../../../src/ledger/lmdb/provide-keys.js'
import { closeTestLedgers, openTestLedger } from '../../helpers/ledger.js'
import { pinRecord } from '../../helpers/records.js'

const A = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const B = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
const C = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'

let env: LedgerEnv
let ledger: PinLedger

beforeEach(async () => { ({ env, ledger } = await openTestLedger({ prefix: 'pind-provide-', upgrade: true })) })
afterEach(closeTestLedgers)

const roots = (): number => ledger.provides.count('roots')
const blocks = (): number => ledger.provides.count('blocks')
const due = (kind: 'roots' | 'blocks'): string[] => [...ledger.provides.due(kind, Date.now() + 1000)].map(k => CID.createV1(raw.code, Digest.decode(k.mh)).toString())

describe('ProvideKeys', () => {
  it('schedules the root and blocks of a pinned pin at once, counted per pin', async () => {
    await ledger.create(pinRecord('1', A), undefined, [A, B])
    expect([roots(), blocks()]).toEqual([1, 2])
    expect(due('roots')).toEqual([A])
    expect(new Set(due('blocks'))).toEqual(new Set([A, B]))
    await ledger.create(pinRecord('2', A), undefined, [A, C])
    expect([roots(), blocks()]).toEqual([1, 3])
    await ledger.remove('1', 'unpinned')
    expect([roots(), blocks()]).toEqual([1, 2])
    await ledger.remove('2', 'expired')
    expect([roots(), blocks()]).toEqual([0, 0])
    expect(due('roots')).toEqual([])
  })

  it('schedules a pin by CID only once it is fetched, and never a failed one', async () => {
    await ledger.create(pinRecord('q', B, { status: 'queued' }))
    expect(roots()).toBe(0)
    await ledger.finishFetch('q', [B], 10, 'pinned')
    expect(roots()).toBe(1)
    await ledger.create(pinRecord('f', C, { status: 'queued' }))
    await ledger.failFetch('f', 'failed')
    expect(due('roots')).toEqual([B])
  })

  it('keeps announcing a replaced pin until its replacement settles, then only the replacement', async () => {
    await ledger.create(pinRecord('old', A), undefined, [A])
    await ledger.create(pinRecord('new', B, { status: 'queued', replaces: 'old' }))
    expect(due('roots')).toEqual([A])
    await ledger.finishFetch('new', [B], 10, 'pinned')
    expect(due('roots')).toEqual([B])
  })

  it('moves a key in the due order when it is rescheduled, and skips identity CIDs', async () => {
    const id = CID.createV1(raw.code, identity.digest(new TextEncoder().encode('hi'))).toString()
    await ledger.create(pinRecord('1', A), undefined, [A, id])
    expect(blocks()).toBe(1)
    const [key] = [...ledger.provides.due('roots', Date.now())]
    expect(key?.kad.equals(kadKeyOf(CID.parse(A).multihash.bytes))).toBe(true)
    const later = Date.now() + 60_000
    await ledger.provides.reschedule('roots', [{ kad: key!.kad, due: later, at: Date.now() }])
    expect(ledger.provides.countDue('roots', Date.now())).toBe(0)
    expect(ledger.provides.firstDue('roots')).toBe(later)
    expect(ledger.provides.countDue('roots', later)).toBe(1)
  })

  it('reschedules a region\'s worth of keys, committed in batches: every key moves, and one released meanwhile is left out', async () => {
    // 450 blocks (sha2-256 digests of their index): more than two of reschedule's transactions (RESCHEDULE_BATCH)
    const held = Array.from({ length: 450 }, (_, i) => CID.createV1(raw.code, Digest.create(0x12, new Uint8Array(32).map((_, j) => j === 0 ? i >> 8 : j === 1 ? i & 255 : 7))).toString())
    await ledger.create(pinRecord('1', A), undefined, [A, ...held])
    await ledger.create(pinRecord('2', B), undefined, [B])
    const keys = [...ledger.provides.due('blocks', Date.now() + 1000)]
    expect(keys.length).toBe(452)
    const later = Date.now() + 60_000
    // B's pin goes before its key is rescheduled: it stays out of the schedule
    await ledger.remove('2', 'unpinned')
    const transaction = env.transaction
    let commits = 0
    env.transaction = async (fn) => { commits++; return await transaction(fn) }
    try {
      await ledger.provides.reschedule('blocks', keys.map(k => ({ kad: k.kad, due: later, at: Date.now() })))
    } finally {
      env.transaction = transaction
    }
    // 452 updates in transactions of at most 200 (each dirtied page is kept by LMDB for the environment's life: LedgerEnv.transaction)
    expect(commits).toBe(3)
    expect(ledger.provides.countDue('blocks', Date.now())).toBe(0)
    expect(ledger.provides.countDue('blocks', later)).toBe(451)
    expect(blocks()).toBe(451)
  })

  it('is built for a ledger written before it existed', async () => {
    await ledger.create(pinRecord('1', A), undefined, [A, B])
    // as an older ledger would be: the pins and block references without the schedule
    await env.transaction(() => {
      for (const name of ['provide-roots', 'provide-blocks', 'provide-roots-due', 'provide-blocks-due']) env.db(name, { keyEncoding: 'binary' }).clearSync()
      env.setUpgraded('index:provide-keys', false)
    })
    expect(roots()).toBe(0)
    await new PinLedger(env).upgrade()
    expect([roots(), blocks()]).toEqual([1, 2])
  })
})
