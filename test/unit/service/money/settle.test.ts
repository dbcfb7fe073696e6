/**
 * settleNoted and the retry of a payment whose settlement had an uncertain
 * outcome, in-process on the real core and the dev chain. The gate here is the
 * real PaymentGate with a remote facilitator (--facilitator-url): the local
 * stand-in speaks x402's facilitator protocol over loopback, backed by the real
 * facilitator on the chain, and can lose its settle answer after settling on
 * chain (the money moved) or fail before settling (it did not). Either way the
 * request answers 503 and keeps its settlement note, marked uncertain; the
 * retry with the same payment reconciles the note against the chain at once.
 */
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startDevChain, usdcBalance, type DevChain } from '../../../../scripts/devchain/index.mjs'
import { rawCid } from '../../../../scripts/peer/index.mjs'
import { CommitLock } from '../../../../src/ipfs/commit-lock.js'
import type { Logger } from '../../../../src/kernel/log.js'
import { LedgerUnavailableError } from '../../../../src/ledger/errors.js'
import { addMonths } from '../../../../src/ledger/clock.js'
import type { PinRecord } from '../../../../src/ledger/records.js'
import { newRequestid } from '../../../../src/ledger/requestid.js'
import { identifyPayment, type PaymentGate, type Quote, type VerifiedPayment } from '../../../../src/payment/gate.js'
import { settleNoted } from '../../../../src/service/payments/settle.js'
import { createPin, type PinWrite } from '../../../../src/service/pins/pin-create.js'
import { parsePinRequest } from '../../../../src/service/pins/pin-request.js'
import { renewPin } from '../../../../src/service/pins/pin-renew.js'
import { upload, type UploadInput } from '../../../../src/service/uploads/upload.js'
import { startFacilitatorStandIn, type StandIn } from '../../../helpers/facilitator-standin.js'
import { pinRecord } from '../../../helpers/records.js'
import { all, fileOf, filesUnder, openService, payFor, PUBLIC_URL, pinsOf, randomFile, startGate, testLogger, type Service } from './harness.js'

let chain: DevChain
let standIn: StandIn
let gate: PaymentGate
let log: Logger
let s: Service
const opened: Service[] = []
/** how the stand-in's next settle call fails: after settling on chain, before, or not at all */
let failSettle: 'after' | 'before' | undefined

const payerKey = (): `0x${string}` => (chain.payers[0] as { privateKey: `0x${string}` }).privateKey
const owner = (): string => (chain.payers[0] as { address: string }).address.toLowerCase()
const idOf = (payment: string): string => (identifyPayment(payment) as { id: string }).id

beforeAll(async () => {
  chain = await startDevChain({ payers: 1, pruneHistory: true })
  standIn = await startFacilitatorStandIn(chain, 0, {
    beforeSettle: () => { if (failSettle === 'before') { failSettle = undefined; throw new Error('the facilitator went away before settling') } },
    afterSettle: () => { if (failSettle === 'after') { failSettle = undefined; throw new Error('the answer was lost') } }
  })
  log = testLogger()
  gate = await startGate(chain, log, { kind: 'remote', url: standIn.url })
})
afterAll(async () => {
  gate?.stop()
  await standIn?.close()
  await chain?.stop()
})
beforeEach(async () => {
  failSettle = undefined
  s = await openService(chain, gate, log)
  opened.push(s)
})
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close()
})

/** a verified payment of `amount` for a quote, as the gate decides it */
async function verified (amount: bigint): Promise<VerifiedPayment> {
  const quote: Quote = { amount, months: 1, bytes: amount, resourceUrl: `${PUBLIC_URL}/upload`, description: 'a test quote' }
  const header = await payFor(chain, payerKey(), Promise.reject(await gate.challenge(quote, 'pay')))
  const d = await gate.decide(header, quote, async (id) => await s.core.ledger.pins.paymentUsed(id))
  expect(d.type).toBe('verified')
  return (d as { payment: VerifiedPayment }).payment
}

