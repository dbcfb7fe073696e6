/**
 * The error catalog (src/http/error-catalog.ts): every error class src/
 * exports is either an answer (a status and a reason) or a listed fault,
 * every reason is documented in the OpenAPI document, and the answers carry
 * what their status needs (after fastify's test/internals/errors.test.js).
 */
import { readdirSync } from 'node:fs'
import { serialize } from 'node:v8'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { LedgerUnavailableError } from '../../../src/ledger/errors.js'
import { PindError, InsufficientFundsError, InvalidInputError, LegallyRefusedError, OperationNotAllowedError, PaymentRequiredError, ReplayRefusedError, TooManyRequestsError, UnauthorizedError, UnavailableError } from '../../../src/kernel/errors.js'
import { ERRORS, FAULTS, REASONS, errorAnswer, statusesOf, type Reason } from '../../../src/http/error-catalog.js'
import { openApiDocument } from '../../../src/http/openapi.js'
import { PriceTooHighError } from '../../../src/payment/pricing.js'
import { SiweBusyError } from '../../../src/auth/siwe.js'

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url))

/** every error class the modules of src/ export (the CLI's own usage errors and the entry point aside) */
async function exportedErrorClasses (): Promise<Map<string, string>> {
  const found = new Map<string, string>()
  const files = (readdirSync(SRC, { recursive: true }) as string[])
    .filter(f => f.endsWith('.ts') && !f.startsWith('cli/') && f !== 'main.ts')
  for (const file of files) {
    const mod = await import(`${SRC}${file}`) as Record<string, unknown>
    for (const value of Object.values(mod)) {
      if (typeof value !== 'function' || !(value.prototype instanceof Error)) continue
      // the class's own `name` field is set by its constructor: read it from an instance
      let instance: Error | undefined
      try { instance = new (value as new (...a: unknown[]) => Error)('x', 'y') } catch { instance = undefined }
      const name = instance?.name !== undefined && instance.name !== 'Error' ? instance.name : value.name
      found.set(name, file)
      // answers are found by name: the name must be the class's own
      if (Object.hasOwn(ERRORS, name)) {
        expect(instance?.name, `${name} (src/${file}) needs its own name field`).toBe(name)
        expect(instance, `${name} (src/${file}) must extend PindError`).toBeInstanceOf(PindError)
      }
    }
  }
  return found
}

