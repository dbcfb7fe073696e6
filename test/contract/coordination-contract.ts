/**
 * What every ledger promises the serves that share it (src/ledger/coordination.ts):
 * front ends registered by their beats, and leases held by one holder at a
 * time until they lapse. Run unchanged against each implementation, beside
 * the ledger contract (./ledger-contract.ts).
 */
import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { FrontEndRecord } from '../../src/ledger/coordination.js'
import type { PinRecord } from '../../src/ledger/records.js'
import { newRequestid } from '../../src/ledger/requestid.js'
import { paidPin, pinRecord } from '../helpers/records.js'
import type { OpenedLedger } from './ledger-contract.js'

function frontEnd (id: string, over: Partial<FrontEndRecord> = {}): Omit<FrontEndRecord, 'seenAt'> {
  return { id, url: `http://127.0.0.1:${1000 + id.length}`, version: '0.1.0', blockstore: 's3 bucket/blocks/', startedAt: new Date().toISOString(), ...over }
}

let blockSeq = 0
/** a fresh CIDv1 (raw, sha256) */
function newCid (): string {
  return CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`claimed block ${++blockSeq} ${Math.random()}`).digest())).toString()
}

export function describeCoordinationContract (name: string, open: () => Promise<OpenedLedger>): void {
  describe(`coordination contract: ${name}`, () => {
    let t: OpenedLedger
    beforeEach(async () => { t = await open() })
    afterEach(async () => { await t.close() })

    it('a beat registers a front end and refreshes it; leave marks it stopped until it beats again; forget removes it; list is most recently seen first', async () => {
      const { frontEnds } = t.ledger
      expect(await frontEnds.list()).toEqual([])
      await frontEnds.beat(frontEnd('peer-a'))
      const [a] = await frontEnds.list()
      expect(a).toMatchObject(frontEnd('peer-a', { startedAt: a?.startedAt }))
      expect(Number.isNaN(Date.parse(a?.seenAt ?? ''))).toBe(false)
      await sleep(20)
      await frontEnds.beat(frontEnd('peer-b', { settler: '0x' + 'ab'.repeat(20) }))
      await sleep(20)
      await frontEnds.beat(frontEnd('peer-a', { url: 'http://127.0.0.1:9999' }))
      const both = await frontEnds.list()
      expect(both.map(f => f.id)).toEqual(['peer-a', 'peer-b'])
      expect(both[0]?.url).toBe('http://127.0.0.1:9999')
      expect(Date.parse(both[0]?.seenAt ?? '')).toBeGreaterThan(Date.parse(a?.seenAt ?? ''))
      expect(both[1]?.settler).toBe('0x' + 'ab'.repeat(20))
      await frontEnds.leave('peer-a')
      const left = await frontEnds.list()
      expect(left.map(f => [f.id, f.leftAt != null])).toEqual([['peer-a', true], ['peer-b', false]])
      expect(Number.isNaN(Date.parse(left[0]?.leftAt ?? ''))).toBe(false)
      await frontEnds.beat(frontEnd('peer-a'))
      expect((await frontEnds.list()).find(f => f.id === 'peer-a')?.leftAt).toBeUndefined()
      await frontEnds.forget('peer-a')
      expect((await frontEnds.list()).map(f => f.id)).toEqual(['peer-b'])
    })

    it('list(withinMs) leaves out a front end that has not beaten within that time', async () => {
      const { frontEnds } = t.ledger
      await frontEnds.beat(frontEnd('quiet'))
      await sleep(400)
      const mid = Date.now()
      await frontEnds.beat(frontEnd('beating'))
      // the quiet one beat 400 ms before `mid`, the other after it; 200 ms of slack for a busy machine
      const recent = await frontEnds.list(Date.now() - mid + 200)
      expect(recent.map(f => f.id)).toEqual(['beating'])
      expect((await frontEnds.list()).map(f => f.id)).toEqual(['beating', 'quiet'])
    })

    it('a lease is held by one holder until it is released or lapses; its holder renews it', async () => {
      const { leases } = t.ledger
      expect(await leases.take('gc', 'a', 60_000)).toBe(true)
      expect(await leases.take('gc', 'b', 60_000)).toBe(false)
      expect(await leases.take('gc', 'a', 60_000)).toBe(true)
      expect(await leases.take('archiver', 'b', 60_000)).toBe(true)
      expect((await leases.held()).map(l => [l.name, l.holder]).sort()).toEqual([['archiver', 'b'], ['gc', 'a']])
      // only the holder can release it
      await leases.release('gc', 'b')
      expect(await leases.take('gc', 'b', 60_000)).toBe(false)
      await leases.release('gc', 'a')
      expect(await leases.take('gc', 'b', 60_000)).toBe(true)
      // a lease not renewed lapses, and another holder takes it
      expect(await leases.take('sweep', 'a', 150)).toBe(true)
      expect(await leases.take('sweep', 'b', 60_000)).toBe(false)
      await sleep(300)
      expect((await leases.held()).map(l => l.name)).not.toContain('sweep')
      expect(await leases.take('sweep', 'b', 60_000)).toBe(true)
      const sweep = (await leases.held()).find(l => l.name === 'sweep')
      expect(sweep?.holder).toBe('b')
      expect(Date.parse(sweep?.until ?? '')).toBeGreaterThan(Date.now() + 50_000)
    })

    it('nextCreated hands out increasing values a whole millisecond apart, also when asked many times at once, and after every pin recorded', async () => {
      const many = await Promise.all(Array.from({ length: 40 }, async () => await t.ledger.pins.nextCreated()))
      const us = many.map(c => c.us).sort((a, b) => a - b)
      for (let i = 1; i < us.length; i++) expect((us[i] as number) - (us[i - 1] as number)).toBeGreaterThanOrEqual(1000)
      for (const c of many) expect(Date.parse(c.iso) * 1000).toBe(Math.floor(c.us / 1000) * 1000)
      // an imported pin from the future: nothing handed out after it is at or before it
      const ahead = Date.now() * 1000 + 3_600_000_000
      const pin = { ...pinRecord(newRequestid(), 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'), createdUs: ahead, created: new Date(ahead / 1000).toISOString() }
      await t.ledger.transaction(async (tx) => { await tx.importPins([{ pin }], []) })
      expect((await t.ledger.pins.nextCreated()).us).toBeGreaterThanOrEqual(ahead + 1000)
    })

    it('of many holders taking one lease at once exactly one gets it', async () => {
      const { leases } = t.ledger
      const got = await Promise.all(Array.from({ length: 12 }, async (_, i) => await leases.take('reconcile', `holder-${i}`, 60_000)))
      expect(got.filter(Boolean)).toHaveLength(1)
      const winner = `holder-${got.indexOf(true)}`
      expect((await leases.held()).find(l => l.name === 'reconcile')?.holder).toBe(winner)
    })

    describe('fetch claims', () => {
      const sorted = (xs: string[]): string[] => [...xs].sort()
      /** `n` pins by CID waiting for the fetcher, oldest first */
      const queue = async (n: number, pin: Partial<PinRecord> = {}): Promise<string[]> => {
        const ids: string[] = []
        for (let i = 0; i < n; i++) {
          const p = paidPin(newRequestid(), newCid(), { pin: { status: 'queued', source: 'pin', pinnedUntil: new Date(Date.now() + 86400_000).toISOString(), ...pin } })
          await t.ledger.pins.create(p.pin, p.payment)
          ids.push(p.pin.requestid)
        }
        return ids
      }

      it('holders claiming at once get disjoint pins, oldest first; a claimed pin goes to no other holder until its lease lapses, and renewing keeps it', async () => {
        const { pins } = t.ledger
        const ids = await queue(6)
        const [a, b] = await Promise.all([pins.claimFetches('a', 3, 60_000), pins.claimFetches('b', 3, 60_000)])
        expect(a).toHaveLength(3)
        expect(b).toHaveLength(3)
        expect(sorted([...a, ...b])).toEqual(sorted(ids))
        // each holder's pins in queue order
        expect(a).toEqual(ids.filter(id => a.includes(id)))
        expect(b).toEqual(ids.filter(id => b.includes(id)))
        // nothing left for anyone, the holders themselves included
        expect(await pins.claimFetches('c', 10, 60_000)).toEqual([])
        expect(await pins.claimFetches('a', 10, 60_000)).toEqual([])
        // still queued, claimed or not
        expect(sorted(await pins.pendingFetches())).toEqual(sorted(ids))
        // only a holder renews its own claims
        expect(await pins.renewFetches('a', [...a, ...b], 60_000)).toEqual(a)
        expect(await pins.renewFetches('c', ids, 60_000)).toEqual([])

        // a short lease: taken by another once it lapses, not before
        const [late] = await queue(1)
        expect(await pins.claimFetches('a', 10, 400)).toEqual([late])
        expect(await pins.claimFetches('b', 10, 60_000)).toEqual([])
        await sleep(600)
        expect(await pins.claimFetches('b', 10, 60_000)).toEqual([late])
        // 'a' lost it: renewing says so
        expect(await pins.renewFetches('a', [late as string], 60_000)).toEqual([])
        expect(await pins.renewFetches('b', [late as string], 60_000)).toEqual([late])

        // renewed before it lapses, a short lease is kept past its first term
        const [kept] = await queue(1)
        expect(await pins.claimFetches('a', 10, 500)).toEqual([kept])
        for (let i = 0; i < 4; i++) {
          await sleep(200)
          expect(await pins.renewFetches('a', [kept as string], 500)).toEqual([kept])
        }
        expect(await pins.claimFetches('b', 10, 60_000)).toEqual([])
      })

      it('finishFetch, failFetch, remove and takeDown end a claim; a released claim is free at once', async () => {
        const { pins } = t.ledger
        const [done, failed, removed, takenDown, released, other] = await queue(6)
        const all = [done, failed, removed, takenDown, released, other] as string[]
        expect(await pins.claimFetches('a', 6, 60_000)).toEqual(all)
        expect((await pins.finishFetch(done as string, [], 10, 'pinned'))?.status).toBe('pinned')
        expect((await pins.failFetch(failed as string, 'not found'))?.status).toBe('failed')
        expect((await pins.remove(removed as string, 'unpinned'))?.removed).toBeDefined()
        expect((await pins.takeDown(takenDown as string, 'court order'))?.takedown).toBeDefined()
        await pins.releaseFetches('a', [released as string])
        // 'b' may not release what 'a' holds
        await pins.releaseFetches('b')
        expect(await pins.renewFetches('a', all, 60_000)).toEqual([other])
        expect(await pins.claimFetches('b', 10, 60_000)).toEqual([released])
        // releasing every claim of a holder (a restarted front end's from before)
        await pins.releaseFetches('a')
        expect(await pins.renewFetches('a', all, 60_000)).toEqual([])
        expect(await pins.claimFetches('c', 10, 60_000)).toEqual([other])
      })

      it('a pin fetched by two holders (the first one\'s lease lapsed) is finished once: the later finish or failure changes nothing and its blocks are held once', async () => {
        const { pins } = t.ledger
        const [id] = await queue(1) as [string]
        expect(await pins.claimFetches('a', 1, 100)).toEqual([id])
        await sleep(150)
        expect(await pins.claimFetches('b', 1, 60_000)).toEqual([id])
        const block = newCid()
        expect((await pins.finishFetch(id, [block], 10, 'pinned by b'))?.status).toBe('pinned')
        expect(await pins.finishFetch(id, [block], 10, 'pinned by a')).toBeUndefined()
        expect(await pins.failFetch(id, 'a gave up')).toBeUndefined()
        expect(await pins.refCount(block)).toBe(1)
        expect(await pins.get(id)).toMatchObject({ status: 'pinned', statusDetails: 'pinned by b' })
        expect(await pins.remove(id, 'unpinned')).toBeDefined()
        expect(await pins.refCount(block)).toBe(0)
      })

      it('a pin whose next attempt is not due yet is not claimed until it is', async () => {
        const { pins } = t.ledger
        const at = Date.now() + 60_000
        const [due, waiting] = await queue(2)
        await pins.update(waiting as string, p => ({ ...p, fetch: { attempts: 1, giveUpAt: new Date(at + 3600_000).toISOString(), nextAttemptAt: new Date(at).toISOString() } }))
        expect(await pins.claimFetches('a', 10, 60_000)).toEqual([due])
        expect(await pins.claimFetches('a', 10, 60_000, new Date(at - 1))).toEqual([])
        expect(await pins.claimFetches('a', 10, 60_000, new Date(at))).toEqual([waiting])
      })

      it('of many holders claiming at once, each pin is claimed by one', async () => {
        const { pins } = t.ledger
        const ids = await queue(40)
        const rounds = await Promise.all(Array.from({ length: 12 }, async (_, i) => {
          const mine: string[] = []
          for (let k = 0; k < 3; k++) mine.push(...await pins.claimFetches(`holder-${i}`, 2, 60_000))
          return mine
        }))
        const claimed = rounds.flat()
        expect(claimed).toHaveLength(ids.length)
        expect(sorted(claimed)).toEqual(sorted(ids))
        // and each holder renews exactly what it was given
        for (const [i, mine] of rounds.entries()) expect(sorted(await pins.renewFetches(`holder-${i}`, ids, 60_000))).toEqual(sorted(mine))
      })
    })
  })
}
