/**
 * UnservedMemo (the ledger's answers remembered until a commit could change
 * them) answers as the LMDB ledger does, now, through random sequences of the
 * ledger's writes, some run concurrently, some aborted, and questions asked
 * while writes are in flight; it asks the ledger again only after such a
 * commit, and always for a live root (time ends a pin); it stays within its
 * bound.
 */
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { afterEach, describe, expect, it } from 'vitest'
import { PinLedger } from '../../../src/ledger/lmdb/pins.js'
import type { PinRecord } from '../../../src/ledger/records.js'
import type { ServableIndex } from '../../../src/service/serving/servable-blocks.js'
import { UnservedMemo } from '../../../src/service/serving/unserved-memo.js'
import { closeTestLedgers, openTestLedger } from '../../helpers/ledger.js'
import { pinRecord } from '../../helpers/records.js'

const GRACE_MS = 60_000
const DAY = 86_400_000

afterEach(closeTestLedgers)

/** a deterministic generator (mulberry32): a failing seed runs again the same */
function random (seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

async function cids (n: number): Promise<string[]> {
  const out: string[] = []
  for (let i = 0; i < n; i++) out.push(CID.createV1([0x55, 0x70][i % 2] as number, await sha256.digest(new TextEncoder().encode(`memo ${i}`))).toString())
  return out
}

/** the ledger's two answers, with the questions that reached it counted */
function counted (ledger: PinLedger): ServableIndex & { reads: number } {
  const c = {
    reads: 0,
    isPinnedBlock: (cid: CID) => { c.reads++; return ledger.isPinnedBlock(cid) },
    hasLivePin: (cid: CID, now?: Date) => { c.reads++; return ledger.hasLivePin(cid, now) }
  }
  return c
}

function expectSame (ledger: PinLedger, memo: UnservedMemo, asked: CID[], label: string): void {
  for (const c of asked) {
    expect(memo.isPinnedBlock(c), `${label}: isPinnedBlock ${c.toString()}`).toBe(ledger.isPinnedBlock(c))
    expect(memo.hasLivePin(c), `${label}: hasLivePin ${c.toString()}`).toBe(ledger.hasLivePin(c))
  }
}

async function randomRun (seed: number): Promise<void> {
  const rnd = random(seed)
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)] as T
  const { env } = await openTestLedger()
  const ledger = new PinLedger(env, { graceMs: GRACE_MS })
  const keys = await cids(12)
  // each also as the other codec (another block) and, for dag-pb, as CIDv0 (the same block)
  const asked = keys.map(k => CID.parse(k))
  for (const c of [...asked]) {
    asked.push(CID.createV1(c.code === 0x55 ? 0x70 : 0x55, c.multihash))
    if (c.code === 0x70) asked.push(c.toV0())
  }
  const now = Date.now()
  const ids: string[] = []
  let n = 0
  const blocksOf = (): string[] => Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(keys))
  const until = (): string => new Date(now + pick([-DAY, 2 * DAY, 5 * DAY])).toISOString()
  const fresh = (extra: Partial<PinRecord> = {}): PinRecord => {
    const id = `m${seed}-${n++}`
    ids.push(id)
    return pinRecord(id, pick(keys), { status: pick(['pinned', 'queued', 'pinning', 'failed'] as const), owner: '0xa', pinnedUntil: until(), ...extra })
  }
  const write = (): Promise<unknown> => {
    const r = rnd()
    const id = ids.length > 0 ? pick(ids) : undefined
    if (id == null || r < 0.3) {
      const p = fresh()
      return ledger.create(p, undefined, p.status === 'pinned' ? blocksOf() : [])
    }
    if (r < 0.4) return ledger.create(fresh({ status: pick(['queued', 'pinned'] as const), replaces: id }), undefined, blocksOf())
    if (r < 0.55) return ledger.finishFetch(id, blocksOf(), 100, 'pinned')
    if (r < 0.65) return ledger.remove(id, pick(['unpinned', 'expired'] as const))
    if (r < 0.7) return ledger.takeDown(id, 'court order')
    if (r < 0.8) return ledger.update(id, (p) => ({ ...p, status: pick(['pinned', 'queued'] as const), pinnedUntil: until() }))
    if (r < 0.9) return ledger.renew(id, 1, undefined, () => new Date(until()))
    // aborted after writing a pin with blocks
    const p = fresh({ status: 'pinned' })
    return ledger.importBatch([{ pin: p, blocks: blocksOf() }, { pin: { ...p }, blocks: blocksOf() }], [])
  }

  const memo = new UnservedMemo(counted(ledger), ledger)
  for (let round = 0; round < 25; round++) {
    // questions asked while writes are in flight (their "no" may predate a commit), then after them
    const burst = Array.from({ length: 1 + Math.floor(rnd() * 5) }, () => write().catch(() => {}))
    for (const c of asked) { memo.isPinnedBlock(c); memo.hasLivePin(c) }
    await Promise.all(burst)
    expectSame(ledger, memo, asked, `seed ${seed}, round ${round}`)
  }
  memo.close()
}

