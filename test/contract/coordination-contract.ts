/**
 * What every ledger promises the serves that share it (src/ledger/coordination.ts):
 * front ends registered by their beats, and leases held by one holder at a
 * time until they lapse. Run unchanged against each implementation, beside
 * the ledger contract (./ledger-contract.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { FrontEndRecord } from '../../src/ledger/coordination.js'
import { newRequestid } from '../../src/ledger/requestid.js'
import { pinRecord } from '../helpers/records.js'
import type { OpenedLedger } from './ledger-contract.js'

function frontEnd (id: string, over: Partial<FrontEndRecord> = {}): Omit<FrontEndRecord, 'seenAt'> {
  return { id, url: `http://127.0.0.1:${1000 + id.length}`, version: '0.1.0', blockstore: 's3 bucket/blocks/', startedAt: new Date().toISOString(), ...over }
}

export function describeCoordinationContract (name: string, open: () => Promise<OpenedLedger>): void {
  describe(`coordination contract: ${name}`, () => {
    let t: OpenedLedger
    beforeEach(async () => { t = await open() })
    afterEach(async () => { await t.close() })

    it('a beat registers a front end and refreshes it; leave removes it; list is most recently seen first', async () => {
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
  })
}
