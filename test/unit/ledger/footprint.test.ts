/**
 * What each paid write leaves in ledger.mdb for good, in bytes of pages (not
 * time), on real LMDB: paid uploads as serve writes them (a settlement note,
 * then the pin, its payment and block references in one transaction), each
 * payer keeping its newest few and removing the rest, as the soak's clients
 * do. lmdb maps the file, so these pages are a long-running serve's resident
 * memory (issue 18). The writes are scripts/bench-ledger-growth.mjs's own
 * (paidWrites), uploads only. The bounds are above what this tree measures
 * and below what the layout before (payments under their ids as text, pins
 * naming their status, source, method and asset) left: the bench prints both.
 */
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { addMonths, nextCreated } from '../../../src/ledger/clock.js'
import { openLedgerEnv, type LedgerEnv } from '../../../src/ledger/lmdb/open.js'
import { PinLedger } from '../../../src/ledger/lmdb/pins.js'
import { newRequestid } from '../../../src/ledger/requestid.js'
import { paidWrites } from '../../../scripts/bench-ledger-growth.mjs'
import { ledgerStats } from '../../../scripts/ledger-stats.mjs'
import { tempDir } from '../../helpers/pind.js'

const WRITES = 2000
const PAYERS = 16
const LIVE = 4

let env: LedgerEnv | undefined
afterEach(async () => { await env?.close(); env = undefined })

describe('the ledger per paid write', () => {
  it('leaves under 320 bytes of payments pages, under 260 of pins pages and under 560 of the two together', async () => {
    const dir = tempDir('pind-footprint-')
    env = await openLedgerEnv(join(dir, 'ledger.mdb'))
    const ledger = new PinLedger(env)
    await ledger.upgrade()
    // uploads of one block each, as the soak's clients make them; the bench's own writes add pins by CID and renewals
    await paidWrites({ nextCreated, addMonths, newRequestid }, ledger, { n: WRITES, live: LIVE, seed: 7, payers: PAYERS, byCid: 0, renew: 0, maxBlocks: 1 })
    await env.close()
    env = undefined
    const st = ledgerStats(dir)
    const bytes = (name: string): number => st.dbs[name]?.bytes ?? 0
    const payments = (bytes('payments') + bytes('payments-binary')) / WRITES
    const pins = bytes('pins') / WRITES
    // measured: payments 272, pins 236 (the layout before: payments 518, pins 281)
    expect(payments).toBeLessThan(320)
    expect(pins).toBeLessThan(260)
    expect(payments + pins).toBeLessThan(560)
  })
})
