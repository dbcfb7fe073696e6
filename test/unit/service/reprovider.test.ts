/**
 * The reprovider's schedule against the real ledger and a fake announcer that
 * counts calls: new CIDs are announced at once, batched by region; each is
 * next due at its slot, between half and one and a half intervals later; a
 * released CID is never announced again; failures are retried with backoff.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { AnnounceKey, AnnounceOutcome } from '../../../src/ipfs/routing/announcer.js'
import { bitsOf } from '../../../src/ipfs/routing/keyspace.js'
import type { Region } from '../../../src/ipfs/routing/region.js'
import { openLmdbLedger, type LmdbLedger } from '../../../src/ledger/lmdb/ledger.js'
import { kadKeyOf } from '../../../src/ledger/lmdb/provide-keys.js'
import type { PinLedger } from '../../../src/ledger/pins.js'
import { createLogger } from '../../../src/kernel/log.js'
import { Reprovider, type Announcer } from '../../../src/service/background/reprovider.js'
import { tempDir } from '../../helpers/pind.js'
import { waitFor } from '../../helpers/ports.js'
import { pinRecord } from '../../helpers/records.js'
import { CID } from 'multiformats/cid'

const CIDS = [
  'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy',
  'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba',
  'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
]
const kad = (cid: string): string => kadKeyOf(CID.parse(cid).multihash.bytes).toString('hex')

class FakeAnnouncer implements Announcer {
  k = 20
  calls: string[][] = []
  fail = false
  async region (): Promise<Region> { return { prefix: '', peers: [], lookups: 3, complete: true } }
  async single (key: AnnounceKey): Promise<Region> { return { prefix: bitsOf(key.kad, 256), peers: [], lookups: 1, complete: true } }
  async announce (_r: Region, keys: AnnounceKey[]): Promise<AnnounceOutcome> {
    this.calls.push(keys.map(k => k.kad.toString('hex')))
    return this.fail
      ? { provided: [], failed: keys, peers: 20, reachable: 0, records: 0, errors: { 'Error: unreachable': 20 } }
      : { provided: keys, failed: [], peers: 20, reachable: 20, records: keys.length * 20, errors: {} }
  }
}

let dir: string
let store: LmdbLedger
let ledger: PinLedger
let reprovider: Reprovider | undefined

beforeEach(async () => {
  dir = tempDir('pind-reprovide-')
  store = await openLmdbLedger(join(dir, 'ledger.mdb'), { graceMs: () => 0 })
  ledger = store.pins
})
afterEach(async () => {
  await reprovider?.stop()
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

const start = (announcer: Announcer, intervalMs: number): Reprovider => {
  reprovider = new Reprovider({ keys: store.provides, kind: 'roots', announcer, intervalMs, log: createLogger({ level: 'error' }) })
  reprovider.start()
  return reprovider
}

describe('Reprovider', () => {
  it('announces new CIDs at once, a region in one batch, and schedules each within 0.5–1.5 intervals', async () => {
    for (const [i, cid] of CIDS.entries()) await ledger.create(pinRecord(String(i), cid), undefined, [cid])
    const fake = new FakeAnnouncer()
    const T = 3_600_000
    const r = start(fake, T)
    await waitFor(async () => (await r.status()).providedSinceStart === 3 ? true : undefined, 'three announcements')
    expect(fake.calls).toHaveLength(1)
    expect(new Set(fake.calls[0])).toEqual(new Set(CIDS.map(kad)))
    const now = Date.now()
    for (const k of await store.provides.inRange('roots', { start: Buffer.alloc(32) })) {
      expect(k.due).toBeGreaterThanOrEqual(now + T / 2 - 1000)
      expect(k.due).toBeLessThanOrEqual(now + 1.5 * T)
      expect(k.at).toBeGreaterThan(now - 5000)
    }
    expect(await r.status()).toMatchObject({ keys: 3, pending: 0, regionsSinceStart: 1, lookupsSinceStart: 3 })
  })

  it('never announces a released CID again, and keeps announcing the rest every interval', async () => {
    for (const [i, cid] of CIDS.entries()) await ledger.create(pinRecord(String(i), cid), undefined, [cid])
    const fake = new FakeAnnouncer()
    const r = start(fake, 400)
    await waitFor(async () => (await r.status()).providedSinceStart >= 3 ? true : undefined, 'the first announcements')
    await ledger.remove('1', 'unpinned')
    const after = fake.calls.length
    await waitFor(async () => (await r.status()).providedSinceStart >= 3 + 2 * 3 ? true : undefined, 'three more rounds', 10_000)
    const later = fake.calls.slice(after).flat()
    expect(later).not.toContain(kad(CIDS[1]!))
    expect(later).toContain(kad(CIDS[0]!))
    expect(later).toContain(kad(CIDS[2]!))
  })

  it('retries failed announcements with backoff and counts them', async () => {
    await ledger.create(pinRecord('1', CIDS[0]!), undefined, [CIDS[0]!])
    const fake = new FakeAnnouncer()
    fake.fail = true
    const r = start(fake, 3_600_000)
    await waitFor(async () => (await r.status()).failedSinceStart >= 1 ? true : undefined, 'a failure')
    const calls = fake.calls.length
    await new Promise(resolve => setTimeout(resolve, 1000))
    expect(fake.calls.length).toBe(calls)
    expect((await r.status()).nextDueSeconds).toBeGreaterThanOrEqual(3)
    fake.fail = false
    await waitFor(async () => (await r.status()).providedSinceStart === 1 ? true : undefined, 'the retry to succeed', 15_000)
  })
})
