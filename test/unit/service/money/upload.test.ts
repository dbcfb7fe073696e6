/**
 * POST /upload's use case, in-process on the real core, the real payment gate
 * (embedded facilitator) and the dev chain: a paid upload charges its quote
 * once; a payment is used at most once, also by two requests at the same
 * time; a refused upload (over the size paid for, denied content, storage
 * unavailable) and a refused settlement charge nothing and keep nothing.
 */
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { transferUsdc, usdcBalance, type DevChain } from '../../../../scripts/devchain/index.mjs'
import { rawCid } from '../../../../scripts/peer/index.mjs'
import type { Logger } from '../../../../src/kernel/log.js'
import type { PaymentGate } from '../../../../src/payment/gate.js'
import { identifyPayment } from '../../../../src/payment/gate.js'
import { priceFor } from '../../../../src/payment/pricing.js'
import { upload, type UploadInput } from '../../../../src/service/uploads/upload.js'
import { all, deadS3, fileOf, moneyState, moneyHooks, payFor, pinsOf, PRICES, randomFile, type MoneyContext, type Service } from './harness.js'

let chain: DevChain
let gate: PaymentGate
let log: Logger
let s: Service

const payer = (i = 0): { key: `0x${string}`, address: `0x${string}` } => {
  const p = chain.payers[i] as { privateKey: `0x${string}`, address: `0x${string}` }
  return { key: p.privateKey, address: p.address }
}

let open: MoneyContext['open']
moneyHooks((c) => { ({ chain, gate, log, s, open } = c) })

/** an upload of `bytes`, declared with X-Upload-Size, for `months` */
const input = (bytes: Uint8Array, extra: Partial<UploadInput> = {}): UploadInput => ({ months: 1, fileBytes: bytes.length, file: fileOf(bytes), ...extra })

/** a payment signed against the 402 this upload is answered without one */
async function paymentFor (bytes: Uint8Array, months = 1, key = payer().key): Promise<string> {
  return await payFor(chain, key, upload(input(bytes, { months }), s.upload))
}

describe('upload: paid once', () => {
  it('charges the quoted price (bytes × months at the rate), records one pin and its payment, keeps no note', async () => {
    const bytes = randomFile(150_000)
    const { address } = payer()
    const before = await usdcBalance(chain, chain.payTo)
    const payment = await paymentFor(bytes, 2)

    const r = await upload(input(bytes, { months: 2, payment }), s.upload)

    // 150,000 bytes × 2 months at 1 atomic unit per byte-month
    expect(priceFor(150_000n, 2, PRICES)).toBe(300_000n)
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(300_000n)
    expect(r.replayed).toBe(false)
    expect(r.result).toMatchObject({ cid: rawCid(bytes).toString(), size: 150_000, months: 2, owner: address.toLowerCase(), price: { amount: '300000' } })
    expect(r.token?.token).toBeTypeOf('string')
    const id = (identifyPayment(payment) as { id: string }).id
    expect(await s.core.ledger.pins.paymentUsed(id)).toBe(true)
    expect(await s.core.ledger.pins.payment(id)).toMatchObject({ requestid: r.result.requestid, amount: '300000', purpose: `upload:${r.result.cid}` })
    expect(await s.core.ledger.pins.get(r.result.requestid)).toMatchObject({ status: 'pinned', owner: address.toLowerCase(), months: 2 })
    expect(await all(s.core.ledger.notes.all())).toEqual([])
    expect(await pinsOf(s, address)).toEqual([r.result.requestid])
  })

  it('the same payment again is a replay of the first pin: no second pin, no second settlement, no new token', async () => {
    const bytes = randomFile(120_000)
    const payment = await paymentFor(bytes)
    const first = await upload(input(bytes, { payment }), s.upload)
    const after = await usdcBalance(chain, chain.payTo)

    const again = await upload(input(bytes, { payment }), s.upload)
    expect(again.replayed).toBe(true)
    expect(again.result.requestid).toBe(first.result.requestid)
    expect(again.token).toBeUndefined()
    expect(again.settlement).toBeUndefined()

    // the same payment with another file: refused, nothing pinned
    const other = randomFile(120_000)
    await expect(upload(input(other, { payment }), s.upload)).rejects.toMatchObject({ name: 'ReplayRefusedError', cause: { name: 'PaymentRequiredError' } })

    expect(await usdcBalance(chain, chain.payTo)).toBe(after)
    expect(await pinsOf(s, payer().address)).toEqual([first.result.requestid])
  })

  it('two uploads at once with the same payment: exactly one pin and one settlement, the other a replay', async () => {
    const bytes = randomFile(400_000)
    const payment = await paymentFor(bytes)
    const before = await usdcBalance(chain, chain.payTo)

    const both = await Promise.allSettled([upload(input(bytes, { payment }), s.upload), upload(input(bytes, { payment }), s.upload)])

    const done = both.map(r => { if (r.status === 'rejected') throw r.reason as Error; return r.value })
    expect(done.map(r => r.replayed).sort()).toEqual([false, true])
    expect(done[0]?.result.requestid).toBe(done[1]?.result.requestid)
    expect((await usdcBalance(chain, chain.payTo)) - before).toBe(400_000n)
    expect(await pinsOf(s, payer().address)).toEqual([done[0]?.result.requestid])
    expect(await all(s.core.ledger.notes.all())).toEqual([])
  })
})

