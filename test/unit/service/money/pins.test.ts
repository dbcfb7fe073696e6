/**
 * POST /pins, POST /pins/{requestid} (replace), POST /pins/{requestid}/renew
 * and the owner's reads (GET /pins, GET and DELETE /pins/{requestid}) as use
 * cases, in-process on the real core, the real payment gate (embedded
 * facilitator) and the dev chain: a payment buys one pin, once; refusals and
 * failed settlements charge nothing and change nothing; a replacement lets the
 * old pin go only once it is paid, and its blocks only once the new pin is
 * pinned; a renewal extends pinned_until by the months paid, at the price of
 * the bytes the pin was first priced on.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { usdcBalance, type DevChain } from '../../../../scripts/devchain/index.mjs'
import { rawCid } from '../../../../scripts/peer/index.mjs'
import type { VerifiedToken } from '../../../../src/auth/tokens.js'
import { ConflictError, PaymentRequiredError } from '../../../../src/kernel/errors.js'
import type { Logger } from '../../../../src/kernel/log.js'
import { addMonths } from '../../../../src/ledger/clock.js'
import type { PinRecord } from '../../../../src/ledger/records.js'
import { identifyPayment, MAX_CHALLENGES, type PaymentGate, type Quote } from '../../../../src/payment/gate.js'
import { bytesCoveredBy, priceFor } from '../../../../src/payment/pricing.js'
import { createPin, MAX_QUOTES, type PinWrite } from '../../../../src/service/pins/pin-create.js'
import { parsePinRequest } from '../../../../src/service/pins/pin-request.js'
import { renewPin } from '../../../../src/service/pins/pin-renew.js'
import { upload } from '../../../../src/service/uploads/upload.js'
import { all, deadS3, fileOf, moneyState, moneyHooks, payFor, PIN_MAX_BYTES, pinsOf, PRICES, randomFile, setEth, type MoneyContext, type Service } from './harness.js'

let chain: DevChain
let gate: PaymentGate
let log: Logger
let s: Service

const payer = (i = 0): { key: `0x${string}`, address: `0x${string}` } => {
  const p = chain.payers[i] as { privateKey: `0x${string}`, address: `0x${string}` }
  return { key: p.privateKey, address: p.address }
}
const owner = (i = 0): string => payer(i).address.toLowerCase()
const idOf = (payment: string): string => (identifyPayment(payment) as { id: string }).id
const newCid = (): string => rawCid(randomBytes(64)).toString()

let open: MoneyContext['open']
moneyHooks((c) => { ({ chain, gate, log, s, open } = c) })

/** POST /pins (or, with `replaces`, POST /pins/{requestid}) as the route builds it */
const pinWrite = (cid: string, extra: Partial<PinWrite> = {}): PinWrite => ({ request: parsePinRequest({ cid }), months: 1, claimedBytes: 50_000, client: '127.0.0.1', ...extra })

/** a payment signed against the 402 this write is answered without one */
async function paymentFor (w: PinWrite, key = payer().key): Promise<string> {
  const { paymentHeader: _, ...unpaid } = w
  return await payFor(chain, key, createPin(unpaid, s.pins))
}

/** a paid pin by CID of 50,000 bytes for a month, and its owner's token */
async function paidPin (key = payer().key): Promise<{ requestid: string, auth: VerifiedToken, payment: string }> {
  const w = pinWrite(newCid())
  const payment = await paymentFor(w, key)
  const r = await createPin({ ...w, paymentHeader: payment }, s.pins)
  return { requestid: r.pin.requestid, auth: await s.tokens.verify((r.token as { token: string }).token), payment }
}

/** the settler cannot pay gas while `fn` runs: every settlement fails on this side */
async function withoutGas<T> (fn: () => Promise<T>): Promise<T> {
  await setEth(chain, chain.settlerAddress, 0n)
  try {
    return await fn()
  } finally {
    await setEth(chain, chain.settlerAddress, 10n ** 21n)
  }
}

