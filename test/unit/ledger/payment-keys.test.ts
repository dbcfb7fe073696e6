/**
 * Payments keyed by their bytes (src/ledger/lmdb/stored.ts, payment layout 2), on
 * real LMDB: an x402 payment `0x<payer>:0x<nonce>` is kept under its 52 bytes
 * in payments-binary, its purpose coded, its time as milliseconds, and reads
 * back field for field; any other id stays text in payments. A ledger in the
 * layout before (layout 1: text keys, purposes and times as strings) reads
 * the same before, during and after the compact:payment-keys upgrade, which
 * moves its records a batch per transaction and goes on after an
 * interruption; its exports are byte for byte the same; a used payment is
 * refused again at every step.
 */
import type { Database } from 'lmdb'
import { afterEach, describe, expect, it } from 'vitest'
import { PaymentReusedError, PinLedger } from '../../../src/ledger/lmdb/pins.js'
import type { PaymentRecord, PinRecord } from '../../../src/ledger/records.js'
import { cidOf, cidOfPacked, paymentKey, readCid, type StoredPin } from '../../../src/ledger/lmdb/stored.js'
import { CID } from 'multiformats/cid'
import { identity } from 'multiformats/hashes/identity'
import { exportLedger, parseExportOptions } from '../../../src/service/admin/ledger-export.js'
import { writeImport } from '../../../src/service/admin/ledger-import.js'
import { LmdbLedger } from '../../../src/ledger/lmdb/ledger.js'
import type { LedgerEnv } from '../../../src/ledger/lmdb/open.js'
import { closeTestLedgers, openTestLedger, paymentsBinary, PIN_AT, textOf, toLayout1 } from '../../helpers/ledger.js'
import { ASSET, OWNER, paidPin } from '../../helpers/records.js'

const A = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const B = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
const V0 = 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'
const OTHER = '0x' + '0b'.repeat(20)
const NET = 'eip155:84532'
const NOW = new Date('2026-11-24T00:00:00.000Z')

afterEach(async () => { await closeTestLedgers() })

let seq = 0
const nonce = (): string => `0x${(++seq).toString(16).padStart(4, '0')}${'5e'.repeat(30)}`
const uuid = (n: number): string => `019ab3f1-2c4d-7e8f-9a0b-${String(n).padStart(12, '0')}`

/** a paid pin and its payment as serve writes them; `purpose` and `record` change the payment record only */
function paid (requestid: string, cid: string, purpose: string, owner = OWNER, record: Partial<PaymentRecord> = {}, pin: Partial<PinRecord> = {}): { pin: PinRecord, payment: PaymentRecord } {
  return paidPin(requestid, cid, { owner, purpose, network: NET, ...(record.id != null ? { id: record.id } : {}), record, pin })
}

/**
 * Every form a purpose takes (pin-create.ts, upload.ts, pin-renew.ts), with
 * parts that are and are not the pin's own, and what must stay as written.
 */
async function writeLedger (ledger: PinLedger): Promise<PaymentRecord[]> {
  const out: PaymentRecord[] = []
  const add = async (x: { pin: PinRecord, payment: PaymentRecord }): Promise<void> => { await ledger.create(x.pin, x.payment, [x.pin.cid]); out.push(x.payment) }
  const up = paid(uuid(1), A, `upload:${A}`)
  await add(up)
  // a pin by CID of a v0 CID: its purpose names the v1 form
  await add(paid(uuid(2), V0, 'pin:bafybeie5gq4jxvzmsym6hjlwxej4rwdoxt7wadqvmmwbg4pqd7mqoisi4m:3', OWNER, {}, { source: 'pin', months: 3 }))
  // a replacement: the purpose names the pin it replaces
  await add(paid(uuid(3), B, `replace:${uuid(2)}:${B}:2`, OWNER, {}, { replaces: uuid(2), months: 2, status: 'queued', source: 'pin' }))
  await ledger.finishFetch(uuid(3), [B], 100, 'pinned')
  // a purpose naming another CID than the pin's, months written oddly, a time its milliseconds do not spell, a kind this pind does not know
  await add(paid(uuid(4), A, `upload:${B}`, OTHER))
  await add(paid(uuid(5), A, 'pin:bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy:01', OTHER, { at: '2026-11-20T10:00:00Z' }))
  await add(paid(uuid(6), B, 'gift:for:someone', OTHER))
  // a payer that is not the id's first part; ids that are not x402's (stay text keys)
  await add(paid(uuid(7), B, `upload:${B}`, OWNER, { payer: OTHER }))
  await add(paid('p-8', A, `upload:${A}`, OWNER, { id: 'p-8:nonce' }))
  await add(paid(uuid(9), A, `upload:${A}`, OWNER, { id: `${OWNER.toUpperCase().replace('0X', '0x')}:${nonce()}` }))
  // a renewal: its purpose names the payment's own requestid and a time
  const renewal: PaymentRecord = { id: `${OWNER}:${nonce()}`, requestid: uuid(1), purpose: `renew:${uuid(1)}:1:${up.pin.pinnedUntil}`, payer: OWNER, amount: '99', network: NET, tx: '0x' + '7'.repeat(64), at: '2026-11-23T12:00:00.000Z', proof: 'cd'.repeat(32) }
  await ledger.renew(uuid(1), 1, renewal, () => new Date('2027-01-20T10:00:00.000Z'))
  out.push(renewal)
  return out
}