describe('upload: refused, nothing charged', () => {
  it('a file larger than the size declared and paid for: refused, the payment is not used (it pays for the right file after)', async () => {
    const bytes = randomFile(200_000)
    const { address } = payer()
    // signed for 100,000 bytes
    const payment = await payFor(chain, payer().key, upload(input(bytes, { fileBytes: 100_000 }), s.upload))
    const before = await moneyState(chain, s, address)

    await expect(upload(input(bytes, { fileBytes: 100_000, payment }), s.upload)).rejects.toMatchObject({ name: 'InputTooLargeError' })

    expect(await moneyState(chain, s, address)).toEqual(before)
    expect(await s.core.ledger.pins.paymentUsed((identifyPayment(payment) as { id: string }).id)).toBe(false)
    expect(await pinsOf(s, address)).toEqual([])
    // still good for what it was signed for
    const ok = await upload(input(bytes.subarray(0, 100_000), { fileBytes: 100_000, payment }), s.upload)
    expect(ok.replayed).toBe(false)
    expect((await usdcBalance(chain, chain.payTo)) - (before.payTo as bigint)).toBe(100_000n)
  })

  it('a declared size over the upload limit: refused before any quote, with or without a payment', async () => {
    const small = randomFile(10_000)
    const payment = await paymentFor(small)
    const before = await moneyState(chain, s, payer().address)
    await expect(upload(input(small, { fileBytes: 64 * 1024 * 1024, payment }), s.upload)).rejects.toMatchObject({ name: 'InputTooLargeError' })
    await expect(upload({ months: 1, file: fileOf(small), payment }, s.upload)).rejects.toMatchObject({ name: 'LengthRequiredError' })
    expect(await moneyState(chain, s, payer().address)).toEqual(before)
    expect(await s.core.ledger.pins.paymentUsed((identifyPayment(payment) as { id: string }).id)).toBe(false)
  })

  it('denied content: refused once imported, before settlement; nothing charged, nothing kept', async () => {
    const bytes = randomFile(90_000)
    await s.deny(rawCid(bytes))
    const payment = await paymentFor(bytes)
    const before = await moneyState(chain, s, payer().address)

    await expect(upload(input(bytes, { payment }), s.upload)).rejects.toMatchObject({ name: 'LegallyRefusedError' })

    expect(await moneyState(chain, s, payer().address)).toEqual(before)
    expect(await s.core.ledger.pins.paymentUsed((identifyPayment(payment) as { id: string }).id)).toBe(false)
    expect(await pinsOf(s, payer().address)).toEqual([])
  })

  it('block storage unreachable (an S3 bucket nobody answers for): 503 before the payment is used', async () => {
    const dead = await deadS3(log)
    try {
      expect(dead.writable()).toBe(false)
      const svc = await open({ storage: dead })
      const bytes = randomFile(50_000)
      // signed against the same terms as served by a store that answers: the dead store refuses before any quote
      const payment = await paymentFor(bytes)
      const before = await moneyState(chain, svc, payer().address)

      await expect(upload(input(bytes, { payment }), svc.upload)).rejects.toMatchObject({ name: 'StorageUnavailableError' })

      expect(await moneyState(chain, svc, payer().address)).toEqual(before)
      expect(await svc.core.ledger.pins.paymentUsed((identifyPayment(payment) as { id: string }).id)).toBe(false)
      expect(await pinsOf(svc, payer().address)).toEqual([])
    } finally {
      dead.conn.close()
    }
  })
})

describe('upload: a settlement that fails', () => {
  it('the payer spends the balance while the file streams in: 402, no pin, the payment unused, no note, nothing kept', async () => {
    const { key, address } = payer(1)
    const bytes = randomFile(300_000)
    const payment = await paymentFor(bytes, 1, key)
    const before = await moneyState(chain, s, address)
    const balance = before.payer as bigint
    expect(balance).toBeGreaterThan(300_000n)
    // the balance moves elsewhere after the payment was verified, before it is settled
    const drain = fileOf(bytes, { onChunk: async (i) => { if (i === 2) await transferUsdc(chain, key, privateKeyToAccount(chain.deployerKey).address, balance) } })

    await expect(upload({ months: 1, fileBytes: bytes.length, file: drain, payment }, s.upload)).rejects.toMatchObject({ name: 'InsufficientFundsError' })

    const after = await moneyState(chain, s, address)
    expect(after).toEqual({ ...before, payer: 0n })
    expect(await s.core.ledger.pins.paymentUsed((identifyPayment(payment) as { id: string }).id)).toBe(false)
    expect(await pinsOf(s, address)).toEqual([])
  })
})