describe('POST /pins: paid once', () => {
  it('charges the price of X-Pin-Size, records one queued pin holding at most what it paid for, and the payment', async () => {
    const cid = newCid()
    const w = pinWrite(cid)
    const payment = await paymentFor(w)
    const before = await usdcBalance(chain, chain.payTo)

    const r = await createPin({ ...w, paymentHeader: payment }, s.pins)

    expect(priceFor(50_000n, 1, PRICES)).toBe(50_000n)
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(50_000n)
    expect(r.settlement).toBeTypeOf('string')
    expect(r.token?.token).toBeTypeOf('string')
    const pin = await s.core.ledger.pins.get(r.pin.requestid)
    expect(pin).toMatchObject({ cid, owner: owner(), status: 'queued', maxBytes: Number(bytesCoveredBy(50_000n, 1, PRICES)), payment: { amount: '50000' } })
    expect(await s.core.ledger.pins.payment(idOf(payment))).toMatchObject({ requestid: r.pin.requestid, purpose: `pin:${cid}:1`, amount: '50000' })
    expect(await all(s.core.ledger.notes.all())).toEqual([])
  })

  it('the same payment again is a replay of the same pin; for another CID it is refused; one pin, one settlement', async () => {
    const w = pinWrite(newCid())
    const payment = await paymentFor(w)
    const first = await createPin({ ...w, paymentHeader: payment }, s.pins)
    const after = await usdcBalance(chain, chain.payTo)

    const again = await createPin({ ...w, paymentHeader: payment }, s.pins)
    expect(again.pin.requestid).toBe(first.pin.requestid)
    expect(again.settlement).toBeUndefined()
    expect(again.token).toBeUndefined()
    await expect(createPin({ ...pinWrite(newCid()), paymentHeader: payment }, s.pins)).rejects.toMatchObject({ name: 'PaymentRequiredError' })

    expect(await usdcBalance(chain, chain.payTo)).toBe(after)
    expect(await pinsOf(s, owner())).toEqual([first.pin.requestid])
  })

  it('two requests at once with the same payment: exactly one pin and one settlement', async () => {
    const w = pinWrite(newCid())
    const payment = await paymentFor(w)
    const before = await usdcBalance(chain, chain.payTo)

    const [a, b] = await Promise.all([createPin({ ...w, paymentHeader: payment }, s.pins), createPin({ ...w, paymentHeader: payment }, s.pins)])

    expect(a.pin.requestid).toBe(b.pin.requestid)
    expect([a.settlement, b.settlement].filter(x => x != null)).toHaveLength(1)
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(50_000n)
    expect(await pinsOf(s, owner())).toEqual([a.pin.requestid])
  })
})