describe('settleNoted', () => {
  it('settled: the note, written before, stays until the record it paid for removes it in the same transaction', async () => {
    const p = await verified(7000n)
    const before = await usdcBalance(chain, chain.payTo)

    const r = await settleNoted(gate, s.core.ledger.pins, p, 'pin:test:1')

    expect(r.ok).toBe(true)
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(7000n)
    const note = await s.core.ledger.notes.get(p.id)
    expect(note).toMatchObject({ paymentId: p.id, payer: p.payer, amount: '7000', purpose: 'pin:test:1' })
    expect(note?.settleFailedAt).toBeUndefined()
    expect(Number(note?.validBefore)).toBeGreaterThan(Date.now() / 1000)
    if (!r.ok) throw new Error('not settled')

    const cid = rawCid(randomBytes(64)).toString()
    const pin = pinRecord(newRequestid(), cid, { owner: p.payer, payment: { id: p.id, payer: p.payer, amount: '7000', network: r.network, asset: chain.usdc, method: 'x402', tx: r.tx } })
    await s.core.ledger.pins.create(pin, { id: p.id, requestid: pin.requestid, purpose: 'pin:test:1', payer: p.payer, amount: '7000', network: r.network, tx: r.tx, at: new Date().toISOString(), proof: p.proof })
    expect(await s.core.ledger.notes.get(p.id)).toBeUndefined()
    expect(await s.core.ledger.pins.paymentUsed(p.id)).toBe(true)
  })

  it('uncertain (the answer lost once the money moved): the note stays, marked uncertain; the payment is not recorded as used', async () => {
    const p = await verified(8000n)
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'after'

    const r = await settleNoted(gate, s.core.ledger.pins, p, 'pin:test:1')

    expect(r).toMatchObject({ ok: false, serverSide: true, uncertain: true })
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(8000n)
    const note = await s.core.ledger.notes.get(p.id)
    expect(Date.parse(note?.settleFailedAt ?? '')).toBeGreaterThan(Date.now() - 60_000)
    expect(await s.core.ledger.pins.paymentUsed(p.id)).toBe(false)
  })
})

