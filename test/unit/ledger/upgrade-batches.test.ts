/**
 * The upgrades that build an index over every pin (real LMDB) commit in
 * transactions of at most 1,000 pins (LMDB keeps every page a transaction
 * dirtied for the environment's life: LedgerEnv.transaction), and build what
 * the pins' own writes had built. index:provide-keys counts the pins holding
 * each key, so it must not do a pin twice: cut short, it goes on after its
 * last committed batch; the other two redo their idempotent puts from the
 * start. repair:replacement-chains, which releases the block lists older
 * versions leaked, also goes in batches and on after its last one, and
 * releases no list twice.
 */
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import * as Digest from 'multiformats/hashes/digest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Upgrade } from '../../../src/ledger/lmdb/open.js'
import { PinLedger, type UpgradeProgress } from '../../../src/ledger/lmdb/pins.js'
import type { PinRecord } from '../../../src/ledger/records.js'
import { closeTestLedgers, openTestLedger, type TestLedger } from '../../helpers/ledger.js'
import { pinRecord } from '../../helpers/records.js'

afterAll(closeTestLedgers)

/** more than two batches of live pins (every tenth is removed) */
const PINS = 2_400
const SHARED = 5
const INDEX_STEPS = ['index:owner-summaries', 'index:pins-by-expiry', 'index:provide-keys'] as const
type IndexStep = typeof INDEX_STEPS[number]
const DBS: Record<IndexStep, string[]> = {
  'index:owner-summaries': ['pins-by-owner'],
  'index:pins-by-expiry': ['pins-by-expiry'],
  'index:provide-keys': ['provide-roots', 'provide-blocks', 'provide-roots-due', 'provide-blocks-due']
}
const binary = (name: string): { keyEncoding?: 'binary' } => name.startsWith('provide-') ? { keyEncoding: 'binary' } : {}

/** a raw block CID of its own for each (i, salt) */
const blockCid = (i: number, salt: number): string =>
  CID.createV1(raw.code, Digest.create(0x12, new Uint8Array(32).map((_, j) => j === 0 ? i >> 8 : j === 1 ? i & 255 : j === 2 ? salt : 7))).toString()
const requestid = (i: number): string => `019ab3f1-2c4d-7e8f-9a0b-${String(i).padStart(12, '0')}`

/**
 * PINS pins of three owners, each holding its root, a block of its own and
 * one of SHARED blocks every fifth pin holds too (keys held by many pins);
 * every tenth removed (out of every index, its keys released).
 */
async function ledgerOfPins (): Promise<TestLedger> {
  const t = await openTestLedger({ prefix: 'pind-upgrade-batches-', upgrade: true })
  await Promise.all(Array.from({ length: PINS }, async (_, i) => {
    await t.ledger.create(pinRecord(requestid(i), blockCid(i, 1), { owner: `0xowner${i % 3}` }), undefined, [blockCid(i, 1), blockCid(i, 2), blockCid(i % SHARED, 3)])
  }))
  await Promise.all(Array.from({ length: PINS / 10 }, async (_, i) => { await t.ledger.remove(requestid(i * 10), 'unpinned') }))
  return t
}

/** what the step's databases hold; of a provide key, its multihash and how many pins hold it, and how many due entries there are (the times are when it was held) */
function indexOf (t: TestLedger, step: IndexStep): unknown {
  return DBS[step].map(name => {
    const entries = [...t.env.db<unknown>(name, binary(name)).getRange()]
    if (name.endsWith('-due')) return entries.length
    if (name.startsWith('provide-')) return entries.map(({ key, value }) => { const { mh, n } = value as { mh: Uint8Array, n: number }; return [key, mh, n] })
    return entries.map(({ key, value }) => [key, value])
  })
}

/** the ledger as an older pind left it: the step's databases empty, the step not run */
async function notYetUpgraded (t: TestLedger, step: IndexStep): Promise<void> {
  await t.env.transaction(() => {
    for (const name of DBS[step]) t.env.db(name, binary(name)).clearSync()
    t.env.setUpgraded(step, false)
  })
  for (const name of DBS[step]) expect(t.env.db(name, binary(name)).getCount()).toBe(0)
}

class Crash extends Error {}