describe('POST /pins: refused, nothing charged', () => {
  it('a denied CID: refused before any quote, a payment sent with it is not used', async () => {
    const cid = newCid()
    const w = pinWrite(cid)
    const payment = await paymentFor(w)
    await s.deny(parsePinRequest({ cid }).cid)
    const before = await moneyState(chain, s, payer().address)

    await expect(createPin({ ...w, paymentHeader: payment }, s.pins)).rejects.toMatchObject({ name: 'LegallyRefusedError' })

    expect(await moneyState(chain, s, payer().address)).toEqual(before)
    expect(await s.core.ledger.pins.paymentUsed(idOf(payment))).toBe(false)
    expect(await pinsOf(s, owner())).toEqual([])
  })

  it('X-Pin-Size over the largest pin: refused before any quote, the payment is not used', async () => {
    const w = pinWrite(newCid())
    const payment = await paymentFor(w)
    const before = await moneyState(chain, s, payer().address)

    await expect(createPin({ ...w, claimedBytes: PIN_MAX_BYTES + 1, paymentHeader: payment }, s.pins)).rejects.toMatchObject({ name: 'InputTooLargeError' })

    expect(await moneyState(chain, s, payer().address)).toEqual(before)
    expect(await s.core.ledger.pins.paymentUsed(idOf(payment))).toBe(false)
    expect(await pinsOf(s, owner())).toEqual([])
  })

  it('block storage unreachable (an S3 bucket nobody answers for): 503 before the payment is used', async () => {
    const w = pinWrite(newCid())
    const payment = await paymentFor(w)
    const dead = await deadS3(log)
    try {
      expect(dead.writable()).toBe(false)
      const svc = await open({ storage: dead })
      const before = await moneyState(chain, svc, payer().address)

      await expect(createPin({ ...w, paymentHeader: payment }, svc.pins)).rejects.toMatchObject({ name: 'StorageUnavailableError' })

      expect(await moneyState(chain, svc, payer().address)).toEqual(before)
      expect(await svc.core.ledger.pins.paymentUsed(idOf(payment))).toBe(false)
      expect(await pinsOf(svc, owner())).toEqual([])
    } finally {
      dead.conn.close()
    }
  })

  it('a payment signed for another size does not match the quote: 402, nothing charged', async () => {
    const w = pinWrite(newCid())
    const payment = await paymentFor(w)
    const before = await moneyState(chain, s, payer().address)

    await expect(createPin({ ...w, claimedBytes: 60_000, paymentHeader: payment }, s.pins)).rejects.toMatchObject({ name: 'PaymentRequiredError' })

    expect(await moneyState(chain, s, payer().address)).toEqual(before)
    expect(await pinsOf(s, owner())).toEqual([])
  })
})

describe('POST /pins: unpaid, the 402s kept', () => {
  it('the same request again gets the same 402; 402s for many sizes keep at most MAX_CHALLENGES answers, and one dropped is built again the same', async () => {
    const w = pinWrite(newCid(), { claimedBytes: 1_000_000 })
    const first = await createPin(w, s.pins).catch((e: unknown) => e) as PaymentRequiredError
    expect(first).toBeInstanceOf(PaymentRequiredError)
    expect(await createPin(w, s.pins).catch((e: unknown) => e)).toBe(first)

    // as many sizes as a busy service is asked for: each its own quote and 402
    const cid = newCid()
    const prices = new Set<string>()
    for (let i = 0; i < MAX_CHALLENGES + MAX_QUOTES + 10; i++) {
      const e = await createPin(pinWrite(cid, { claimedBytes: 100_000 + i * 1000 }), s.pins).catch((x: unknown) => x) as PaymentRequiredError
      expect(e).toBeInstanceOf(PaymentRequiredError)
      prices.add(e.challenge as string)
    }
    expect(prices.size).toBe(MAX_CHALLENGES + MAX_QUOTES + 10)
    expect(gate.challengesKept).toBe(MAX_CHALLENGES)

    // the first one's quote and 402 were dropped long ago: the same request is answered with the same terms
    const again = await createPin(w, s.pins).catch((e: unknown) => e) as PaymentRequiredError
    expect(again).not.toBe(first)
    expect(again.challenge).toBe(first.challenge)
    expect(again.terms).toEqual(first.terms)
    expect(gate.challengesKept).toBe(MAX_CHALLENGES)
  })
})

describe('the unpaid decision', () => {
  it('is given at once once its challenge is built: the same 402, no turn of the event loop; a payment header is still read and verified', async () => {
    const quote: Quote = { amount: 1234n, months: 1, bytes: 1234n, resourceUrl: 'http://127.0.0.1/pins', description: 'a test quote' }
    const first = gate.decide(undefined, quote)
    expect(first).toBeInstanceOf(Promise)
    const built = await first
    expect(built.type).toBe('payment-required')
    const again = gate.decide(undefined, quote)
    expect(again).not.toBeInstanceOf(Promise)
    expect(again).toEqual(built)
    expect((again as { error: unknown }).error).toBe((built as { error: unknown }).error)
    // another quote with the same terms: built from the challenges kept by field, through a promise
    expect(gate.decide(undefined, { ...quote })).toBeInstanceOf(Promise)
    // with a header, always through a promise (the payment is verified)
    const bad = gate.decide('not base64!', quote)
    expect(bad).toBeInstanceOf(Promise)
    expect(await bad).toMatchObject({ type: 'payment-required' })
  })
})

