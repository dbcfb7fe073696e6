/**
 * ServableMemo (the ledger's answers remembered until a commit could change
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
import type { ServableIndex } from '../../../src/service/serving/servable-blocks.js'
import { ServableMemo } from '../../../src/service/serving/servable-memo.js'
import { closeTestLedgers, openTestLedger } from '../../helpers/ledger.js'
import { randomPinWrites } from '../../helpers/ledger-writes.js'
import { random } from '../../helpers/random.js'
import { pinRecord } from '../../helpers/records.js'

const GRACE_MS = 60_000
const DAY = 86_400_000

afterEach(closeTestLedgers)

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

function expectSame (ledger: PinLedger, memo: ServableMemo, asked: CID[], label: string): void {
  for (const c of asked) {
    expect(memo.isPinnedBlock(c), `${label}: isPinnedBlock ${c.toString()}`).toBe(ledger.isPinnedBlock(c))
    expect(memo.hasLivePin(c), `${label}: hasLivePin ${c.toString()}`).toBe(ledger.hasLivePin(c))
  }
}

async function randomRun (seed: number): Promise<void> {
  const rnd = random(seed)
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
  const { write } = randomPinWrites(ledger, rnd, keys, { prefix: `m${seed}`, now, times: [new Date(now), new Date(now + 3 * DAY)] })

  const memo = new ServableMemo(counted(ledger), ledger)
  for (let round = 0; round < 25; round++) {
    // questions asked while writes are in flight (their "no" may predate a commit), then after them
    const burst = Array.from({ length: 1 + Math.floor(rnd() * 5) }, () => write().catch(() => {}))
    for (const c of asked) { memo.isPinnedBlock(c); memo.hasLivePin(c) }
    await Promise.all(burst)
    expectSame(ledger, memo, asked, `seed ${seed}, round ${round}`)
  }
  memo.close()
}

describe('ServableMemo', () => {
  it('answers as the ledger now, through random writes, concurrent, aborted and in flight', async () => {
    for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) await randomRun(seed)
  })

  it('asks the ledger again only once a commit could change an answer, and always whether a root is live', async () => {
    const { env } = await openTestLedger()
    const ledger = new PinLedger(env)
    const [a, b] = await cids(2) as [string, string]
    const reads = counted(ledger)
    const memo = new ServableMemo(reads, ledger)
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
    const memo = new ServableMemo(reads, ledger, 4)
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