describe('a retry after an uncertain settlement reconciles its note', () => {
  const uploadOf = (bytes: Uint8Array, payment?: string): UploadInput => ({ months: 1, fileBytes: bytes.length, file: fileOf(bytes), ...(payment != null ? { payment } : {}) })

  it('upload, the money moved: 503 and the note keeps the staged file; the retry gets the pin recorded from it, charged once', async () => {
    const bytes = randomFile(200_000)
    const payment = await payFor(chain, payerKey(), upload(uploadOf(bytes), s.upload))
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'after'

    await expect(upload(uploadOf(bytes, payment), s.upload)).rejects.toMatchObject({ name: 'UnavailableError' })

    const note = await s.core.ledger.notes.get(idOf(payment))
    expect(note?.settleFailedAt).toBeTypeOf('string')
    const staged = note?.fulfil?.upload?.staging as string
    expect(existsSync(join(s.core.paths.staging, staged))).toBe(true)
    expect(await s.core.ledger.pins.paymentUsed(idOf(payment))).toBe(false)
    expect(await pinsOf(s, owner())).toEqual([])
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(200_000n)

    const retry = await upload(uploadOf(bytes, payment), s.upload)

    expect(retry.replayed).toBe(true)
    expect(retry.result).toMatchObject({ cid: rawCid(bytes).toString(), size: 200_000, owner: owner() })
    expect(await pinsOf(s, owner())).toEqual([retry.result.requestid])
    expect(await s.core.ledger.pins.paymentUsed(idOf(payment))).toBe(true)
    expect(await all(s.core.ledger.notes.all())).toEqual([])
    expect(filesUnder(s.core.paths.staging)).toEqual([])
    expect((await s.core.ledger.pins.refCount(retry.result.cid)) > 0).toBe(true)
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(200_000n)
  })

  it('upload, paid, then the ledger\'s block fence does not answer before the commit: 503, the note keeps the staged file; the retry records the pin, charged once', async () => {
    const bytes = randomFile(90_000)
    const payment = await payFor(chain, payerKey(), upload(uploadOf(bytes), s.upload))
    const before = await usdcBalance(chain, chain.payTo)
    // a shared ledger's fence (front ends on PostgreSQL) whose database went away between the settlement and the commit
    const fenceDown = new CommitLock({
      mark: async () => { throw new LedgerUnavailableError('the ledger\'s database is unreachable right now') },
      unmark: async () => {},
      unmarkOwner: async () => 0,
      closed: async (_names, fn) => await fn(new Set())
    })

    await expect(upload(uploadOf(bytes, payment), { ...s.upload, lock: fenceDown })).rejects.toMatchObject({ name: 'LedgerUnavailableError' })

    const staged = (await s.core.ledger.notes.get(idOf(payment)))?.fulfil?.upload?.staging as string
    expect(existsSync(join(s.core.paths.staging, staged))).toBe(true)
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(90_000n)
    const retry = await upload(uploadOf(bytes, payment), s.upload)
    expect(retry.replayed).toBe(true)
    expect(await pinsOf(s, owner())).toEqual([retry.result.requestid])
    expect(await all(s.core.ledger.notes.all())).toEqual([])
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(90_000n)
  })

  it('upload, the money did not move: the retry does the upload and settles it, once; the first attempt\'s staged file goes', async () => {
    const bytes = randomFile(150_000)
    const payment = await payFor(chain, payerKey(), upload(uploadOf(bytes), s.upload))
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'before'

    await expect(upload(uploadOf(bytes, payment), s.upload)).rejects.toMatchObject({ name: 'UnavailableError' })
    expect((await s.core.ledger.notes.get(idOf(payment)))?.settleFailedAt).toBeTypeOf('string')
    expect(await usdcBalance(chain, chain.payTo)).toBe(before)

    const retry = await upload(uploadOf(bytes, payment), s.upload)

    expect(retry.replayed).toBe(false)
    expect(retry.settlement).toBeTypeOf('string')
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(150_000n)
    expect(await pinsOf(s, owner())).toEqual([retry.result.requestid])
    expect(await all(s.core.ledger.notes.all())).toEqual([])
    expect(filesUnder(s.core.paths.staging)).toEqual([])
  })

  it('upload, the money moved: two retries at once record one pin, both answered with it', async () => {
    const bytes = randomFile(120_000)
    const payment = await payFor(chain, payerKey(), upload(uploadOf(bytes), s.upload))
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'after'
    await expect(upload(uploadOf(bytes, payment), s.upload)).rejects.toMatchObject({ name: 'UnavailableError' })

    const [a, b] = await Promise.all([upload(uploadOf(bytes, payment), s.upload), upload(uploadOf(bytes, payment), s.upload)])

    expect([a.replayed, b.replayed]).toEqual([true, true])
    expect(a.result.requestid).toBe(b.result.requestid)
    expect(await pinsOf(s, owner())).toEqual([a.result.requestid])
    expect(await all(s.core.ledger.notes.all())).toEqual([])
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(120_000n)
  })

  it('upload, the money did not move: two retries at once make one upload and one settlement', async () => {
    const bytes = randomFile(110_000)
    const payment = await payFor(chain, payerKey(), upload(uploadOf(bytes), s.upload))
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'before'
    await expect(upload(uploadOf(bytes, payment), s.upload)).rejects.toMatchObject({ name: 'UnavailableError' })

    const [a, b] = await Promise.all([upload(uploadOf(bytes, payment), s.upload), upload(uploadOf(bytes, payment), s.upload)])

    expect([a.replayed, b.replayed].sort()).toEqual([false, true])
    expect(a.result.requestid).toBe(b.result.requestid)
    expect(await pinsOf(s, owner())).toEqual([a.result.requestid])
    expect(await all(s.core.ledger.notes.all())).toEqual([])
    expect(filesUnder(s.core.paths.staging)).toEqual([])
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(110_000n)
  })

  it('replace, the money moved: the old pin stays live until the retry records the replacement', async () => {
    const first: PinWrite = { request: parsePinRequest({ cid: rawCid(randomBytes(64)).toString() }), months: 1, claimedBytes: 40_000, client: '127.0.0.1' }
    const created = await createPin({ ...first, paymentHeader: await payFor(chain, payerKey(), createPin(first, s.pins)) }, s.pins)
    const auth = await s.tokens.verify((created.token as { token: string }).token)
    const old = await s.core.ledger.pins.get(created.pin.requestid) as PinRecord
    const next = rawCid(randomBytes(64)).toString()
    const w: PinWrite = { request: parsePinRequest({ cid: next }), months: 1, claimedBytes: 40_000, client: '127.0.0.1', auth, replaces: old }
    const payment = await payFor(chain, payerKey(), createPin(w, s.pins))
    failSettle = 'after'

    await expect(createPin({ ...w, paymentHeader: payment }, s.pins)).rejects.toMatchObject({ name: 'UnavailableError' })
    expect(await s.core.ledger.pins.get(old.requestid)).toEqual(old)
    expect(await pinsOf(s, owner())).toEqual([old.requestid])

    const retry = await createPin({ ...w, paymentHeader: payment }, s.pins)
    expect(await s.core.ledger.pins.get(retry.pin.requestid)).toMatchObject({ cid: next, replaces: old.requestid })
    expect(await s.core.ledger.pins.get(old.requestid)).toMatchObject({ removed: { why: 'replaced' }, replacedBy: retry.pin.requestid })
    expect(await pinsOf(s, owner())).toEqual([retry.pin.requestid])
    expect(await all(s.core.ledger.notes.all())).toEqual([])
  })

  it('POST /pins, the money moved: the retry gets the pin; the same payment for another CID stays refused', async () => {
    const cid = rawCid(randomBytes(64)).toString()
    const w: PinWrite = { request: parsePinRequest({ cid }), months: 1, claimedBytes: 40_000, client: '127.0.0.1' }
    const payment = await payFor(chain, payerKey(), createPin(w, s.pins))
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'after'

    await expect(createPin({ ...w, paymentHeader: payment }, s.pins)).rejects.toMatchObject({ name: 'UnavailableError' })
    expect((await s.core.ledger.notes.get(idOf(payment)))?.settleFailedAt).toBeTypeOf('string')
    expect(await pinsOf(s, owner())).toEqual([])

    const other: PinWrite = { ...w, request: parsePinRequest({ cid: rawCid(randomBytes(64)).toString() }), paymentHeader: payment }
    await expect(createPin(other, s.pins)).rejects.toMatchObject({ name: 'PaymentRequiredError' })
    expect(await s.core.ledger.notes.get(idOf(payment))).toBeDefined()

    const retry = await createPin({ ...w, paymentHeader: payment }, s.pins)
    expect(retry.pin.pin.cid).toBe(cid)
    expect(await pinsOf(s, owner())).toEqual([retry.pin.requestid])
    expect(await all(s.core.ledger.notes.all())).toEqual([])
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(40_000n)
  })

  it('renew, the money moved: the retry renews once, by the months paid', async () => {
    const w: PinWrite = { request: parsePinRequest({ cid: rawCid(randomBytes(64)).toString() }), months: 1, claimedBytes: 40_000, client: '127.0.0.1' }
    const created = await createPin({ ...w, paymentHeader: await payFor(chain, payerKey(), createPin(w, s.pins)) }, s.pins)
    const auth = await s.tokens.verify((created.token as { token: string }).token)
    const pin = await s.core.ledger.pins.get(created.pin.requestid) as PinRecord
    const renew = { requestid: pin.requestid, months: 2, auth }
    const payment = await payFor(chain, payerKey(), renewPin(renew, s.pins))
    const before = await usdcBalance(chain, chain.payTo)
    failSettle = 'after'

    await expect(renewPin({ ...renew, paymentHeader: payment }, s.pins)).rejects.toMatchObject({ name: 'UnavailableError' })
    expect(await s.core.ledger.pins.get(pin.requestid)).toEqual(pin)

    await renewPin({ ...renew, paymentHeader: payment }, s.pins)
    await renewPin({ ...renew, paymentHeader: payment }, s.pins)

    // calendar months in UTC, the day clamped to the month's last (Dec 29 + 2 = Feb 28)
    const until = addMonths(new Date(pin.pinnedUntil), 2)
    expect(await s.core.ledger.pins.get(pin.requestid)).toMatchObject({ months: 3, pinnedUntil: until.toISOString() })
    expect(await all(s.core.ledger.notes.all())).toEqual([])
    // bytesCoveredBy(40,000 atomic for a month) = 40,000 bytes; two months of them
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(80_000n)
  })
})