function reads (ledger: PinLedger): unknown {
  return { pins: [...ledger.all()], payments: [...ledger.allPayments()] }
}

const EXPORTS = [{ format: 'jsonl', withBlocks: true }, { format: 'csv', records: 'payments' }, { format: 'csv', records: 'pins' }]
async function exported (env: LedgerEnv, ledger: PinLedger): Promise<string[]> {
  const out: string[] = []
  for (const o of EXPORTS) out.push(await textOf(exportLedger(new LmdbLedger(env, ledger), parseExportOptions(o), NOW).chunks))
  return out
}

describe('payments keyed by their bytes', () => {
  it('reads a CID stored as bytes as the string the CID gives, v1 written directly in base32, v0 decoded', async () => {
    for (let len = 0; len <= 70; len++) {
      const digest = identity.digest(Uint8Array.from({ length: len }, (_, i) => (i * 37 + len * 11) & 255))
      for (const code of [0x55, 0x70, 0x71, 0x0129]) {
        const cid = CID.create(1, code, digest)
        expect(readCid(cid.bytes), cid.toString()).toBe(cid.toString())
      }
    }
    const v0 = CID.parse(V0)
    expect(readCid(v0.bytes)).toBe(V0)
    expect(readCid(CID.parse(A).bytes)).toBe(A)
  })

  it('keeps an x402 payment under its 52 bytes with its purpose coded, and reads every field back; other ids stay text', async () => {
    const { env, ledger } = await openTestLedger({ upgrade: true })
    const written = await writeLedger(ledger)
    for (const p of written) expect(ledger.payment(p.id), p.purpose).toEqual(p)
    // export order: ascending id (UTF-8 bytes), merged across both databases
    expect([...ledger.allPayments()]).toEqual([...written].sort((a, b) => Buffer.compare(Buffer.from(a.id), Buffer.from(b.id))))
    expect([...env.db<unknown>('payments').getKeys()].sort()).toEqual(['p-8:nonce', written[8]?.id].sort())

    const up = written[0] as PaymentRecord
    const key = paymentKey(up.id) as Buffer
    expect(key.length).toBe(52)
    const raw = paymentsBinary(env).getBinary(key) as Buffer
    // nothing as text: not the CID (the pin's own: not there at all), the time, the requestid, the hashes
    for (const text of [A, up.at, up.at.slice(0, 10), up.requestid, (up.tx as string).slice(2), up.proof, 'upload']) expect(raw.includes(text), text).toBe(false)
    expect(raw.length).toBeLessThan(125)
    expect((paymentsBinary(env).get(key) as unknown[])[2]).toEqual([1, null])
    // the pin's status, source and payment method as small numbers
    const rawPin = env.db<unknown>('pins').getBinary(uuid(1)) as Buffer
    for (const text of ['pinned', 'upload', 'x402']) expect(rawPin.includes(text), text).toBe(false)
    // and its asset as its index in the ledger's table of assets
    expect(rawPin.includes(Buffer.from(ASSET.slice(2), 'hex'))).toBe(false)
    expect(env.fact('assets')).toEqual([ASSET])
    // the pin's CID read from its bytes (what a payment's purpose needs) is what decoding the record gives
    const pins = env.db<StoredPin>('pins')
    for (const k of pins.getKeys()) expect(cidOfPacked(pins.getBinary(k) as Buffer), String(k)).toBe(cidOf(pins.get(k) as StoredPin))
    // what is not read back exactly as bytes or numbers stays as written
    expect(JSON.stringify(paymentsBinary(env).get(paymentKey((written[4] as PaymentRecord).id) as Buffer))).toContain('2026-11-20T10:00:00Z')
    expect(JSON.stringify(paymentsBinary(env).get(paymentKey((written[5] as PaymentRecord).id) as Buffer))).toContain('gift:for:someone')

    // a used payment is refused, for a new pin and for a renewal
    const again = paid(uuid(20), A, `upload:${A}`, OWNER, { id: up.id })
    await expect(ledger.create(again.pin, again.payment)).rejects.toThrow(PaymentReusedError)
    await expect(ledger.renew(uuid(4), 1, { ...again.payment, requestid: uuid(4) }, () => NOW)).rejects.toThrow(PaymentReusedError)

    // its export imported into a fresh ledger (pins in batches before their payments) exports the same
    const before = await exported(env, ledger)
    const fresh = await openTestLedger({ upgrade: true })
    await writeImport(async function * () { yield * (before[0] as string).split('\n') }, new LmdbLedger(fresh.env, fresh.ledger), { batchSize: 3, now: NOW })
    expect(await exported(fresh.env, fresh.ledger)).toEqual(before)
    expect((paymentsBinary(fresh.env).get(key) as unknown[])[2]).toEqual([1, null])
  })

  it('reads a layout-1 ledger the same before, during and after the upgrade (payments moved, pins rewritten), which resumes after an interruption; exports stay byte for byte the same', async () => {
    const { env, ledger } = await openTestLedger({ upgrade: true })
    const written = await writeLedger(ledger)
    await toLayout1(env, ledger)
    expect([...paymentsBinary(env).getKeys()]).toEqual([])
    expect([...env.db<unknown[]>('pins').getRange()].map(e => e.value[PIN_AT.status])).toContain('pinned')
    const old = new PinLedger(env)
    const before = reads(old)
    const exportsBefore = await exported(env, old)
    for (const p of written) expect(old.payment(p.id)).toEqual(p)

    // interrupted: the third batch of two fails inside its transaction (the process died there)
    const mid = new PinLedger(env) as unknown as { paymentsBinary: Database<unknown, Buffer>, movePaymentKeys: (batch: number) => Promise<void> }
    const put = mid.paymentsBinary.put.bind(mid.paymentsBinary)
    let puts = 0
    mid.paymentsBinary.put = ((k: Buffer, v: unknown) => { if (++puts === 5) throw new Error('died'); return put(k, v) }) as typeof put
    await expect(mid.movePaymentKeys(2)).rejects.toThrow('died')
    const moved = [...paymentsBinary(env).getKeys()].length
    // two batches, whole: their four payments, one of which keeps a text id (written[8] or p-8:nonce, as
    // the key order has it), so three moved; the third batch, which threw at its second put, left nothing
    // (its first put rolled back with it: LedgerEnv.transaction is all or none)
    expect(moved).toBe(3)
    expect(env.upgraded('compact:payment-keys')).toBe(false)
    const during = new PinLedger(env)
    expect(reads(during)).toEqual(before)
    expect(await exported(env, during)).toEqual(exportsBefore)
    // a used payment is refused whichever database holds it now
    for (const p of written.slice(0, 8)) {
      const again = paid(uuid(30), A, `upload:${A}`, OWNER, { id: p.id })
      await expect(during.create(again.pin, again.payment), p.id).rejects.toThrow(PaymentReusedError)
    }

    // the next start goes on
    await new PinLedger(env).upgrade()
    expect(env.upgraded('compact:payment-keys')).toBe(true)
    expect([...env.db<unknown>('payments').getKeys()].sort()).toEqual(['p-8:nonce', written[8]?.id].sort())
    for (const { value } of env.db<unknown[]>('payments').getRange()) expect(value[0]).toBe(2)
    // and the pins name their status, source, method and asset by number
    expect(env.upgraded('compact:pin-numbers')).toBe(true)
    for (const { value } of env.db<unknown[]>('pins').getRange()) {
      expect(typeof value[PIN_AT.status]).toBe('number')
      expect(typeof value[PIN_AT.source]).toBe('number')
      const ref = value[PIN_AT.payment]
      if (Array.isArray(ref)) expect(ref.slice(1).map(x => typeof x)).toEqual(['number', 'number'])
    }
    expect([...paymentsBinary(env).getKeys()].length).toBe(written.length - 2)
    const after = new PinLedger(env)
    expect(reads(after)).toEqual(before)
    expect(await exported(env, after)).toEqual(exportsBefore)
    for (const p of written) expect(after.payment(p.id)).toEqual(p)
    const again = paid(uuid(31), A, `upload:${A}`, OWNER, { id: (written[0] as PaymentRecord).id })
    await expect(after.create(again.pin, again.payment)).rejects.toThrow(PaymentReusedError)
  })
})
