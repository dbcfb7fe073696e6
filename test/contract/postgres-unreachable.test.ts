/**
 * The PostgreSQL ledger while its server is away: a real cluster crashed
 * (pg_ctl -m immediate) under an open ledger. Reads, writes and settlement
 * notes reject with LedgerUnavailableError (the HTTP layer's 503), never
 * showing the password; once the server is back the same ledger works
 * again without being reopened, and its watchers are told `lost`.
 */
import { MemoryDatastore } from 'datastore-core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { LedgerUnavailableError } from '../../src/ledger/errors.js'
import { openPostgresLedger, type PostgresLedger } from '../../src/ledger/postgres/ledger.js'
import { newRequestid } from '../../src/ledger/requestid.js'
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js'
import { OWNER, paidPin } from '../helpers/records.js'

const PASSWORD = 'never-shown-9d2c'
let server: TestPostgres
let ledger: PostgresLedger | undefined

beforeAll(async () => {
  server = await startTestPostgres({ durable: true })
})
afterAll(async () => {
  await ledger?.close().catch(() => {})
  await server?.stop()
})

const CID_A = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const CID_B = 'bafkreibm6jg3ux5qumhcn2b3flc3tyu6dmlb4xa7u5bf44yegnrjhc4yeq'

describe('PostgreSQL ledger, server unreachable', () => {
  it('rejects with LedgerUnavailableError (no password in it) while the server is down, and works again once it is back', async () => {
    const db = await server.freshDatabase()
    const u = new URL(db.url)
    // trust authentication: the password is sent nowhere, but it is in the string
    u.password = PASSWORD
    ledger = await openPostgresLedger({ connectionString: u.toString(), graceMs: () => 0, datastore: new MemoryDatastore(), connectTimeoutMs: 5_000 })
    const calls: Array<[string, boolean]> = []
    ledger.observeCalls((op, _s, ok) => { calls.push([op, ok]) })
    const lost = vi.fn()
    ledger.pins.watchLost(lost)
    const before = paidPin(newRequestid(), CID_A)
    await ledger.pins.create(before.pin, before.payment)
    expect(ledger.poolStats().total).toBeGreaterThan(0)

    await server.crash()
    const after = paidPin(newRequestid(), CID_B, { id: `${OWNER}:0xbb` })
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['get', async () => await ledger!.pins.get(before.pin.requestid)],
      ['paymentUsed', async () => await ledger!.pins.paymentUsed(before.payment.id)],
      ['create', async () => { await ledger!.pins.create(after.pin, after.payment) }],
      ['markSettling', async () => { await ledger!.pins.markSettling({ paymentId: after.payment.id, payer: OWNER, amount: '1', purpose: 'upload:x', at: new Date().toISOString() }) }],
      ['schemaVersion', async () => await ledger!.schemaVersion()]
    ]
    for (const [what, call] of attempts) {
      const err = await call().then(() => undefined, (e: unknown) => e)
      expect(err, what).toBeInstanceOf(LedgerUnavailableError)
      expect((err as LedgerUnavailableError).retryAfterSeconds, what).toBeGreaterThan(0)
      const shown = `${String((err as Error).stack)} ${String(((err as Error).cause as Error | undefined)?.stack)} ${String(((err as Error).cause as Error | undefined)?.message)}`
      expect(shown, what).not.toContain(PASSWORD)
    }
    expect(calls).toContainEqual(['pins.get', false])
    expect(calls).toContainEqual(['pins.markSettling', false])

    await server.restart()
    await vi.waitFor(async () => { expect(await ledger!.schemaVersion()).toBeDefined() }, { timeout: 20_000, interval: 100 })
    // the change feed listened again and told its watchers they may have missed changes
    await vi.waitFor(() => { expect(lost).toHaveBeenCalled() }, { timeout: 20_000, interval: 100 })
    expect((await ledger.pins.get(before.pin.requestid))?.cid).toBe(CID_A)
    await ledger.pins.create(after.pin, after.payment)
    expect(await ledger.pins.paymentUsed(after.payment.id)).toBe(true)
    expect(calls).toContainEqual(['pins.create', true])
    await ledger.close()
    ledger = undefined
    await db.drop()
  })
})
