/**
 * Prices in USDC atomic units (6 decimals), integer arithmetic only.
 *
 *   price = max(minimum, ceil(bytes × rate × months / 10^9))
 *
 * GB is 10^9 bytes (SI), `rate` is atomic units per GB-month (100000 = 0.10 USD).
 * The division rounds up, so the service never under-charges; the minimum
 * (1000 = 0.001 USD) applies to every paid write.
 */
import { PindError } from '../kernel/errors.js'
export const BYTES_PER_GB = 1_000_000_000n
export const USDC_DECIMALS = 6

export interface PriceSettings {
  rate: bigint
  minimum: bigint
  maximum: bigint
  maxMonths: number
}

export class PriceTooHighError extends PindError {
  override name = 'PriceTooHighError'
}

export function priceFor (bytes: bigint, months: number, s: PriceSettings): bigint {
  if (bytes < 0n) throw new RangeError('bytes must be >= 0')
  if (!Number.isInteger(months) || months < 1 || months > s.maxMonths) throw new RangeError(`months must be 1..${s.maxMonths}`)
  const raw = ceilDiv(bytes * s.rate * BigInt(months), BYTES_PER_GB)
  const price = raw > s.minimum ? raw : s.minimum
  if (price > s.maximum) {
    throw new PriceTooHighError(`the price ${formatUsdc(price)} USDC is above this service's maximum of ${formatUsdc(s.maximum)} USDC`)
  }
  return price
}

/** The largest byte count a given amount pays for over `months` (inverse of priceFor, rounding down). */
export function bytesCoveredBy (amount: bigint, months: number, s: PriceSettings): bigint {
  return (amount * BYTES_PER_GB) / (s.rate * BigInt(months))
}

function ceilDiv (a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b
}

/** 1234567n → "1.234567" */
export function formatUsdc (atomic: bigint): string {
  const neg = atomic < 0n
  const abs = neg ? -atomic : atomic
  const whole = abs / 10n ** BigInt(USDC_DECIMALS)
  const frac = (abs % 10n ** BigInt(USDC_DECIMALS)).toString().padStart(USDC_DECIMALS, '0')
  return `${neg ? '-' : ''}${whole}.${frac}`
}

export function describeFormula (s: PriceSettings): string {
  return `max(${formatUsdc(s.minimum)} USDC, size_GB × ${formatUsdc(s.rate)} USDC × months), GB = 10^9 bytes, rounded up to the next atomic unit (10^-6 USDC); months 1–${s.maxMonths}`
}