/** runs the upgrade of a fresh PinLedger (as the next start would), counting its transactions; the `crashAt`th throws before it runs, as if the process died there */
async function upgrade (t: TestLedger, o: { crashAt?: number, ledger?: PinLedger, onProgress?: (p: UpgradeProgress) => void } = {}): Promise<number> {
  const transaction = t.env.transaction
  let commits = 0
  t.env.transaction = async (fn) => {
    if (++commits === o.crashAt) throw new Crash(`crashed before transaction ${commits}`)
    return await transaction(fn)
  }
  try {
    await (o.ledger ?? new PinLedger(t.env)).upgrade(o.onProgress)
  } finally {
    t.env.transaction = transaction
  }
  return commits
}

/** how many pins hold each provide key, in both sets */
function holds (t: TestLedger): number[] {
  return (['provide-roots', 'provide-blocks'] as const).flatMap(name => [...t.env.db<{ n: number }>(name, { keyEncoding: 'binary' }).getRange()].map(({ value }) => value.n))
}

describe('the index upgrades, in batches', () => {
  let t: TestLedger
  const built = new Map<IndexStep, unknown>()
  beforeAll(async () => {
    t = await ledgerOfPins()
    for (const step of INDEX_STEPS) built.set(step, indexOf(t, step))
  })

  it('the pins\' writes built the indexes the tests compare with', () => {
    const live = PINS - PINS / 10
    const [owners] = built.get('index:owner-summaries') as [unknown[]]
    const [expiries] = built.get('index:pins-by-expiry') as [unknown[]]
    const [roots, blocks, rootsDue, blocksDue] = built.get('index:provide-keys') as [Array<[Buffer, Uint8Array, number]>, Array<[Buffer, Uint8Array, number]>, number, number]
    expect([owners.length, expiries.length]).toEqual([live, live])
    expect([roots.length, rootsDue]).toEqual([live, live])
    // each live pin's root and own block, and the SHARED blocks (each held by a fifth of the pins)
    expect([blocks.length, blocksDue]).toEqual([2 * live + SHARED, 2 * live + SHARED])
    expect(blocks.reduce((sum, [, , n]) => sum + n, 0)).toBe(3 * live)
  })

  it.each(INDEX_STEPS)('%s: in transactions of at most 1,000 pins, the index the pins\' writes built', async (step) => {
    await notYetUpgraded(t, step)
    const seen: UpgradeProgress[] = []
    const commits = await upgrade(t, { onProgress: p => { seen.push(p) } })
    // 2,400 pins (2,160 holding blocks): batches of 1,000, 1,000, and the rest, then the mark that the step is done (one transaction on the old code)
    expect(commits).toBe(4)
    expect(indexOf(t, step)).toEqual(built.get(step))
    expect(seen.map(p => p.upgrade)).toEqual([step, step, step])
    expect(seen.map(p => p.records)).toEqual([0, 1000, 2000])
    expect(await upgrade(t)).toBe(0)
  })

  it.each(['index:owner-summaries', 'index:pins-by-expiry'] as const)('%s, cut short after two batches, is done again from the start (its puts are idempotent)', async (step) => {
    await notYetUpgraded(t, step)
    await expect(upgrade(t, { crashAt: 3 })).rejects.toThrow(Crash)
    expect(t.env.upgraded(step)).toBe(false)
    expect(await upgrade(t)).toBe(4)
    expect(indexOf(t, step)).toEqual(built.get(step))
  })
})

describe('index:provide-keys, cut short', () => {
  /** the keys every pin holds, once each (the ledger's own writes built them); the step undone */
  async function interrupted (): Promise<{ t: TestLedger, built: unknown, held: number[] }> {
    const t = await ledgerOfPins()
    const built = indexOf(t, 'index:provide-keys')
    const held = holds(t)
    await notYetUpgraded(t, 'index:provide-keys')
    return { t, built, held }
  }

  /** every live pin released: no key may be left held (a key held twice would stay) */
  async function releaseAll (t: TestLedger): Promise<void> {
    await Promise.all(Array.from({ length: PINS }, async (_, i) => { await t.ledger.remove(requestid(i), 'unpinned') }))
    expect(holds(t)).toEqual([])
    expect([t.ledger.provides.count('roots'), t.ledger.provides.count('blocks')]).toEqual([0, 0])
  }

  it('by a crash between batches: the next start goes on after the last batch committed, holding no pin\'s keys twice', async () => {
    const { t, built, held } = await interrupted()
    // two batches commit, the process dies before the third
    await expect(upgrade(t, { crashAt: 3 })).rejects.toThrow(Crash)
    expect(t.env.upgraded('index:provide-keys')).toBe(false)
    // the last 160 pins holding blocks, and the mark
    expect(await upgrade(t)).toBe(2)
    expect(indexOf(t, 'index:provide-keys')).toEqual(built)
    expect(holds(t)).toEqual(held)
    expect(t.env.fact('index:provide-keys:after')).toBeUndefined()
    await releaseAll(t)
  })

  it('by an error inside a batch: the batch is rolled back whole, and the next start does it again, holding no pin\'s keys twice', async () => {
    const { t, built, held } = await interrupted()
    const ledger = new PinLedger(t.env)
    const hold = ledger.provides.hold.bind(ledger.provides)
    let n = 0
    // in the second batch, holding the 1,500th pin's keys throws (before any of them is held)
    ledger.provides.hold = (root, blocks) => {
      if (++n === 1_500) throw new Crash('unreadable')
      hold(root, blocks)
    }
    await expect(upgrade(t, { ledger })).rejects.toThrow(Crash)
    expect(t.env.upgraded('index:provide-keys')).toBe(false)
    // the first batch stays committed, with its position
    expect(t.env.fact('index:provide-keys:after')).toBeDefined()
    // the second batch again, the third, and the mark
    expect(await upgrade(t)).toBe(3)
    expect(indexOf(t, 'index:provide-keys')).toEqual(built)
    expect(holds(t)).toEqual(held)
    await releaseAll(t)
  })
})

