/**
 * The compact record layout (src/ledger/lmdb/stored.ts) on real LMDB: pins,
 * owner summaries and payments are stored as arrays without what their key or
 * the payments database already holds, and read back whole. A ledger written
 * in the old layout (maps, as pind wrote them before) reads the same before
 * and after the `compact:records` upgrade, exports byte for byte the same, and
 * its export imported into a fresh ledger exports the same again.
 */
import { join } from 'node:path'
import type { Database } from 'lmdb'
import { afterEach, describe, expect, it } from 'vitest'
import { openLedgerEnv, type LedgerEnv } from '../../../src/ledger/lmdb/open.js'
import { PinLedger, summaryOf } from '../../../src/ledger/lmdb/pins.js'
import { CID } from 'multiformats/cid'
import type { PaymentRecord, PinRecord } from '../../../src/ledger/records.js'
import { exportLedger, parseExportOptions } from '../../../src/service/admin/ledger-export.js'
import { writeImport } from '../../../src/service/admin/ledger-import.js'
import { LmdbLedger } from '../../../src/ledger/lmdb/ledger.js'
import { closeTestLedgers, openTestLedger, textOf } from '../../helpers/ledger.js'
import { tempDir } from '../../helpers/pind.js'
import { ASSET, OWNER, paidPin, pinRecord } from '../../helpers/records.js'
import { paymentKey } from '../../../src/ledger/lmdb/stored.js'

const A = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const B = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
const C = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
const OTHER = '0x' + 'b2'.repeat(20)
const NOW = new Date('2026-11-24T00:00:00.000Z')
const DAY = 86400_000
/** a requestid as serve makes them (UUIDv7) */
const R1 = '019ab3f1-2c4d-7e8f-9a0b-1c2d3e4f5a6b'

const envs: LedgerEnv[] = []
afterEach(async () => {
  for (const e of envs.splice(0)) await e.close()
  await closeTestLedgers()
})

/** the x402 payments' database (keyed by payer and nonce, 52 bytes) */
function paymentsBinary (env: LedgerEnv): Database<unknown, Buffer> {
  return env.db<unknown>('payments-binary', { keyEncoding: 'binary' }) as Database<unknown, Buffer>
}

let seq = 0
/** an x402 upload as serve records it, named, sized and live for 30 days: the pin's payment copy and the payment record agree */
function paidUpload (requestid: string, cid: string, owner = OWNER, extra: Partial<PinRecord> = {}): { pin: PinRecord, payment: PaymentRecord } {
  const n = ++seq
  return paidPin(requestid, cid, {
    owner, network: 'eip155:31337',
    pin: { name: `file-${n}.bin`, meta: { k: 'v' }, statusDetails: 'uploaded', pinnedUntil: new Date(NOW.getTime() + 30 * DAY).toISOString(), dagSize: 1000 + n, fileSize: 900 + n, ...extra }
  })
}

/** what every read path of the ledger answers, for comparison */
function reads (ledger: PinLedger): unknown {
  const pins = [...ledger.all()]
  return {
    pins,
    byId: pins.map(p => ledger.get(p.requestid)),
    payments: [...ledger.allPayments()],
    paymentById: [...ledger.allPayments()].map(p => ledger.payment(p.id)),
    summaries: [OWNER, OTHER].map(o => [...ledger.summariesByOwner(o)]),
    states: [OWNER, OTHER].map(o => [...ledger.statesByOwner(o)]),
    newestFirst: [OWNER, OTHER].map(o => [...ledger.byOwnerNewestFirst(o)]),
    allSummaries: [...ledger.allSummaries()],
    counts: ledger.countByStatus(NOW),
    live: [A, B, C].map(c => [ledger.hasLivePin(c, NOW), ledger.livePinsOf(c, NOW)]),
    pending: ledger.pendingFetches()
  }
}

async function exported (env: LedgerEnv, ledger: PinLedger): Promise<string[]> {
  const out: string[] = []
  for (const o of EXPORTS) out.push(await textOf(exportLedger(new LmdbLedger(env, ledger), parseExportOptions(o), NOW).chunks))
  return out
}

const EXPORTS = [{ format: 'jsonl', withBlocks: true }, { format: 'csv', records: 'pins' }, { format: 'csv', records: 'payments' }]

/**
 * A ledger as pind wrote it before the compact layout: every record a map
 * (a pin with its requestid and the whole of its payment, a summary with its
 * id, a payment with its id), its indexes, and the upgrades before this one done.
 */
