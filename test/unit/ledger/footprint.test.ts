/**
 * What each paid write leaves in ledger.mdb for good, in bytes of pages (not
 * time), on real LMDB: paid uploads as serve writes them (a settlement note,
 * then the pin, its payment and block references in one transaction), each
 * payer keeping its newest few and removing the rest, as the soak's clients
 * do. lmdb maps the file, so these pages are a long-running serve's resident
 * memory (issue 18). The bounds are above what this tree measures and below
 * what the layout before (payments under their ids as text, pins naming
 * their status, source, method and asset) left: scripts/bench-ledger-growth.mjs
 * prints both.
 */
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { addMonths, nextCreated } from '../../../src/ledger/clock.js'
import { openLedgerEnv, type LedgerEnv } from '../../../src/ledger/open.js'
import { PinLedger } from '../../../src/ledger/pins.js'
import type { PaymentRecord, PinRecord } from '../../../src/ledger/records.js'
import { newRequestid } from '../../../src/ledger/requestid.js'
import { ledgerStats } from '../../../scripts/ledger-stats.mjs'
import { tempDir } from '../../helpers/pind.js'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'

const WRITES = 2000
const PAYERS = 16
const LIVE = 4

let env: LedgerEnv | undefined
afterEach(async () => { await env?.close(); env = undefined })

/** a deterministic PRNG (mulberry32), so every run writes the same */
function prng (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('the ledger per paid write', () => {
  it('leaves under 320 bytes of payments pages, under 260 of pins pages and under 560 of the two together', async () => {
    const dir = tempDir('pind-footprint-')
    env = await openLedgerEnv(join(dir, 'ledger.mdb'))
    const ledger = new PinLedger(env)
    await ledger.upgrade()
    const rnd = prng(7)
    const hex = (n: number): string => Array.from({ length: n }, () => Math.floor(rnd() * 256).toString(16).padStart(2, '0')).join('')
    const payers = Array.from({ length: PAYERS }, () => `0x${hex(20)}`)
    const held: string[][] = payers.map(() => [])
    for (let i = 0; i < WRITES; i++) {
      const payer = payers[i % PAYERS] as string
      const id = `${payer}:0x${hex(32)}`
      const cid = CID.create(1, 0x55, await sha256.digest(Buffer.from(`block-${i}`))).toString()
      const created = nextCreated()
      const at = new Date(Math.floor(created.us / 1000))
      const amount = String(1000 + Math.floor(rnd() * 100000))
      const pin: PinRecord = {
        requestid: newRequestid(at.getTime()), owner: payer, cid, name: 'soak.bin', origins: [], meta: {}, status: 'pinned',
        created: created.iso, createdUs: created.us, months: 1, pinnedUntil: addMonths(at, 1).toISOString(), dagSize: 5000, fileSize: 4900, source: 'upload',
        payment: { id, payer, amount, network: 'eip155:84532', asset: '0x036cbd53842c5426634e7929541ec2318f3dcf7e', method: 'x402' }
      }
      await ledger.markSettling({ paymentId: id, payer, amount, purpose: `upload:${cid}`, at: new Date().toISOString(), fulfil: { proof: hex(32), pin } })
      const tx = `0x${hex(32)}`
      const settledAt = new Date().toISOString()
      const record: PaymentRecord = { id, requestid: pin.requestid, purpose: `upload:${cid}`, payer, amount, network: 'eip155:84532', tx, at: settledAt, proof: hex(32) }
      await ledger.create({ ...pin, payment: { ...pin.payment, tx, settledAt } }, record, [cid])
      const mine = held[i % PAYERS] as string[]
      mine.push(pin.requestid)
      while (mine.length > LIVE) await ledger.remove(mine.shift() as string, 'unpinned')
    }
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