describe('POST /pins: a settlement that fails', () => {
  it('on this side (the settler has no gas): 503, no pin, no note, the payment unused; once it has gas the same payment pins, once', async () => {
    const w = pinWrite(newCid())
    const payment = await paymentFor(w)
    const before = await moneyState(chain, s, payer().address)

    await withoutGas(async () => {
      await expect(createPin({ ...w, paymentHeader: payment }, s.pins)).rejects.toMatchObject({ name: 'UnavailableError' })
    })

    expect(await moneyState(chain, s, payer().address)).toEqual(before)
    expect(await s.core.ledger.pins.paymentUsed(idOf(payment))).toBe(false)
    expect(await pinsOf(s, owner())).toEqual([])

    const r = await createPin({ ...w, paymentHeader: payment }, s.pins)
    expect(r.settlement).toBeTypeOf('string')
    expect((await usdcBalance(chain, chain.payTo)) - (before.payTo as bigint)).toBe(50_000n)
    expect(await pinsOf(s, owner())).toEqual([r.pin.requestid])
  })
})

describe('POST /pins/{requestid}: replace', () => {
  it('the old pin goes only once the replacement is paid, and its blocks only once the replacement is pinned', async () => {
    // the pin replaced: an upload, so that it holds blocks
    const bytes = randomFile(80_000)
    const uploadPayment = await payFor(chain, payer().key, upload({ months: 1, fileBytes: bytes.length, file: fileOf(bytes) }, s.upload))
    const uploaded = await upload({ months: 1, fileBytes: bytes.length, file: fileOf(bytes), payment: uploadPayment }, s.upload)
    const oldId = uploaded.result.requestid
    const oldCid = uploaded.result.cid
    const auth = await s.tokens.verify((uploaded.token as { token: string }).token)
    const replaces = await s.core.ledger.pins.get(oldId) as PinRecord
    const next = newCid()
    const w = pinWrite(next, { auth, replaces })
    const payment = await paymentFor(w)

    // not paid (the settlement fails): the old pin stays as it was
    await withoutGas(async () => {
      await expect(createPin({ ...w, paymentHeader: payment }, s.pins)).rejects.toMatchObject({ name: 'UnavailableError' })
    })
    expect(await s.core.ledger.pins.get(oldId)).toEqual(replaces)
    expect((await s.core.ledger.pins.refCount(oldCid)) > 0).toBe(true)
    expect(await pinsOf(s, owner())).toEqual([oldId])

    const before = await usdcBalance(chain, chain.payTo)
    const r = await createPin({ ...w, paymentHeader: payment }, s.pins)
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(50_000n)
    // replaced with the owner's token: no new one
    expect(r.token).toBeUndefined()
    expect(await s.core.ledger.pins.get(r.pin.requestid)).toMatchObject({ cid: next, owner: owner(), replaces: oldId, status: 'queued' })
    expect(await s.core.ledger.pins.get(oldId)).toMatchObject({ removed: { why: 'replaced' }, replacedBy: r.pin.requestid })
    expect(await pinsOf(s, owner())).toEqual([r.pin.requestid])
    // the old blocks are held while the replacement is fetched
    expect((await s.core.ledger.pins.refCount(oldCid)) > 0).toBe(true)

    await s.core.ledger.pins.finishFetch(r.pin.requestid, [next], 64, 'pinned')
    expect((await s.core.ledger.pins.refCount(oldCid)) > 0).toBe(false)
    expect((await s.core.ledger.pins.refCount(next)) > 0).toBe(true)
  })
})