async function writeOldLedger (env: LedgerEnv): Promise<void> {
  const live = paidUpload('01-live', A)
  const removed = paidUpload('02-removed', B, OWNER, { removed: { at: '2026-11-21T00:00:00.000Z', why: 'unpinned' } })
  const other = paidUpload('03-other', A, OTHER)
  const old = paidUpload('04-replaced', C, OWNER, { removed: { at: '2026-11-22T00:00:00.000Z', why: 'replaced' }, replacedBy: '05-replacement' })
  const replacement = paidUpload('05-replacement', B, OWNER, { replaces: '04-replaced', status: 'queued', source: 'pin', maxBytes: 5000, origins: ['/ip4/127.0.0.1/tcp/4001'], fetch: { attempts: 2, giveUpAt: '2026-11-25T00:00:00.000Z', lastError: 'timeout' } })
  const token = pinRecord('06-token', C, { owner: OWNER, payment: { id: 'operator-token:jti-1', payer: OWNER, amount: '0', network: 'eip155:31337', asset: ASSET, method: 'operator-token' } })
  // imported from elsewhere: a `created` its microseconds do not spell, a pinned_until with no milliseconds
  const odd = paidUpload('07-odd', B, OTHER, { created: '2026-11-20T10:00:00+00:00', createdUs: Date.parse('2026-11-20T10:00:00Z') * 1000, pinnedUntil: '2026-12-30T00:00:00Z' })
  const down = paidUpload('08-down', C, OTHER, { status: 'failed', statusDetails: 'removed by the operator', takedown: { at: '2026-11-23T00:00:00.000Z', reason: 'abuse' } })
  const renewal: PaymentRecord = { id: `${OWNER}:0x${'9'.repeat(64)}`, requestid: '01-live', purpose: `renew:01-live:1:${live.pin.pinnedUntil}`, payer: OWNER, amount: '777', network: 'eip155:31337', tx: '0x' + '7'.repeat(64), at: '2026-11-23T12:00:00.000Z', proof: 'a'.repeat(64) }
  // a payment whose settlement time differs from the pin's copy: the pin keeps its whole copy
  const drift = paidUpload('09-drift', A, OWNER)
  drift.payment.at = '2026-11-20T11:11:11.111Z'
  // a requestid as serve makes them (UUIDv7: stored as its bytes), of a CIDv0 (stored as its bytes, read back as v0)
  const uuid = paidUpload('0198f0a1-0000-7000-8000-000000000001', 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', OTHER)
  const all = [live, removed, other, old, replacement, odd, down, drift, uuid]
  await env.transaction(() => {
    const pins = env.db<PinRecord>('pins')
    const byOwner = env.db<unknown>('pins-by-owner')
    const byCid = env.db<string>('pins-by-cid')
    const byExpiry = env.db<string>('pins-by-expiry')
    const payments = env.db<PaymentRecord>('payments')
    const fetchQueue = env.db<number>('fetch-queue')
    const pinBlocks = env.db<string[]>('pin-blocks')
    const blockRefs = env.db<number>('block-refs')
    for (const pin of [...all.map(x => x.pin), token]) {
      pins.put(pin.requestid, pin)
      // the old summary: every field, removed or not
      byOwner.put([pin.owner, pin.createdUs, pin.requestid], { id: pin.requestid, cid: CID.parse(pin.cid).toV1().toString(), status: pin.status, until: Date.parse(pin.pinnedUntil), removed: pin.removed != null, ...(pin.name != null ? { name: pin.name } : {}), meta: pin.meta })
      byCid.put([CID.parse(pin.cid).toV1().toString(), pin.requestid], pin.owner)
      if (pin.removed == null) byExpiry.put([Date.parse(pin.pinnedUntil), pin.requestid], pin.requestid)
      if (pin.status === 'queued') fetchQueue.put(pin.requestid, pin.createdUs)
    }
    for (const p of [...all.map(x => x.payment), renewal]) payments.put(p.id, p)
    for (const [id, blocks] of [['01-live', [A]], ['03-other', [A]], ['06-token', [C]], ['07-odd', [B]], ['09-drift', [A]], ['04-replaced', [C]]] as Array<[string, string[]]>) {
      pinBlocks.put(id, blocks)
      for (const b of blocks) blockRefs.put(b, (blockRefs.get(b) ?? 0) + 1)
    }
    for (const u of ['index:owner-summaries', 'index:pins-by-expiry', 'repair:replacement-chains', 'index:provide-keys'] as const) env.setUpgraded(u)
  })
}

async function openEnv (dir: string): Promise<LedgerEnv> {
  const env = await openLedgerEnv(join(dir, 'ledger.mdb'))
  envs.push(env)
  return env
}

describe('compact ledger records', () => {
  it('stores a pin with a reference to the payment record the ledger holds, and reads it back whole', async () => {
    const { env, ledger } = await openTestLedger({ upgrade: true })
    const { pin, payment } = paidUpload(R1, A)
    await ledger.create(pin, payment, [A])
    const stored = env.db<unknown>('pins').get(R1)
    // an array, not a map: no field names, no requestid, the payment as [id without its payer, asset, method]
    expect(Array.isArray(stored)).toBe(true)
    const flat = JSON.stringify(stored)
    expect(flat).not.toContain(R1.slice(0, 8))
    expect(flat).not.toContain(payment.tx)
    expect(flat).not.toContain('payer')
    // hex, CIDs as bytes: the owner's address, the payment's nonce and the CID are not in the record as text
    const raw = env.db<unknown>('pins').getBinary(R1) as Buffer
    for (const text of [OWNER.slice(2), payment.id.slice(payment.id.indexOf(':') + 3), A, ASSET.slice(2)]) expect(raw.includes(text), text).toBe(false)
    expect(raw.length).toBeLessThan(220)
    const rawPayment = paymentsBinary(env).getBinary(paymentKey(payment.id) as Buffer) as Buffer
    for (const text of [(payment.tx as string).slice(2), payment.proof, R1, R1.slice(0, 8), OWNER.slice(2)]) expect(rawPayment.includes(text), text).toBe(false)
    expect(ledger.get(R1)).toEqual(pin)
    expect(ledger.payment(payment.id)).toEqual(payment)
    expect(Array.isArray(paymentsBinary(env).get(paymentKey(payment.id) as Buffer))).toBe(true)
    expect(Array.isArray(env.db<unknown>('pins-by-owner').get([OWNER, pin.createdUs, R1]))).toBe(true)
    expect([...ledger.summariesByOwner(OWNER)]).toEqual([summaryOf(pin)])
    expect(env.db<unknown>('pins-by-cid').get([A, R1])).toBe(1) // the key is the entry: no owner repeated

    // through a renewal (another payment) and a removal the pin still reads whole
    const renewal: PaymentRecord = { ...payment, id: `${OWNER}:0x${'9'.repeat(64)}`, amount: '5', purpose: `renew:${R1}`, at: NOW.toISOString() }
    const until = new Date(Date.parse(pin.pinnedUntil) + 30 * DAY)
    await ledger.renew(R1, 1, renewal, () => until)
    await ledger.remove(R1, 'unpinned', NOW)
    // the removal takes the room kept for it: the record stays the same size (a record that grows splits a full page)
    expect((env.db<unknown>('pins').getBinary(R1) as Buffer).length).toBe(raw.length)
    expect(ledger.get(R1)).toEqual({ ...pin, months: 2, pinnedUntil: until.toISOString(), removed: { at: NOW.toISOString(), why: 'unpinned' } })
    expect(ledger.payment(renewal.id)).toEqual(renewal)
    // a removed pin leaves the owner and CID indexes: every listing, takedown and liveness check skips it
    expect([...ledger.summariesByOwner(OWNER)]).toEqual([])
    expect(env.db<unknown>('pins-by-owner').get([OWNER, pin.createdUs, R1])).toBeUndefined()
    expect(env.db<unknown>('pins-by-cid').get([A, R1])).toBeUndefined()
    expect(ledger.requestidsOfCid(A)).toEqual([])

    // a pin with no payment record (operator token) keeps the whole of its payment
    const token = pinRecord('t1', B, { owner: OWNER, payment: { id: 'operator-token:j', payer: OWNER, amount: '0', network: 'eip155:31337', asset: ASSET, method: 'operator-token' } })
    await ledger.create(token)
    expect(ledger.get('t1')).toEqual(token)
    expect(JSON.stringify(env.db<unknown>('pins').get('t1'))).toContain('"amount":"0"')
    expect(ledger.countByStatus(NOW)).toMatchObject({ pinned: 1, removed: 1 })
  })

  it('refuses a record in a layout it does not know instead of reading its fields in the wrong places', async () => {
    const { env, ledger } = await openTestLedger({ upgrade: true })
    const { pin, payment } = paidUpload(R1, A)
    await ledger.create(pin, payment, [A])
    const pins = env.db<unknown[]>('pins')
    const stored = pins.get(R1) as unknown[]
    await pins.put(R1, [2, ...stored.slice(1)])
    expect(() => ledger.get(R1)).toThrow('ledger: a record in layout 2; this pind reads layout 1')
    const payments = paymentsBinary(env)
    const key = paymentKey(payment.id) as Buffer
    await payments.put(key, [3, ...(payments.get(key) as unknown[]).slice(1)])
    expect(() => ledger.payment(payment.id)).toThrow('ledger: a record in layout 3; this pind reads layout 1 and 2')
  })

  it('reads an old-layout ledger the same before and after the upgrade, exports it byte for byte the same, and its import exports the same', async () => {
    const dir = tempDir('pind-compact-')
    let env = await openEnv(dir)
    await writeOldLedger(env)
    const before = reads(new PinLedger(env))
    const exportsBefore = await exported(env, new PinLedger(env))
    const sizeOf = (): number => ['pins', 'pins-by-owner', 'payments'].reduce((a, n) => {
      const db = env.db<unknown>(n)
      let bytes = 0
      for (const key of db.getKeys()) bytes += (db.getBinary(key) as Buffer).length
      return a + bytes
    }, 0)
    const oldSize = sizeOf()

    // in transactions of 4 records (the ledger has 10 pins, 11 payments): every batch boundary is crossed
    await (new PinLedger(env) as unknown as { compactRecords: (batch: number) => Promise<void> }).compactRecords(4)
    for (const n of ['pins', 'pins-by-owner', 'payments']) expect([...env.db<unknown>(n).getRange()].filter(e => !Array.isArray(e.value)).map(e => e.key), n).toEqual([])
    await new PinLedger(env).upgrade()
    expect(env.upgraded('compact:records')).toBe(true)
    for (const n of ['pins', 'pins-by-owner', 'payments']) {
      for (const { value } of env.db<unknown>(n).getRange()) expect(Array.isArray(value), n).toBe(true)
    }
    expect(new Set([...env.db<unknown>('pins-by-cid').getRange()].map(e => e.value))).toEqual(new Set([1]))
    // removed pins left the CID index
    expect([...env.db<unknown>('pins-by-cid').getKeys()].map(k => (k as unknown[])[1]).sort()).toEqual(['01-live', '03-other', '05-replacement', '06-token', '07-odd', '08-down', '09-drift', '0198f0a1-0000-7000-8000-000000000001'].sort())
    // the pins whose payment record agrees refer to it; the operator-token pin and the drifted one keep theirs
    const whole = [...env.db<unknown>('pins').getRange()].filter(e => JSON.stringify(e.value).includes('"amount"')).map(e => e.key)
    expect(whole).toEqual(['06-token', '09-drift'])
    expect(sizeOf()).toBeLessThan(oldSize * 0.5)
    // removed pins left the owner index; the others are there
    expect([...env.db<unknown>('pins-by-owner').getKeys()].map(k => (k as unknown[])[2]).sort()).toEqual(['01-live', '03-other', '05-replacement', '06-token', '07-odd', '08-down', '09-drift', '0198f0a1-0000-7000-8000-000000000001'].sort())

    const ledger = new PinLedger(env)
    expect(reads(ledger)).toEqual(before)
    expect(await exported(env, ledger)).toEqual(exportsBefore)

    // and after a restart (upgrade again: nothing to do)
    await env.close()
    envs.splice(envs.indexOf(env), 1)
    env = await openEnv(dir)
    const reopened = new PinLedger(env)
    await reopened.upgrade()
    expect(reads(reopened)).toEqual(before)
    expect(await exported(env, reopened)).toEqual(exportsBefore)

    // the export imported into a fresh ledger, in batches that put pins before their payments, exports the same
    const jsonl = exportsBefore[0] as string
    const fresh = await openTestLedger({ upgrade: true })
    await writeImport(async function * () { yield * jsonl.split('\n') }, new LmdbLedger(fresh.env, fresh.ledger), { batchSize: 3, now: NOW })
    expect(await exported(fresh.env, fresh.ledger)).toEqual(exportsBefore)
    const refs = [...fresh.env.db<unknown>('pins').getRange()].filter(e => !JSON.stringify(e.value).includes('"amount"')).length
    expect(refs).toBe(8) // all but the operator-token pin and the drifted one refer to their payment record
  })
})
