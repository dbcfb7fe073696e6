/**
 * LeaseKeeper (src/service/background/lease-keeper.ts) on a real LMDB ledger:
 * one of two front ends holds a lease; the other takes it over once the first
 * lets go, or once its term runs out after the first lost the ledger.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Leases } from '../../../src/ledger/coordination.js'
import type { LmdbLedger } from '../../../src/ledger/lmdb/ledger.js'
import { silentLogger } from '../../../src/kernel/log.js'
import { LeaseKeeper } from '../../../src/service/background/lease-keeper.js'
import { closeTestLedgers, contractOf, openTestLedger } from '../../helpers/ledger.js'

let ledger: LmdbLedger
const keepers: LeaseKeeper[] = []

beforeEach(async () => {
  ledger = contractOf(await openTestLedger({ prefix: 'pind-lease-' }))
})
afterEach(async () => {
  for (const k of keepers.splice(0)) await k.stop()
  await closeTestLedgers()
})

function keeper (holder: string, leases: Leases = ledger.leases, ttlMs = 60_000): LeaseKeeper {
  const k = new LeaseKeeper({ leases, holder, names: ['gc', 'archiver'], ttlMs, log: silentLogger })
  keepers.push(k)
  return k
}

describe('LeaseKeeper', () => {
  it('the first front end holds the leases; the second takes them once the first stops', async () => {
    const a = keeper('peer-a')
    const b = keeper('peer-b')
    await a.start()
    await b.start()
    expect(a.held()).toEqual(['gc', 'archiver'])
    expect(b.held()).toEqual([])
    await a.stop()
    expect(a.holds('gc')).toBe(false)
    await b.renew()
    expect(b.held()).toEqual(['gc', 'archiver'])
    expect((await ledger.leases.held()).map(l => l.holder)).toEqual(['peer-b', 'peer-b'])
  })

  it('a front end cut off from the ledger stops holding once its term runs out here, and another takes over after it lapses there', async () => {
    let reachable = true
    const flaky: Leases = {
      take: async (...a) => { if (!reachable) throw new Error('connection refused'); return await ledger.leases.take(...a) },
      release: async (...a) => { if (!reachable) throw new Error('connection refused'); await ledger.leases.release(...a) },
      held: async () => await ledger.leases.held()
    }
    const a = keeper('peer-a', flaky, 300)
    const b = keeper('peer-b', ledger.leases, 300)
    await a.start()
    await b.start()
    expect(a.holds('gc')).toBe(true)
    reachable = false
    await a.renew()
    // its last successful take still covers it for a while, then it lets go of the work
    await sleep(350)
    expect(a.holds('gc')).toBe(false)
    await b.renew()
    expect(b.holds('gc')).toBe(true)
  })
})
