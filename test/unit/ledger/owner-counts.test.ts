/**
 * GET /pins' count without filters is kept, not read (PinLedger.ownerCount):
 * per owner and status, changed in the transaction of every write of a pin,
 * with the pins past their pinned_until that the sweeper has not removed yet
 * taken off at read time. After any sequence of writes it equals the count
 * of a scan of the owner's index (a fixed seed: the same sequence each run),
 * at every time and grace. A ledger of an earlier pind, without counts,
 * lists by scanning until its upgrade has built them, also when the upgrade
 * stops midway and writes come in between.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { isoMicros } from '../../../src/ledger/clock.js'
import type { LedgerEnv } from '../../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../../src/ledger/lmdb/pins.js'
import type { PinRecord, PinState } from '../../../src/ledger/records.js'
import { listPins } from '../../../src/ledger/lmdb/listing.js'
import { matches, type PinQuery } from '../../../src/ledger/query.js'
import { parsePinQuery } from '../../../src/service/pins/pin-query.js'
import { closeTestLedgers, openTestLedger } from '../../helpers/ledger.js'
import { pinRecord } from '../../helpers/records.js'
import { random } from '../../helpers/random.js'

afterEach(async () => { await closeTestLedgers() })

const CIDS = [
  'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy',
  'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba',
  'QmPZ9gcCEpqKTo6aq61g2nXGUhM4iCL3ewB6LDXZCtioEB'
]
const OWNERS = ['0x' + 'a1'.repeat(20), '0x' + 'b2'.repeat(20), '0x' + 'c3'.repeat(20)]
const STATUSES: PinState[] = ['queued', 'pinning', 'pinned', 'failed']
const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const STATUS_SETS: PinState[][] = [['pinned'], ['queued', 'pinning'], ['failed'], ['pinned', 'failed'], STATUSES]


/** what a scan of the owner's index counts (what listPins counted before the counts were kept); created strictly between `afterUs` and `beforeUs` */
function scanned (ledger: PinLedger, owner: string, statuses: PinState[], now: number, beforeUs?: number, afterUs?: number): number {
  const q: PinQuery = { match: 'exact', statuses: new Set(statuses), limit: 10 }
  return [...ledger.summariesByOwner(owner, beforeUs, afterUs)].filter(s => matches(s, q, now, ledger.graceMs)).length
}

/**
 * the kept count equals the scan's for every owner, status set, grace and time in `times`, and in each
 * window of `windows` (before, after: created strictly between) that is longer than two of its spans
 */
function expectCountsAsScanned (env: LedgerEnv, times: number[], at: string, windows: Array<[number | undefined, number | undefined]> = []): number {
  let windowed = 0
  for (const graceMs of [0, HOUR]) {
    const ledger = new PinLedger(env, { graceMs })
    for (const owner of OWNERS) {
      for (const statuses of STATUS_SETS) {
        for (const now of times) {
          expect(ledger.ownerCount(owner, new Set(statuses), now), `${at}: ${owner} ${statuses.join(',')} grace ${graceMs} at ${now}`).toBe(scanned(ledger, owner, statuses, now))
          for (const [beforeUs, afterUs] of windows) {
            const kept = ledger.ownerCount(owner, new Set(statuses), now, beforeUs, afterUs)
            if (kept === undefined) continue
            windowed++
            expect(kept, `${at}: ${owner} ${statuses.join(',')} grace ${graceMs} at ${now}, before ${beforeUs} after ${afterUs}`).toBe(scanned(ledger, owner, statuses, now, beforeUs, afterUs))
          }
        }
      }
    }
  }
  return windowed
}

/** listPins answers as filtering every summary of the owner does (count and page) */
function expectListedAsScanned (ledger: PinLedger, owner: string, query: string, now: Date): void {
  const q = parsePinQuery(new URLSearchParams(query))
  const all = [...ledger.summariesByOwner(owner, q.beforeUs, q.afterUs)].filter(s => matches(s, q, now.getTime(), ledger.graceMs))
  const got = listPins(ledger, owner, q, now)
  expect(got.count, query).toBe(all.length)
  expect(got.results.map(p => p.requestid), query).toEqual(all.slice(0, q.limit).map(s => s.id))
}

const QUERIES = ['', 'limit=3', 'status=queued,pinning', 'status=failed,pinned&limit=1000', 'status=queued,pinning,pinned,failed&limit=7']

