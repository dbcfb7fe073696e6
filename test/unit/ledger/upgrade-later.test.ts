/**
 * The ledger's upgrade in two parts (src/ledger/lmdb/pins.ts): serve runs the
 * steps what it answers depends on before it starts (upgradeBeforeServing),
 * and the rest while it serves (upgradeLater): records rewritten in the
 * layout this pind writes, the index of removed pins, and the highest
 * `created` of every pin, which new pins wait for (src/ledger/clock.ts
 * clockReady). Meanwhile every read answers as after the whole upgrade,
 * writes go on, and a stop halts it between batches: the next start goes on.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { clockReady, nextCreated } from '../../../src/ledger/clock.js'
import type { LedgerEnv } from '../../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../../src/ledger/lmdb/pins.js'
import { closeTestLedgers, openTestLedger, toLayout1 } from '../../helpers/ledger.js'
import { paidPin } from '../../helpers/records.js'

afterEach(async () => { await closeTestLedgers() })

const CID = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const OWNER = `0x${'a1'.repeat(20)}`
const LATER = ['clock:created-high', 'compact:payment-keys', 'compact:pin-numbers', 'index:removed-pins'] as const
const NOW = new Date('2026-11-24T00:00:00.000Z')

/** `n` paid pins (the first removed), in the layout before compact:payment-keys and compact:pin-numbers, with the later steps to do */
async function earlierLedger (n: number): Promise<{ env: LedgerEnv, ids: string[] }> {
  const { env, ledger } = await openTestLedger({ upgrade: true })
  const ids = Array.from({ length: n }, (_, i) => `019ab3f1-2c4d-7e8f-9a0b-${String(i).padStart(12, '0')}`)
  await Promise.all(ids.map(async (id) => {
    const { pin, payment } = paidPin(id, CID, { owner: OWNER })
    await ledger.create(pin, payment, [CID])
  }))
  await ledger.remove(ids[0] as string, 'unpinned')
  await toLayout1(env, ledger)
  await env.transaction(() => { for (const u of LATER) env.setUpgraded(u, false) })
  return { env, ids }
}

/** what the owner API and /metrics read */
function reads (ledger: PinLedger): unknown {
  return {
    listed: [...ledger.byOwnerNewestFirst(OWNER)].map(p => [p.requestid, p.status, p.payment.id, p.payment.amount]),
    counts: ledger.countByStatus(NOW),
    payments: [...ledger.allPayments()].map(p => p.id).sort()
  }
}

describe('the upgrade while serving', () => {
  it('serving reads answer the same before, during and after the later steps; new pins wait for the clock until it knows every pin', async () => {
    const { env, ids } = await earlierLedger(2_500)
    const expected = reads(new PinLedger(env))
    const ledger = new PinLedger(env)
    await ledger.upgradeBeforeServing()
    for (const u of LATER) expect(env.upgraded(u)).toBe(false)
    expect(reads(ledger)).toEqual(expected)

    let midway: unknown
    let clockWaited = false
    const later = ledger.upgradeLater((p) => { if (p.upgrade === 'compact:pin-numbers' && p.records === 1000) midway = reads(ledger) })
    // the clock is held from the call on, until the highest created is read
    const ready = clockReady().then(() => { clockWaited = true })
    expect(clockWaited).toBe(false)
    await ready
    expect(env.upgraded('clock:created-high')).toBe(true)
    // every pin written meanwhile is kept: one created and removed while the later steps run
    const { pin, payment } = paidPin('019ab3f1-2c4d-7e8f-9a0b-ffffffffffff', CID, { owner: OWNER })
    await ledger.create(pin, payment, [CID])
    await ledger.remove(pin.requestid, 'unpinned')
    expect(await later).toBe(true)
    for (const u of LATER) expect(env.upgraded(u)).toBe(true)
    // (lmdb commits transactions in the order they began: that pin's two, then the later batches)
    const after = reads(ledger) as { counts: { removed: number }, payments: string[] }
    expect(midway).toEqual(after)
    expect({ ...after, counts: { ...after.counts, removed: after.counts.removed - 1 }, payments: after.payments.filter(id => id !== payment.id) }).toEqual(expected)
    // the removed pins are listed for the archiver, the one removed meanwhile too
    expect(ledger.get(ids[0] as string)?.removed).toBeDefined()
    const due = await ledger.archiveDue(new Date(Date.now() + 60_000), async () => {}, () => false, undefined, new Date(Date.now() + 60_000))
    expect(due).toBe(2)
    // the clock hands out values after every pin's
    const high = Math.max(...ids.map(id => ledger.get(id)?.createdUs ?? 0))
    expect(nextCreated(0).us).toBeGreaterThan(high)
    // done: nothing is left for the next start
    expect(await new PinLedger(env).upgradeLater()).toBe(true)
  })

  it('halted between batches (serve stopping): resolves false with the step undone, and the next start goes on to the same ledger', async () => {
    const { env } = await earlierLedger(2_500)
    const expected = reads(new PinLedger(env))
    const ledger = new PinLedger(env)
    await ledger.upgradeBeforeServing()
    const later = ledger.upgradeLater((p) => { if (p.upgrade === 'compact:payment-keys' && p.records === 1000) ledger.haltUpgrade() })
    expect(await later).toBe(false)
    expect(env.upgraded('clock:created-high')).toBe(true)
    expect(env.upgraded('compact:payment-keys')).toBe(false)
    expect(env.upgraded('compact:pin-numbers')).toBe(false)
    // the clock is not held by a halted upgrade
    await clockReady()
    expect(reads(ledger)).toEqual(expected)

    const next = new PinLedger(env)
    expect(await next.upgradeLater()).toBe(true)
    for (const u of LATER) expect(env.upgraded(u)).toBe(true)
    expect(reads(next)).toEqual(expected)
  })
})
