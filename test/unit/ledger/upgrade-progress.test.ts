/**
 * The ledger's upgrade reports how far it has got (serve passes it on to
 * systemd, which then waits for a long start: src/cli/notify.ts): each step
 * that runs when it begins and every 1,000 records it reads, also from inside
 * a step's transactions; a step already done reports nothing.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { PinLedger, type UpgradeProgress } from '../../../src/ledger/lmdb/pins.js'
import { closeTestLedgers, openTestLedger, toLayout1 } from '../../helpers/ledger.js'
import { paidPin } from '../../helpers/records.js'

afterEach(async () => { await closeTestLedgers() })

const CID = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

describe('the upgrade\'s progress', () => {
  it('reports each step as it begins and every 1,000 records it reads; once done, nothing', async () => {
    const { env, ledger } = await openTestLedger({ upgrade: true })
    const n = 2_500
    await Promise.all(Array.from({ length: n }, async (_, i) => {
      const { pin, payment } = paidPin(`019ab3f1-2c4d-7e8f-9a0b-${String(i).padStart(12, '0')}`, CID)
      await ledger.create(pin, payment, [CID])
    }))
    await toLayout1(env, ledger)
    // and the steps before those two, on the same records
    await env.transaction(() => {
      for (const u of ['index:owner-summaries', 'repair:replacement-chains', 'compact:records', 'clock:created-high'] as const) env.setUpgraded(u, false)
    })

    const seen: UpgradeProgress[] = []
    await new PinLedger(env).upgrade(p => { seen.push(p) })
    const of = (upgrade: string): number[] => seen.filter(p => p.upgrade === upgrade).map(p => p.records)
    // in the order the upgrade runs them (those serve runs before it serves, then the rest: PinLedger.upgradeLater); done steps (pins-by-expiry, provide-keys) report nothing
    expect([...new Set(seen.map(p => p.upgrade))]).toEqual(['index:owner-summaries', 'repair:replacement-chains', 'clock:created-high', 'compact:records', 'compact:payment-keys', 'compact:pin-numbers'])
    // 2,500 pins, in batches
    expect(of('index:owner-summaries')).toEqual([0, 1000, 2000])
    expect(of('repair:replacement-chains')).toEqual([0, 1000, 2000])
    // payments, pins, owner summaries, the CID index: 4 × 2,500 read in batches
    expect(of('compact:records')).toEqual([0, ...Array.from({ length: 10 }, (_, i) => (i + 1) * 1000)])
    expect(of('compact:payment-keys')).toEqual([0, 1000, 2000])
    expect(of('compact:pin-numbers')).toEqual([0, 1000, 2000])
    expect(of('clock:created-high')).toEqual([0, 1000, 2000])

    const again: UpgradeProgress[] = []
    await new PinLedger(env).upgrade(p => { again.push(p) })
    expect(again).toEqual([])
    expect(new PinLedger(env).countByStatus(new Date('2026-11-24T00:00:00.000Z')).pinned).toBe(n)
  })
})