describe('the wallet token cannot be signed (signing keys in a ledger that is away)', () => {
  const uploadOf = (bytes: Uint8Array, payment?: string): UploadInput => ({ months: 1, fileBytes: bytes.length, file: fileOf(bytes), ...(payment != null ? { payment } : {}) })
  /** the service's token signer, its key store unreadable */
  const keysAway = (): Service['tokens'] => Object.assign(Object.create(s.tokens) as Service['tokens'], {
    issue: async () => { throw new LedgerUnavailableError() }
  })

  it('upload: 503 before the money moves, nothing staged or noted; the same payment then uploads, charged once', async () => {
    const bytes = randomFile(70_000)
    const payment = await payFor(chain, payerKey(), upload(uploadOf(bytes), s.upload))
    const before = await usdcBalance(chain, chain.payTo)
    await expect(upload(uploadOf(bytes, payment), { ...s.upload, tokens: keysAway() })).rejects.toMatchObject({ name: 'LedgerUnavailableError' })
    expect(await usdcBalance(chain, chain.payTo)).toBe(before)
    expect(await all(s.core.ledger.notes.all())).toEqual([])
    expect(filesUnder(s.core.paths.staging)).toEqual([])
    expect(await pinsOf(s, owner())).toEqual([])
    const done = await upload(uploadOf(bytes, payment), s.upload)
    expect(done.replayed).toBe(false)
    expect(done.token?.token).toBeTypeOf('string')
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(70_000n)
  })

  it('POST /pins: 503 before the money moves; the same payment then pins, charged once', async () => {
    const cid = rawCid(randomBytes(64)).toString()
    const w: PinWrite = { request: parsePinRequest({ cid }), months: 1, claimedBytes: 40_000, client: '127.0.0.1' }
    const payment = await payFor(chain, payerKey(), createPin(w, s.pins))
    const before = await usdcBalance(chain, chain.payTo)
    await expect(createPin({ ...w, paymentHeader: payment }, { ...s.pins, tokens: keysAway() })).rejects.toMatchObject({ name: 'LedgerUnavailableError' })
    expect(await usdcBalance(chain, chain.payTo)).toBe(before)
    expect(await all(s.core.ledger.notes.all())).toEqual([])
    expect(await pinsOf(s, owner())).toEqual([])
    const done = await createPin({ ...w, paymentHeader: payment }, s.pins)
    expect(done.token?.token).toBeTypeOf('string')
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(40_000n)
  })
})
