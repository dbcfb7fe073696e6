/**
 * ServableBlocks answers from memory what the LMDB ledger answers
 * (isPinnedBlock, hasLivePin), through random sequences of the ledger's
 * writes, some run concurrently and some aborted, with a load that reads
 * while writes go on; and a component loaded afresh at the end answers as
 * the one kept current by the ledger's committed changes.
 */
import { base58btc } from 'multiformats/bases/base58'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { identity } from 'multiformats/hashes/identity'
import { afterEach, describe, expect, it } from 'vitest'
import { PinLedger } from '../../../src/ledger/lmdb/pins.js'
import { codecAndMultihash, partsOf } from '../../../src/service/serving/cid-set.js'
import { ServableBlocks } from '../../../src/service/serving/servable-blocks.js'
import { closeTestLedgers, openTestLedger } from '../../helpers/ledger.js'
import { randomPinWrites } from '../../helpers/ledger-writes.js'
import { random } from '../../helpers/random.js'
import { pinRecord } from '../../helpers/records.js'

const GRACE_MS = 60_000
const DAY = 86_400_000

afterEach(closeTestLedgers)

/** CIDs of several codecs and hash functions, each also as CIDv0 where there is one, and an identity CID */
async function universe (n: number): Promise<{ keys: string[], asked: CID[] }> {
  const keys: string[] = []
  for (let i = 0; i < n; i++) {
    const digest = await sha256.digest(new TextEncoder().encode(`block ${i}`))
    keys.push(CID.createV1([0x55, 0x70, 0x71][i % 3] as number, digest).toString())
  }
  keys.push(CID.createV1(0x55, identity.digest(new TextEncoder().encode('inline'))).toString())
  const asked = keys.map(k => CID.parse(k))
  // the same multihash under another codec is another block; v0 of a dag-pb block is the same one
  for (const c of [...asked]) {
    asked.push(CID.createV1(c.code === 0x55 ? 0x70 : 0x55, c.multihash))
    if (c.code === 0x70) asked.push(c.toV0())
  }
  return { keys, asked }
}

function expectSame (ledger: PinLedger, servable: ServableBlocks, asked: CID[], times: Date[], label: string): void {
  for (const c of asked) {
    expect(servable.isPinnedBlock(c), `${label}: isPinnedBlock ${c.toString()}`).toBe(ledger.isPinnedBlock(c))
    for (const now of times) expect(servable.hasLivePin(c, now), `${label}: hasLivePin ${c.toString()} at ${now.toISOString()}`).toBe(ledger.hasLivePin(c, now))
  }
}

async function randomRun (seed: number): Promise<void> {
  const rnd = random(seed)
  const { env } = await openTestLedger()
  const ledger = new PinLedger(env, { graceMs: GRACE_MS })
  const { keys, asked } = await universe(14)
  const now = Date.now()
  const times = [new Date(now), new Date(now + DAY), new Date(now + 3 * DAY + GRACE_MS / 2), new Date(now + 10 * DAY)]
  const { write } = randomPinWrites(ledger, rnd, keys, { prefix: `r${seed}`, now, times })

  // the ledger read in batches of 2, writes committing between them: the load misses some, reads others half-way
  const between = async (): Promise<void> => { await Promise.all(Array.from({ length: 3 }, async () => await write().catch(() => {}))) }
  const source = {
    graceMs: ledger.graceMs,
    watchCommitted: ledger.watchCommitted.bind(ledger),
    committed: ledger.committed.bind(ledger),
    referencedBatches: async function * (_batch: number) { for await (const b of ledger.referencedBatches(2)) { yield b; await between() } },
    livePinBatches: async function * (_batch: number) { for await (const b of ledger.livePinBatches(2)) { yield b; await between() } }
  }
  for (let i = 0; i < 20; i++) await write().catch(() => {})
  // writes begun before the component watches, committed while it loads
  const before = Array.from({ length: 10 }, async () => await write().catch(() => {}))
  const kept = new ServableBlocks(source)
  await kept.load()
  await Promise.all(before)
  expectSame(ledger, kept, asked, times, `seed ${seed}, after the load`)
  for (let round = 0; round < 12; round++) {
    // sequential writes, then a burst run concurrently (lmdb commits them in one batch)
    for (let i = 0; i < 4; i++) await write().catch(() => {})
    await Promise.all(Array.from({ length: 6 }, () => write().catch(() => {})))
    expectSame(ledger, kept, asked, times, `seed ${seed}, round ${round}`)
  }
  const loaded = new ServableBlocks(ledger)
  await loaded.load()
  expectSame(ledger, loaded, asked, times, `seed ${seed}, loaded afresh`)
  expect(loaded.blocks).toBe(kept.blocks)
  kept.close()
  loaded.close()
}