describe('per-owner counts', () => {
  it('equal a scan of the owner\'s index after random writes: create, replace, update, renew, fail, finish, remove, expire, take down, archive, import', async () => {
    const { env, ledger } = await openTestLedger()
    const rnd = random(34)
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T
    // pinned_until: long past, past but within an hour's grace, soon, later, far off
    const untils = (): string => new Date(Date.now() + pick([-2 * DAY, -30 * MIN, 30 * MIN, 2 * DAY, 400 * DAY])).toISOString()
    let n = 0
    const nextId = (): string => `019ab3f1-2c4d-7e8f-9a0b-${String(++n).padStart(12, '0')}`
    // created ~17 minutes apart from 5 days ago on, a few pins in each span of the counts by creation (2^32 µs)
    const startUs = (Date.now() - 5 * DAY) * 1000
    const createdAt = (): Partial<PinRecord> => {
      const us = startUs + (n + 1) * 1_000_000_000 + Math.floor(rnd() * 1_000_000)
      return { created: isoMicros(us), createdUs: us }
    }
    const fresh = (owner: string, extra: Partial<PinRecord> = {}): PinRecord => pinRecord(nextId(), pick(CIDS), { owner, status: pick(STATUSES), pinnedUntil: untils(), ...createdAt(), ...extra })
    /** windows of creation (before, after) from pins' created, as paging asks */
    const windows = (): Array<[number | undefined, number | undefined]> => {
      const us = (): number => startUs + Math.floor(rnd() * (n + 2) * 1_000_000_000)
      return [[us(), undefined], [undefined, us()], [us(), us()], [startUs + n * 1_000_000_000, startUs + 1_000_000_000], [undefined, undefined]]
    }
    let windowed = 0
    /** a pin of `owner` not removed, if it has one */
    const live = (owner: string): string | undefined => {
      const ids = [...ledger.summariesByOwner(owner)].map(s => s.id)
      return ids.length === 0 ? undefined : pick(ids)
    }
    const ops = ['create', 'create', 'create', 'replace', 'update', 'renew', 'fail', 'finish', 'unpin', 'expire', 'takedown', 'archive', 'import'] as const
    const done: Record<string, number> = {}
    for (let step = 0; step < 400; step++) {
      const owner = pick(OWNERS)
      const op = pick(ops)
      const id = live(owner)
      switch (op) {
        case 'create': await ledger.create(fresh(owner)); break
        case 'replace': if (id != null) await ledger.create(fresh(owner, { replaces: id })); break
        case 'update': if (id != null) await ledger.update(id, p => ({ ...p, status: pick(STATUSES), pinnedUntil: untils() })); break
        case 'renew': if (id != null) await ledger.renew(id, 1, undefined, () => new Date(untils())); break
        case 'fail': if (id != null) await ledger.failFetch(id, 'gave up'); break
        case 'finish': if (id != null) await ledger.finishFetch(id, [], 10, 'pinned'); break
        case 'unpin': if (id != null) await ledger.remove(id, 'unpinned'); break
        case 'expire': if (id != null) await ledger.remove(id, 'expired'); break
        case 'takedown': if (id != null) await ledger.takeDown(id, 'reported'); break
        case 'archive': await ledger.archiveDue(new Date(Date.now() + DAY)); break
        case 'import': {
          const removed = fresh(owner)
          await ledger.importBatch([{ pin: fresh(owner) }, { pin: fresh(pick(OWNERS)) }, { pin: { ...removed, removed: { at: new Date().toISOString(), why: 'unpinned' } } }], [])
          break
        }
      }
      done[op] = (done[op] ?? 0) + 1
      if (step % 25 === 24) {
        const now = Date.now()
        windowed += expectCountsAsScanned(env, [now, now + 45 * MIN, now + 3 * DAY, now + 500 * DAY], `step ${step}`, windows())
      }
    }
    // every kind of write ran, and the owners hold pins of every kind
    for (const op of ops) expect(done[op], op).toBeGreaterThan(5)
    const now = Date.now()
    windowed += expectCountsAsScanned(env, [now - DAY, now, now + 31 * MIN, now + 45 * MIN, now + 3 * DAY, now + 500 * DAY], 'end', [...windows(), ...windows()])
    // the counts by creation answered most windows (the others are within two spans)
    expect(windowed).toBeGreaterThan(1000)
    const time = (us: number): string => encodeURIComponent(isoMicros(us))
    for (const owner of OWNERS) {
      expect(scanned(ledger, owner, STATUSES, now)).toBeGreaterThan(10)
      const paging = [...windows(), ...windows()].flatMap(([b, a]) => [`${b != null ? `before=${time(b)}` : ''}${a != null ? `&after=${time(a)}` : ''}`, `status=queued,pinning,failed&limit=2${b != null ? `&before=${time(b)}` : ''}`])
      for (const query of [...QUERIES, ...paging]) expectListedAsScanned(ledger, owner, query, new Date(now))
      for (const query of [...QUERIES, ...paging]) expectListedAsScanned(new PinLedger(env, { graceMs: HOUR }), owner, query, new Date(now + 45 * MIN))
    }
  })

  it('the upgrade builds the counts of many small owners, several in a transaction, each once', async () => {
    const { env, ledger } = await openTestLedger({ upgrade: true })
    let n = 0
    const owners = Array.from({ length: 250 }, (_, j) => `0x${j.toString(16).padStart(40, '0')}`)
    for (let i = 0; i < 10; i++) {
      await ledger.importBatch(owners.slice(i * 25, i * 25 + 25).flatMap(owner => Array.from({ length: 8 }, (_, k) => ({ pin: pinRecord(`019ab3f1-2c4d-7e8f-9a0b-${String(++n).padStart(12, '0')}`, CIDS[k % 3] as string, { owner, status: STATUSES[k % 4], pinnedUntil: new Date(Date.now() + (k % 3 === 0 ? -DAY : DAY)).toISOString() }) }))), [])
    }
    await env.transaction(() => {
      for (const name of ['pins-owner-counts', 'pins-owner-buckets', 'pins-owner-expiry']) {
        const db = env.db<unknown>(name)
        for (const key of [...db.getKeys()]) db.remove(key)
      }
      env.setUpgraded('index:owner-counts', false)
    })
    const seen: number[] = []
    const l = new PinLedger(env)
    expect(await l.upgradeLater((p) => { if (p.upgrade === 'index:owner-counts') seen.push(p.records) })).toBe(true)
    // 2,000 entries read once each (an owner done twice would read more)
    expect(seen).toEqual([0, 1000, 2000])
    const now = Date.now()
    for (const owner of owners) {
      for (const statuses of STATUS_SETS) expect(l.ownerCount(owner, new Set(statuses), now)).toBe(scanned(l, owner, statuses, now))
    }
  })

  it('a ledger without counts lists by scanning until its upgrade builds them, stopped midway with writes in between', async () => {
    const { env, ledger } = await openTestLedger({ upgrade: true })
    let n = 0
    const nextId = (): string => `019ab3f1-2c4d-7e8f-9a0b-${String(++n).padStart(12, '0')}`
    const ids: Record<string, string[]> = {}
    // 4 owners × 600 pins, of every status, some past their pinned_until
    const owners = [...OWNERS, '0x' + 'd4'.repeat(20)]
    for (const owner of owners) {
      const pins = Array.from({ length: 600 }, (_, i) => pinRecord(nextId(), CIDS[i % 3] as string, { owner, status: STATUSES[i % 4], pinnedUntil: new Date(Date.now() + (i % 5 === 0 ? -DAY : DAY)).toISOString() }))
      ids[owner] = pins.map(p => p.requestid)
      await ledger.importBatch(pins.map(pin => ({ pin })), [])
    }
    // as an earlier pind left it: no counts, the step to do; owner summaries in the layout before (maps)
    await env.transaction(() => {
      for (const name of ['pins-owner-counts', 'pins-owner-buckets', 'pins-owner-expiry']) {
        const db = env.db<unknown>(name)
        for (const key of [...db.getKeys()]) db.remove(key)
      }
      const byOwner = env.db<unknown>('pins-by-owner')
      for (const { key, value } of [...ledger.summariesByOwner(owners[0] as string)].map(s => ({ key: [owners[0], ledger.get(s.id)?.createdUs, s.id], value: s }))) byOwner.put(key, value)
      env.setUpgraded('index:owner-counts', false)
    })
    const now = new Date()
    const all = (l: PinLedger): void => { for (const owner of owners) for (const query of QUERIES) expectListedAsScanned(l, owner, query, now) }
    const before = new PinLedger(env)
    expect(before.ownerCount(owners[0] as string, new Set(['pinned']), now.getTime())).toBeUndefined()
    all(before)

    // the upgrade, halted after its first 1,000 pins (the first two owners, each whole in its transaction)
    const first = new PinLedger(env)
    expect(await first.upgradeLater((p) => { if (p.upgrade === 'index:owner-counts' && p.records >= 1000) first.haltUpgrade() })).toBe(false)
    expect(env.upgraded('index:owner-counts')).toBe(false)
    expect(first.ownerCount(owners[0] as string, new Set(['pinned']), now.getTime())).toBeUndefined()
    // writes to owners whose counts are built and owners whose are not
    for (const owner of owners) {
      await first.remove(ids[owner]?.[2] as string, 'unpinned')
      await first.update(ids[owner]?.[3] as string, p => ({ ...p, status: 'pinned' }))
      await first.create(pinRecord(nextId(), CIDS[0] as string, { owner }))
      await first.create(pinRecord(nextId(), CIDS[1] as string, { owner, replaces: ids[owner]?.[6] as string }))
    }
    all(first)

    const next = new PinLedger(env)
    expect(await next.upgradeLater()).toBe(true)
    expect(env.upgraded('index:owner-counts')).toBe(true)
    for (const owner of owners) {
      for (const statuses of STATUS_SETS) expect(next.ownerCount(owner, new Set(statuses), now.getTime())).toBe(scanned(next, owner, statuses, now.getTime()))
    }
    expect(next.ownerCount(owners[0] as string, new Set(['pinned']), now.getTime())).toBe(120 - 1 + 1 + 1) // 150 pinned, 30 of them past; one unpinned, one failed made pinned, one created, one replaced
    all(next)
    all(new PinLedger(env))
  })
})
