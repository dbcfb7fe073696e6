/**
 * The provide sweep of front ends sharing a PostgreSQL ledger: two
 * reprovers over one schedule announce each key once, each naming the front
 * end that announced it; a front end that stops beating is forgotten and the
 * keys it announced are made due for the live ones (FrontEndTakeover); one
 * that comes back in time is not.
 */
import { createHash } from 'node:crypto'
import { MemoryDatastore } from 'datastore-core'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { AnnounceKey, AnnounceOutcome } from '../../../src/ipfs/routing/announcer.js'
import { bitsOf } from '../../../src/ipfs/routing/keyspace.js'
import type { Region } from '../../../src/ipfs/routing/region.js'
import { createLogger } from '../../../src/kernel/log.js'
import { openPostgresLedger, type PostgresLedger } from '../../../src/ledger/postgres/ledger.js'
import { newRequestid } from '../../../src/ledger/requestid.js'
import { FrontEndTakeover } from '../../../src/service/background/front-end-takeover.js'
import { Reprovider, type Announcer } from '../../../src/service/background/reprovider.js'
import { waitFor } from '../../helpers/ports.js'
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js'
import { paidPin } from '../../helpers/records.js'

const log = createLogger({ level: 'error' })

/** announces what it is given after a turn of the event loop, as a real one does after its lookups; counts each key */
class CountingAnnouncer implements Announcer {
  k = 20
  readonly announced = new Map<string, number>()
  /** its first announce waits for this (so that two reprovers both take part, whatever the machine's load) */
  before?: Promise<void>
  /** told after each announce */
  onAnnounced?: () => void
  async region (key: AnnounceKey): Promise<Region> { return { prefix: bitsOf(key.kad, 2), peers: [], lookups: 3, complete: true } }
  async single (key: AnnounceKey): Promise<Region> { return { prefix: bitsOf(key.kad, 256), peers: [], lookups: 1, complete: true } }
  async announce (_r: Region, keys: AnnounceKey[]): Promise<AnnounceOutcome> {
    await new Promise(resolve => setTimeout(resolve, 5))
    await this.before
    for (const k of keys) this.announced.set(k.kad.toString('hex'), (this.announced.get(k.kad.toString('hex')) ?? 0) + 1)
    this.onAnnounced?.()
    return { provided: keys, failed: [], peers: 20, reachable: 20, records: keys.length * 20, errors: {} }
  }
}

let server: TestPostgres
let drop: () => Promise<void>
let a: PostgresLedger
let b: PostgresLedger
const stops: Array<() => Promise<void>> = []

beforeAll(async () => { server = await startTestPostgres() })
afterAll(async () => { await server?.stop() })
beforeEach(async () => {
  const db = await server.freshDatabase()
  drop = db.drop
  a = await openPostgresLedger({ connectionString: db.url, graceMs: () => 0, datastore: new MemoryDatastore() })
  b = await openPostgresLedger({ connectionString: db.url, graceMs: () => 0, datastore: new MemoryDatastore() })
})
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop()
  await a.close()
  await b.close()
  await drop()
})

async function pinMany (n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const cid = CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`shared provides ${i} ${Math.random()}`).digest())).toString()
    const p = paidPin(newRequestid(), cid)
    await a.pins.create(p.pin, p.payment, [cid])
  }
}

describe('the provide sweep shared by two front ends', () => {
  it('each key is announced once, by one of them, which is recorded as its announcer', async () => {
    await pinMany(60)
    const announcers = [new CountingAnnouncer(), new CountingAnnouncer()]
    // the first announces only once the second has (on a loaded machine one could otherwise sweep
    // every region before the other has read the schedule); one region at a time, so it holds one
    // region while it waits and the other finds the rest
    announcers[0]!.before = new Promise<void>(resolve => { announcers[1]!.onAnnounced = resolve })
    const [ra, rb] = [a, b].map((l, i) => new Reprovider({ keys: l.provides, kind: 'roots', announcer: announcers[i] as Announcer, intervalMs: 3_600_000, concurrency: i === 0 ? 1 : 4, self: `peer-${i}`, log }))
    for (const r of [ra, rb]) { r?.start(); stops.push(async () => { await r?.stop() }) }
    await waitFor(async () => (await a.provides.countDue('roots', Date.now() + 60_000)) === 0 ? true : undefined, 'every key announced', 20_000)
    const counts = new Map<string, number>()
    for (const an of announcers) for (const [k, n] of an.announced) counts.set(k, (counts.get(k) ?? 0) + n)
    expect(counts.size).toBe(60)
    expect([...counts.values()].every(n => n === 1)).toBe(true)
    // both took part (the keys are spread over the keyspace, the sweep over regions)
    expect(announcers.every(an => an.announced.size > 0)).toBe(true)
    // each key names the front end that announced it: a reannounce of one's keys makes exactly those due
    const dueOf0 = await a.provides.reannounce('peer-0')
    expect(dueOf0).toBe(announcers[0]?.announced.size)
    expect(await a.provides.countDue('roots', Date.now())).toBe(dueOf0)
  })
})

describe('FrontEndTakeover', () => {
  const takeover = (l: PostgresLedger, self: string, when = true): FrontEndTakeover =>
    new FrontEndTakeover({ frontEnds: l.frontEnds, provides: l.provides, self, deadAfterMs: 400, intervalMs: 60_000, when: () => when, log })
  const fe = (id: string): { id: string, url: string, version: string, blockstore: string, startedAt: string } =>
    ({ id, url: `http://127.0.0.1/${id}`, version: '0', blockstore: 's3 bucket/blocks/', startedAt: new Date().toISOString() })

  it('forgets a front end silent for longer than its bound and makes the keys it announced due; spares one that beat or came back in time, and itself', async () => {
    await pinMany(6)
    const keys = await a.provides.due('roots', Date.now(), 10)
    const later = Date.now() + 3_600_000
    await a.provides.reschedule('roots', keys.map((k, i) => ({ kad: k.kad, due: later, at: Date.now(), by: i < 4 ? 'dead' : 'restarted' })))
    await a.frontEnds.beat(fe('dead'))
    await a.frontEnds.beat(fe('restarted'))
    await a.frontEnds.leave('restarted')
    await b.frontEnds.beat(fe('self'))
    await new Promise(resolve => setTimeout(resolve, 600))
    // 'restarted' comes back (a rolling restart): it beats before the pass
    await a.frontEnds.beat(fe('restarted'))

    // without the lease, nothing happens
    expect(await takeover(b, 'self', false).run()).toBe(0)
    expect(await b.frontEnds.list()).toHaveLength(3)

    expect(await takeover(b, 'self').run()).toBe(1)
    expect((await b.frontEnds.list()).map(f => f.id).sort()).toEqual(['restarted', 'self'])
    expect(await b.provides.countDue('roots', Date.now())).toBe(4)
    // once handed over, not again
    expect(await takeover(b, 'self').run()).toBe(0)
  })
})
