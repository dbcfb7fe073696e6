/**
 * The bazaar's pattern for X-Pin-Duration-Months (src/http/paid-routes.ts): a
 * short regular expression that takes exactly the months a request may buy.
 */
import { describe, expect, it } from 'vitest'
import { monthsPattern } from '../../../src/http/paid-routes.js'

describe('monthsPattern', () => {
  it('matches exactly 1..max, written without leading zeros, for every max from 1 to 999', () => {
    for (let max = 1; max <= 999; max++) {
      const re = new RegExp(monthsPattern(max))
      const wrong: string[] = []
      for (let n = 0; n <= 1000; n++) if (re.test(String(n)) !== (n >= 1 && n <= max)) wrong.push(String(n))
      for (const s of ['', '01', '007', '1.0', '+1', ' 1', '1 ', `${max}0`, '1e1']) if (re.test(s) && !(s === `${max}0` && Number(s) <= max)) wrong.push(JSON.stringify(s))
      expect(wrong, `max ${max}: ${monthsPattern(max)}`).toEqual([])
    }
  })

  it('is short: 24 months is one range per decade', () => {
    expect(monthsPattern(24)).toBe('^(?:[1-9]|1[0-9]|2[0-4])$')
    expect(monthsPattern(1)).toBe('^(?:1)$')
  })

  it('refuses a maximum it cannot write', () => {
    for (const max of [0, -1, 1.5, 1000, Number.NaN]) expect(() => monthsPattern(max)).toThrow(RangeError)
  })
})