describe('POST /pins/{requestid}: two replacements of one pin at once', () => {
  // each has its own payment: only the order of their settlements keeps the second from paying for nothing
  it('only the replacement that is recorded is charged; the other is refused with its payment unused', async () => {
    const { requestid, auth } = await paidPin()
    const old = await s.core.ledger.pins.get(requestid) as PinRecord
    const w1 = pinWrite(newCid(), { auth, replaces: old })
    const w2 = pinWrite(newCid(), { auth, replaces: old })
    const p1 = await paymentFor(w1)
    const p2 = await paymentFor(w2)
    const before = await usdcBalance(chain, chain.payTo)

    const r = await Promise.allSettled([createPin({ ...w1, paymentHeader: p1 }, s.pins), createPin({ ...w2, paymentHeader: p2 }, s.pins)])

    expect(r.map(x => x.status).sort()).toEqual(['fulfilled', 'rejected'])
    expect(await pinsOf(s, owner())).toHaveLength(1)
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(50_000n)
    const refused = r.findIndex(x => x.status === 'rejected')
    expect((r[refused] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError)
    const unused = identifyPayment([p1, p2][refused] as string)?.id as string
    expect(await s.core.ledger.pins.paymentUsed(unused)).toBe(false)
    expect(await s.core.ledger.notes.get(unused)).toBeUndefined()
  })
})

describe('POST /pins/{requestid}: a replacement under way through another front end', () => {
  // the lease another front end holds on the replaced pin while it settles its replacement (as routes.ts wires it: the ledger's leases)
  it('is refused before anything is charged while the other holds the pin\'s lease, and goes through once it is released', async () => {
    const { requestid, auth } = await paidPin()
    const old = await s.core.ledger.pins.get(requestid) as PinRecord
    const w = pinWrite(newCid(), { auth, replaces: old })
    const payment = await paymentFor(w)
    const before = await usdcBalance(chain, chain.payTo)
    expect(await s.core.ledger.leases.take(`replace:${requestid}`, 'another front end', 60_000)).toBe(true)

    await expect(createPin({ ...w, paymentHeader: payment }, s.pins)).rejects.toThrow(/being replaced through another front end.*nothing was charged/)
    expect(await usdcBalance(chain, chain.payTo)).toBe(before)
    expect(await s.core.ledger.pins.paymentUsed(idOf(payment))).toBe(false)
    expect(await s.core.ledger.pins.get(requestid)).toMatchObject({ requestid, cid: old.cid })
    expect((await s.core.ledger.pins.get(requestid))?.removed).toBeUndefined()

    await s.core.ledger.leases.release(`replace:${requestid}`, 'another front end')
    const r = await createPin({ ...w, paymentHeader: payment }, s.pins)
    expect(r.pin.requestid).not.toBe(requestid)
    expect((await s.core.ledger.pins.get(requestid))?.removed?.why).toBe('replaced')
    // the replacement's own lease is given back: none is left held
    expect((await s.core.ledger.leases.held()).map(l => l.name)).not.toContain(`replace:${requestid}`)
  })
})

describe('POST /pins/{requestid}/renew', () => {
  it('extends pinned_until by the months paid, charged on the file bytes the upload was priced on', async () => {
    const bytes = randomFile(70_000)
    const up = await upload({ months: 1, fileBytes: bytes.length, file: fileOf(bytes), payment: await payFor(chain, payer().key, upload({ months: 1, fileBytes: bytes.length, file: fileOf(bytes) }, s.upload)) }, s.upload)
    const auth = await s.tokens.verify((up.token as { token: string }).token)
    const pin = await s.core.ledger.pins.get(up.result.requestid) as PinRecord
    const renew = { requestid: pin.requestid, months: 3, auth }
    const payment = await payFor(chain, payer().key, renewPin(renew, s.pins))
    const before = await usdcBalance(chain, chain.payTo)

    const r = await renewPin({ ...renew, paymentHeader: payment }, s.pins)

    // 70,000 bytes × 3 months at 1 atomic unit per byte-month
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(210_000n)
    // calendar months in UTC, the day clamped to the month's last (Dec 29 + 2 = Feb 28)
    const until = addMonths(new Date(pin.pinnedUntil), 3)
    const renewed = await s.core.ledger.pins.get(pin.requestid)
    expect(renewed).toMatchObject({ pinnedUntil: until.toISOString(), months: 4 })
    expect(r.pin.info?.pinned_until).toBe(until.toISOString())
    expect(await s.core.ledger.pins.payment(idOf(payment))).toMatchObject({ requestid: pin.requestid, amount: '210000', purpose: `renew:${pin.requestid}:3:${pin.pinnedUntil}` })

    // the same payment again: the same answer, not three more months
    const again = await renewPin({ ...renew, paymentHeader: payment }, s.pins)
    expect(again.settlement).toBeUndefined()
    expect(await s.core.ledger.pins.get(pin.requestid)).toEqual(renewed)
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(210_000n)
  })

  it('two renewals at once with the same payment: extended once, charged once', async () => {
    const { requestid, auth } = await paidPin()
    const pin = await s.core.ledger.pins.get(requestid) as PinRecord
    const renew = { requestid, months: 1, auth }
    const payment = await payFor(chain, payer().key, renewPin(renew, s.pins))
    const before = await usdcBalance(chain, chain.payTo)

    const both = await Promise.all([renewPin({ ...renew, paymentHeader: payment }, s.pins), renewPin({ ...renew, paymentHeader: payment }, s.pins)])

    expect(both.filter(r => r.settlement != null)).toHaveLength(1)
    expect(await s.core.ledger.pins.get(requestid)).toMatchObject({ months: 2, pinnedUntil: addMonths(new Date(pin.pinnedUntil), 1).toISOString() })
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(50_000n)
  })

  it('a pin by CID renews at the price of the bytes its payment covered; a payment for other months is refused and changes nothing', async () => {
    const { requestid, auth } = await paidPin()
    const pin = await s.core.ledger.pins.get(requestid) as PinRecord
    const renew = { requestid, months: 2, auth }
    const twoMonths = await payFor(chain, payer().key, renewPin(renew, s.pins))
    const before = await usdcBalance(chain, chain.payTo)

    await expect(renewPin({ ...renew, months: 1, paymentHeader: twoMonths }, s.pins)).rejects.toMatchObject({ name: 'PaymentRequiredError' })
    expect(await s.core.ledger.pins.get(requestid)).toEqual(pin)
    expect(await s.core.ledger.pins.paymentUsed(idOf(twoMonths))).toBe(false)

    await renewPin({ ...renew, paymentHeader: twoMonths }, s.pins)
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(priceFor(BigInt(pin.maxBytes as number), 2, PRICES))
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(100_000n)
    expect(await s.core.ledger.pins.get(requestid)).toMatchObject({ months: 3 })
  })
})

describe('the owner\'s reads and DELETE', () => {
  it('lists and gets an owner\'s own pins only; a deleted pin leaves its payment used: sent again it pins nothing', async () => {
    const a1 = await paidPin()
    const a2 = await paidPin()
    const b = await paidPin(payer(1).key)
    expect((await pinsOf(s, owner())).sort()).toEqual([a1.requestid, a2.requestid].sort())
    expect(await pinsOf(s, owner(1))).toEqual([b.requestid])

    await s.core.ledger.pins.remove(a1.requestid, 'unpinned')
    expect(await pinsOf(s, owner())).toEqual([a2.requestid])
    expect(await s.core.ledger.pins.get(a1.requestid)).toMatchObject({ removed: { why: 'unpinned' } })
    expect(await s.core.ledger.pins.paymentUsed(idOf(a1.payment))).toBe(true)

    const before = await usdcBalance(chain, chain.payTo)
    const removed = await s.core.ledger.pins.get(a1.requestid) as PinRecord
    const again = await createPin({ ...pinWrite(removed.cid), paymentHeader: a1.payment }, s.pins)
    expect(again.pin.requestid).toBe(a1.requestid)
    expect(again.settlement).toBeUndefined()
    expect(await usdcBalance(chain, chain.payTo)).toBe(before)
    expect(await pinsOf(s, owner())).toEqual([a2.requestid])
  })
})