describe('ServableBlocks', () => {
  it('reads a CID string\'s codec and multihash as CID.parse does', async () => {
    const { keys } = await universe(6)
    const more = [...keys, CID.parse(keys[1] as string).toV1().toString(base58btc), 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', CID.createV1(0x0129, identity.digest(new Uint8Array(40))).toString()]
    for (const k of more) {
      const c = CID.parse(k, k.startsWith('z') ? base58btc : undefined)
      const p = partsOf(k)
      expect([p.codec, p.hash, [...p.digest], [...p.multihash]], k).toEqual([c.code, c.multihash.code, [...c.multihash.digest], [...c.multihash.bytes]])
      expect(codecAndMultihash(k), k).toBe(codecAndMultihash(c.toV1()))
      expect(codecAndMultihash(c), k).toBe(codecAndMultihash(c.toV1().toString()))
    }
  })

  it('answers as the ledger through random writes, concurrent and aborted ones included, and as a fresh load', async () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) await randomRun(seed)
  })

  it('a reload catches up with changes its feed lost', async () => {
    const { env } = await openTestLedger()
    const ledger = new PinLedger(env)
    const { keys } = await universe(2)
    const [a, b] = keys as [string, string]
    // a feed that loses every change: only the reload brings them in
    const lossy = { graceMs: 0, watchCommitted: () => () => {}, committed: ledger.committed.bind(ledger), referencedBatches: ledger.referencedBatches.bind(ledger), livePinBatches: ledger.livePinBatches.bind(ledger) }
    const servable = new ServableBlocks(lossy, { reloadEveryMs: 60_000 })
    await ledger.create(pinRecord('one', a, { status: 'pinned' }), undefined, [a])
    await servable.load()
    await ledger.create(pinRecord('two', b, { status: 'pinned' }), undefined, [b])
    await ledger.remove('one', 'unpinned')
    expect([servable.isPinnedBlock(CID.parse(a)), servable.isPinnedBlock(CID.parse(b)), servable.hasLivePin(CID.parse(b))]).toEqual([true, false, false])
    await servable.reload()
    expect([servable.isPinnedBlock(CID.parse(a)), servable.isPinnedBlock(CID.parse(b)), servable.hasLivePin(CID.parse(b))]).toEqual([false, true, true])
    servable.close()
  })

  it('answers nothing before its load, and an aborted write changes nothing it answers', async () => {
    const { env } = await openTestLedger()
    const ledger = new PinLedger(env)
    const { keys } = await universe(3)
    const [a, b] = keys as [string, string]
    await ledger.create(pinRecord('one', a, { status: 'pinned' }), undefined, [a])
    const servable = new ServableBlocks(ledger)
    expect(servable.isPinnedBlock(CID.parse(a))).toBe(false)
    await servable.load()
    expect(servable.isPinnedBlock(CID.parse(a))).toBe(true)
    expect(servable.hasLivePin(CID.parse(a))).toBe(true)
    const p = pinRecord('two', b, { status: 'pinned' })
    await expect(ledger.importBatch([{ pin: p, blocks: [b] }, { pin: p, blocks: [b] }], [])).rejects.toThrow(/exists already/)
    expect(ledger.isPinnedBlock(b)).toBe(false)
    expect(servable.isPinnedBlock(CID.parse(b))).toBe(false)
    expect(servable.hasLivePin(CID.parse(b))).toBe(false)
    await ledger.remove('one', 'unpinned')
    expect(servable.isPinnedBlock(CID.parse(a))).toBe(false)
    expect(servable.hasLivePin(CID.parse(a))).toBe(false)
    servable.close()
  })
})