describe('the error catalog', () => {
  it('maps every exported error class, as an answer or as a fault', async () => {
    const classes = await exportedErrorClasses()
    expect(classes.size).toBeGreaterThan(40)
    const unmapped = [...classes].filter(([name]) => !Object.hasOwn(ERRORS, name) && !FAULTS.includes(name)).map(([name, file]) => `${name} (src/${file})`)
    expect(unmapped, 'add these to ERRORS (an answer) or FAULTS (a 500) in src/http/error-catalog.ts').toEqual([])
    for (const name of Object.keys(ERRORS)) expect(FAULTS, `${name} is both an answer and a fault`).not.toContain(name)
    // and nothing is listed that does not exist
    const listed = [...Object.keys(ERRORS), ...FAULTS].filter(n => !classes.has(n))
    expect(listed, 'listed in the catalog but no module of src/ exports them').toEqual([])
  })

  it('uses every reason it declares, each with its statuses', () => {
    const used = new Set(Object.values(ERRORS).map(e => e.reason))
    for (const reason of Object.keys(REASONS) as Reason[]) {
      if (reason !== 'INTERNAL_SERVER_ERROR') expect(used.has(reason), reason).toBe(true)
      expect(statusesOf(reason).length, reason).toBeGreaterThan(0)
    }
    expect(statusesOf('NOT_FOUND')).toEqual([404, 412])
    expect(statusesOf('INTERNAL_SERVER_ERROR')).toEqual([500])
  })

  it('documents every reason in the OpenAPI document', () => {
    const doc = openApiDocument({ publicUrl: 'https://pin.example.com', version: '1', network: 'eip155:167000', asset: '0x07d83526730c7438048D55A4fc0b850e2aaB6f0b', maxMonths: 24, uploadMaxBytes: 1000 })
    const failure = (doc.components as any).schemas.Failure
    const documented = failure.properties.error.properties.reason.examples as string[]
    expect([...documented].sort()).toEqual(Object.keys(REASONS).sort())
    for (const reason of Object.keys(REASONS)) expect((doc.info as any).description, reason).toContain(`\`${reason}\``)
  })

  it('answers with the status, the reason, the headers and the body each error needs', () => {
    const body = (e: unknown): unknown => JSON.parse(errorAnswer(e).body.toString())
    expect(errorAnswer(new InvalidInputError('bad'))).toMatchObject({ status: 400, reason: 'BAD_REQUEST', details: 'bad', headers: {} })
    expect(body(new InvalidInputError('bad'))).toEqual({ error: { reason: 'BAD_REQUEST', details: 'bad' } })
    expect(errorAnswer(new PriceTooHighError('too dear'))).toMatchObject({ status: 400, reason: 'BAD_REQUEST' })
    expect(errorAnswer(new UnauthorizedError('who?')).headers).toEqual({ 'www-authenticate': 'Bearer' })
    expect(errorAnswer(new UnavailableError('busy', 7)).headers).toEqual({ 'retry-after': '7' })
    expect(errorAnswer(new TooManyRequestsError('slow down', 3))).toMatchObject({ status: 429, headers: { 'retry-after': '3' } })
    expect(errorAnswer(new SiweBusyError('too many challenges', 9))).toMatchObject({ status: 429, headers: { 'retry-after': '9' } })
    expect(errorAnswer(new OperationNotAllowedError('no', 'GET, HEAD'))).toMatchObject({ status: 405, headers: { allow: 'GET, HEAD' } })
    expect(errorAnswer(new LegallyRefusedError('denied', 'https://pin.example.com'))).toMatchObject({ status: 451, headers: { link: '<https://pin.example.com>; rel="blocked-by"' } })
    const challenge = new PaymentRequiredError('pay', 'eyJ4NDAyVmVyc2lvbiI6Mn0=', { x402Version: 2, price: { amount: 5n } })
    expect(errorAnswer(challenge)).toMatchObject({ status: 402, reason: 'PAYMENT_REQUIRED', headers: { 'payment-required': 'eyJ4NDAyVmVyc2lvbiI6Mn0=' } })
    expect(body(challenge)).toEqual({ x402Version: 2, price: { amount: '5' }, error: { reason: 'PAYMENT_REQUIRED', details: 'pay' } })
    expect(errorAnswer(challenge)).toBe(errorAnswer(challenge)) // serialized once
    expect(errorAnswer(new InsufficientFundsError('broke'))).toMatchObject({ status: 402, reason: 'INSUFFICIENT_FUNDS', headers: {} })
    expect(errorAnswer(new ReplayRefusedError(new UnavailableError('later', 5)))).toMatchObject({ status: 503, headers: { 'retry-after': '5' } })
    expect(errorAnswer(new LedgerUnavailableError())).toMatchObject({ status: 503, reason: 'SERVICE_UNAVAILABLE', headers: { 'retry-after': '5' } })
  })

  it('answers anything else with a 500 that tells nothing', () => {
    // a library's error named like one of pind's is still a fault
    const libraryNotFound = Object.assign(new Error('key /secret not found'), { name: 'NotFoundError' })
    for (const err of [new Error('secret path /var/lib/pind'), new TypeError('x is undefined'), libraryNotFound, 'a string', undefined]) {
      const a = errorAnswer(err)
      expect(a).toMatchObject({ status: 500, reason: 'INTERNAL_SERVER_ERROR', fault: true })
      expect(a.body.toString()).not.toContain('secret')
    }
  })

  it('writes its JSON as ASCII: other characters are escaped, and read back the same', () => {
    const a = errorAnswer(new InvalidInputError('months 1–24, size × price, café'))
    expect(a.text).toMatch(/^[\x20-\x7e]*$/)
    expect(a.body.toString('utf8')).toBe(a.text)
    expect(JSON.parse(a.text).error.details).toBe('months 1–24, size × price, café')
    // and as a one-byte string: a two-byte one (what the escaping leaves) is encoded from two bytes a character on every write
    // (V8's serializer tags a one-byte string '"' and a two-byte one 'c', after its two-byte header)
    const isOneByte = (s: string): boolean => serialize(s)[2] === 0x22
    expect(isOneByte('months 1–24')).toBe(false)
    expect(isOneByte(a.text)).toBe(true)
  })
})
