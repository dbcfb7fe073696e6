import { describe, expect, it } from 'vitest'
import { bytesCoveredBy, formatUsdc, priceFor, PriceTooHighError } from '../../../src/payment/pricing.js'

const s = { rate: 100_000n, minimum: 1_000n, maximum: 100_000_000n, maxMonths: 24 }

describe('pricing', () => {
  it('charges size_GB × 0.10 USD × months with a 0.001 USD minimum, GB = 10^9 bytes', () => {
    expect(priceFor(0n, 1, s)).toBe(1_000n)
    expect(priceFor(10_000_000n, 1, s)).toBe(1_000n) // 0.001 exactly
    expect(priceFor(1_000_000_000n, 1, s)).toBe(100_000n)
    expect(priceFor(1_000_000_000n, 24, s)).toBe(2_400_000n)
    expect(priceFor(104_857_600n, 7, s)).toBe(73_401n)
  })

  it('rounds up to the next atomic unit, never down', () => {
    expect(priceFor(1_000_000_001n, 1, s)).toBe(100_001n)
    expect(priceFor(20_000_001n, 1, s)).toBe(2_001n)
  })

  it('refuses months out of range and prices above the maximum', () => {
    expect(() => priceFor(1n, 0, s)).toThrow(RangeError)
    expect(() => priceFor(1n, 25, s)).toThrow(RangeError)
    expect(() => priceFor(10n ** 15n, 24, s)).toThrow(PriceTooHighError)
  })

  it('inverts: the bytes an amount covers are priced at no more than that amount', () => {
    for (const amount of [1_000n, 73_401n, 2_400_000n]) {
      const bytes = bytesCoveredBy(amount, 3, s)
      expect(priceFor(bytes, 3, s) <= amount).toBe(true)
      expect(priceFor(bytes + 1_000_000n, 3, s) > amount || amount === s.minimum).toBe(true)
    }
  })

  it('formats atomic units as USDC', () => {
    expect(formatUsdc(1_000n)).toBe('0.001000')
    expect(formatUsdc(2_400_000n)).toBe('2.400000')
  })
})