describe('UnservedMemo', () => {
  it('answers as the ledger now, through random writes, concurrent, aborted and in flight', async () => {
    for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) await randomRun(seed)
  })

  it('asks the ledger again only once a commit could change an answer, and always whether a root is live', async () => {
    const { env } = await openTestLedger()
    const ledger = new PinLedger(env)
    const [a, b] = await cids(2) as [string, string]
    const reads = counted(ledger)
    const memo = new UnservedMemo(reads, ledger)
    const A = CID.parse(a)
    expect([memo.isPinnedBlock(A), memo.hasLivePin(A)]).toEqual([false, false])
    expect(reads.reads).toBe(2)
    // the same CID again, as another object: from memory
    expect([memo.isPinnedBlock(CID.parse(a)), memo.hasLivePin(CID.parse(a))]).toEqual([false, false])
    expect(reads.reads).toBe(2)
    // a write that changes no block or pin (a failed fetch of an unknown id) keeps them
    await ledger.failFetch('nobody', 'x').catch(() => {})
    memo.isPinnedBlock(A)
    expect(reads.reads).toBe(2)
    // a pin of another CID empties the memo; the pin of this one is seen at once
    await ledger.create(pinRecord('one', b, { status: 'pinned' }), undefined, [b])
    memo.isPinnedBlock(A)
    expect(reads.reads).toBe(3)
    await ledger.create(pinRecord('two', a, { status: 'pinned' }), undefined, [a])
    expect([memo.isPinnedBlock(A), memo.hasLivePin(A)]).toEqual([true, true])
    // a referenced block is remembered; a live root is asked every time, and another moment than now is never kept
    const before = reads.reads
    memo.isPinnedBlock(A)
    memo.hasLivePin(A)
    memo.hasLivePin(CID.parse(b), new Date(Date.now() + 400 * DAY))
    memo.hasLivePin(CID.parse(b), new Date(Date.now() + 400 * DAY))
    expect(reads.reads).toBe(before + 3)
    // the pin's removal releases the block: seen at once
    await ledger.remove('two', 'unpinned')
    expect([memo.isPinnedBlock(A), memo.hasLivePin(A)]).toEqual([false, false])
    memo.close()
  })

  it('keeps at most its bound, the oldest dropped first', async () => {
    const { env } = await openTestLedger()
    const ledger = new PinLedger(env)
    const keys = await cids(10)
    const reads = counted(ledger)
    const memo = new UnservedMemo(reads, ledger, 4)
    for (const k of keys) memo.isPinnedBlock(CID.parse(k))
    expect(memo.size).toBe(4)
    const r = reads.reads
    memo.isPinnedBlock(CID.parse(keys[9] as string))
    expect(reads.reads).toBe(r)
    memo.isPinnedBlock(CID.parse(keys[0] as string))
    expect(reads.reads).toBe(r + 1)
    memo.close()
  })
})
