/**
 * The `created` clock across a restart (src/ledger/clock.ts, src/ledger/lmdb/pins.ts):
 * a clock stepped back while pind was down must still hand out values after
 * every pin's in the ledger, or Kubo's paging (before=<created of the oldest
 * seen>) skips or repeats pins. The ledger keeps the highest `created` it has
 * held; a restart (a fresh module graph here: the clock lives in its module)
 * seeds the clock with it.
 */
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { openLedgerEnv, type LedgerEnv } from '../../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../../src/ledger/lmdb/pins.js'
import { tempDir } from '../../helpers/pind.js'
import { pinRecord } from '../../helpers/records.js'

const A = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const B = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
const DAY_US = 86_400_000_000

const open: LedgerEnv[] = []
afterEach(async () => { for (const e of open.splice(0)) await e.close() })

/**
 * Writes, with the clock one day ahead of now, a pin whose requestid (a v4
 * UUID, as older pinds made them) and owner both sort first, and removes it;
 * then a pin created now whose requestid and owner sort last. Neither the
 * newest requestid nor the last owner-index entry shows the first pin's time.
 */
async function ledgerWithAFuturePin (): Promise<{ path: string, env: LedgerEnv, futureUs: number }> {
  const path = join(tempDir(), 'ledger.mdb')
  const env = await openLedgerEnv(path)
  open.push(env)
  const ledger = new PinLedger(env)
  await ledger.upgrade()
  const futureUs = (Date.now() + 1000) * 1000 + DAY_US
  const ahead = pinRecord('00000000-0000-4000-8000-000000000000', A, { owner: '0x01', createdUs: futureUs, created: new Date(futureUs / 1000).toISOString() })
  await ledger.create(ahead)
  await ledger.remove(ahead.requestid, 'unpinned')
  const nowUs = Date.now() * 1000
  await ledger.create(pinRecord('ffffffff-ffff-4fff-bfff-ffffffffffff', B, { owner: '0xff', createdUs: nowUs, created: new Date(nowUs / 1000).toISOString() }))
  return { path, env, futureUs }
}

/** a restart: fresh clock and ledger modules on the same file */
async function restart (path: string): Promise<{ next: () => number }> {
  vi.resetModules()
  const { openLedgerEnv: openAgain } = await import('../../../src/ledger/lmdb/open.js')
  const { PinLedger: Ledger } = await import('../../../src/ledger/lmdb/pins.js')
  const clock = await import('../../../src/ledger/clock.js')
  const env = await openAgain(path)
  open.push(env)
  await new Ledger(env).upgrade()
  return { next: () => clock.nextCreated().us }
}

describe('the created clock after a restart', () => {
  it('hands out values after every pin the ledger holds, removed ones too, though the clock is a day behind them', async () => {
    const { path, env, futureUs } = await ledgerWithAFuturePin()
    await env.close()
    open.splice(open.indexOf(env), 1)
    const { next } = await restart(path)
    const a = next()
    expect(a).toBeGreaterThan(futureUs)
    expect(next()).toBeGreaterThan(a)
  })

  it('finds that time in a ledger an earlier pind wrote (no high-water mark kept yet): the upgrade reads every pin once', async () => {
    const { path, env, futureUs } = await ledgerWithAFuturePin()
    // as an earlier pind leaves it: the upgrade not run, no mark
    await env.transaction(() => { env.setUpgraded('clock:created-high', false) })
    await env.setFact('createdHighUs', 0)
    await env.close()
    open.splice(open.indexOf(env), 1)
    const { next } = await restart(path)
    expect(next()).toBeGreaterThan(futureUs)
  })
})