describe('repair:replacement-chains, in batches', () => {
  /** LISTS pins holding block lists: half still held (the other half leaked by an older pind), two batches and more of each */
  const LISTS = 2_400
  const successor = (i: number, n: number): string => `019ab3f1-2c4d-7e8f-9a0${n}-${String(i).padStart(12, '0')}`
  const removed = (why: 'replaced' | 'unpinned' | 'expired', by?: string): Partial<PinRecord> => ({ removed: { at: new Date().toISOString(), why }, ...(by != null ? { replacedBy: by } : {}) })
  /** which pins still hold their lists: a live one (i % 4 = 0), a replaced one whose replacement is still queued (2) */
  const kept = (i: number): boolean => i % 2 === 0
  const blocks = (i: number): string[] => [blockCid(i, 1), blockCid(i % SHARED, 3)]

  /**
   * As an older pind left a ledger: every pin's list held, also the lists of
   * a pin whose chain of replacements ended in a removed one (i % 4 = 1: A
   * replaced by B, queued, replaced by C, queued, unpinned) and of an expired
   * pin (3); every SHARED block is held by kept pins and by leaked ones.
   */
  async function leakedLedger (): Promise<TestLedger> {
    const t = await openTestLedger({ prefix: 'pind-upgrade-chains-', upgrade: true })
    const entries: Array<{ pin: PinRecord, blocks?: string[] }> = []
    for (let i = 0; i < LISTS; i++) {
      const root = blockCid(i, 1)
      const own = requestid(i)
      if (i % 4 === 0) {
        entries.push({ pin: pinRecord(own, root), blocks: blocks(i) })
      } else if (i % 4 === 2) {
        entries.push({ pin: pinRecord(own, root, removed('replaced', successor(i, 1))), blocks: blocks(i) })
        entries.push({ pin: pinRecord(successor(i, 1), blockCid(i, 4), { status: 'queued', replaces: own }) })
      } else if (i % 4 === 1) {
        entries.push({ pin: pinRecord(own, root, removed('replaced', successor(i, 1))), blocks: blocks(i) })
        entries.push({ pin: pinRecord(successor(i, 1), blockCid(i, 4), { status: 'queued', replaces: own, ...removed('replaced', successor(i, 2)) }) })
        entries.push({ pin: pinRecord(successor(i, 2), blockCid(i, 5), { status: 'queued', replaces: successor(i, 1), ...removed('unpinned') }) })
      } else {
        entries.push({ pin: pinRecord(own, root, removed('expired')), blocks: blocks(i) })
      }
    }
    for (let i = 0; i < entries.length; i += 500) await t.ledger.importBatch(entries.slice(i, i + 500), [])
    await t.env.transaction(() => { t.env.setUpgraded('repair:replacement-chains', false) })
    // every list is held, the leaked ones too
    expect(t.env.db('pin-blocks').getCount()).toBe(LISTS)
    expect(blockRefs(t)[blockCid(0, 3)]).toBe(LISTS / SHARED)
    return t
  }

  function blockRefs (t: TestLedger): Record<string, number> {
    return Object.fromEntries([...t.env.db<number>('block-refs').getRange()].map(({ key, value }) => [key as string, value]))
  }

  /** the block references, lists and provide keys of the kept pins alone, each once */
  function expectRepaired (t: TestLedger): void {
    const keep = Array.from({ length: LISTS }, (_, i) => i).filter(kept)
    const refs: Record<string, number> = {}
    for (const i of keep) for (const b of blocks(i)) refs[b] = (refs[b] ?? 0) + 1
    // a SHARED block: once for each kept pin holding it (240), not fewer (a leaked list released twice) nor more
    expect(Object.values(refs).filter(n => n > 1)).toEqual(Array(SHARED).fill(LISTS / 2 / SHARED))
    expect(blockRefs(t)).toEqual(refs)
    expect([...t.env.db('pin-blocks').getKeys()]).toEqual(keep.map(requestid))
    // each kept pin's root once, its own block once, each SHARED block by 240 pins
    expect(holds(t).sort((a, b) => a - b)).toEqual([...Array(LISTS / 2 * 2).fill(1), ...Array(SHARED).fill(LISTS / 2 / SHARED)])
    expect(t.env.upgraded('repair:replacement-chains')).toBe(true)
    expect(t.env.fact('repair:replacement-chains:after')).toBeUndefined()
  }

  it('releases the leaked lists, and only those, in transactions of at most 1,000 lists', async () => {
    const t = await leakedLedger()
    const seen: UpgradeProgress[] = []
    const commits = await upgrade(t, { onProgress: p => { seen.push(p) } })
    // 2,400 lists: batches of 1,000, 1,000 and 400, then the mark that the step is done (one transaction, and the mark, on the old code)
    expect(commits).toBe(4)
    expect(seen).toEqual([0, 1000, 2000].map(records => ({ upgrade: 'repair:replacement-chains', records })))
    expectRepaired(t)
    expect(await upgrade(t)).toBe(0)
    expect(await t.ledger.releaseUnheld()).toBe(0)
    expectRepaired(t)
  })

  it('by a crash between batches: the next start goes on after the last batch committed, releasing no list twice', async () => {
    const t = await leakedLedger()
    // two batches commit, the process dies before the third
    await expect(upgrade(t, { crashAt: 3 })).rejects.toThrow(Crash)
    expect(t.env.upgraded('repair:replacement-chains')).toBe(false)
    expect(t.env.fact('repair:replacement-chains:after')).toBe(requestid(1999))
    // the first two batches' leaked lists are gone, the third's not yet
    expect(t.env.db('pin-blocks').getCount()).toBe(LISTS - 1000)
    // the last 400 lists, and the mark (the 1,000 kept lists before them are not read again)
    expect(await upgrade(t)).toBe(2)
    expectRepaired(t)
  })

  it('by an error inside a batch: the batch is rolled back whole, and the next start does it again, releasing no list twice', async () => {
    const t = await leakedLedger()
    const ledger = new PinLedger(t.env)
    const internals = ledger as unknown as { releaseRefs: (id: string) => void }
    const release = internals.releaseRefs.bind(ledger)
    let n = 0
    // in the second batch, after releasing 100 of its leaked lists, the next release throws
    internals.releaseRefs = (id) => {
      if (++n === 601) throw new Crash('unwritable')
      release(id)
    }
    await expect(upgrade(t, { ledger })).rejects.toThrow(Crash)
    expect(t.env.upgraded('repair:replacement-chains')).toBe(false)
    // the first batch stays committed, with its position; none of the second's releases is
    expect(t.env.fact('repair:replacement-chains:after')).toBe(requestid(999))
    expect(t.env.db('pin-blocks').getCount()).toBe(LISTS - 500)
    // the second batch again, the third, and the mark
    expect(await upgrade(t)).toBe(3)
    expectRepaired(t)
  })

  it('once repaired after a crash, the kept pins going release every reference left (none was lost or left over)', async () => {
    const t = await leakedLedger()
    await expect(upgrade(t, { crashAt: 2 })).rejects.toThrow(Crash)
    expect(await upgrade(t)).toBe(3)
    expectRepaired(t)
    await Promise.all(Array.from({ length: LISTS }, async (_, i) => {
      if (i % 4 === 0) await t.ledger.remove(requestid(i), 'unpinned')
      // a replacement removed while queued lets go of what it replaced
      if (i % 4 === 2) await t.ledger.remove(successor(i, 1), 'unpinned')
    }))
    expect(blockRefs(t)).toEqual({})
    expect(t.env.db('pin-blocks').getCount()).toBe(0)
    expect(holds(t)).toEqual([])
  })
})
