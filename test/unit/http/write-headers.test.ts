/**
 * The headers of paid writes, as the routes read them: X-Pin-Duration-Months
 * (1 to the most months, default 1) and the byte counts (X-Upload-Size,
 * X-Pin-Size, Content-Length), validated with the zod schemas the OpenAPI
 * parameters are derived from.
 */
import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { InvalidInputError } from '../../../src/kernel/errors.js'
import { byteCount, parseMonths, PIN_SIZE_HEADER } from '../../../src/http/write-headers.js'

const withHeader = (value: string | string[] | undefined): IncomingMessage => ({ headers: { [PIN_SIZE_HEADER]: value } }) as unknown as IncomingMessage

describe('X-Pin-Duration-Months', () => {
  it('is 1 when absent, the number sent from 1 to the most months', () => {
    expect(parseMonths(undefined, 24)).toBe(1)
    expect(parseMonths('1', 24)).toBe(1)
    expect(parseMonths(' 24 ', 24)).toBe(24)
  })

  it('anything else is refused, naming the range', () => {
    for (const bad of ['0', '25', '-1', '1.5', '1e1', '0x1', 'one', '', '0001']) {
      expect(() => parseMonths(bad, 24), bad).toThrow(InvalidInputError)
      expect(() => parseMonths(bad, 24), bad).toThrow(/must be a whole number of months from 1 to 24/)
    }
    expect(() => parseMonths(['1', '2'], 24)).toThrow('send X-Pin-Duration-Months once')
  })
})

describe('byte counts', () => {
  it('read as a number when sent, undefined when absent', () => {
    expect(byteCount(withHeader(undefined), PIN_SIZE_HEADER, 'refused')).toBeUndefined()
    expect(byteCount(withHeader('0'), PIN_SIZE_HEADER, 'refused')).toBe(0)
    expect(byteCount(withHeader(' 1048576 '), PIN_SIZE_HEADER, 'refused')).toBe(1_048_576)
    expect(byteCount(withHeader('9007199254740991'), PIN_SIZE_HEADER, 'refused')).toBe(Number.MAX_SAFE_INTEGER)
  })

  it('a malformed one is refused with the refusal given, or read as absent without one', () => {
    // past 2^53 - 1 a count cannot be held exactly as a number: it is malformed, not rounded
    for (const bad of ['-1', '1.5', '1e6', 'abc', '', '12345678901234567', '9007199254740993']) {
      expect(() => byteCount(withHeader(bad), PIN_SIZE_HEADER, 'refused'), bad).toThrow('refused')
      expect(byteCount(withHeader(bad), PIN_SIZE_HEADER), bad).toBeUndefined()
    }
  })
})
