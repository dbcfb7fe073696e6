/**
 * The admin channel's request bodies are zod schemas (src/admin/api.ts): a
 * route validates its body with its schema, and a malformed one is a 400
 * (InvalidInputError) naming the first problem, before any service runs.
 */
import { describe, expect, it } from 'vitest'
import { adminRequest } from '../../../src/admin/api.js'
import { InvalidInputError } from '../../../src/kernel/errors.js'

describe('admin request bodies', () => {
  it('pass what the CLI sends', () => {
    expect(adminRequest('/keys', { op: 'mint', owner: '0xa', permissions: ['pins:create-unpaid'], ttlSeconds: 60 })).toEqual({ op: 'mint', owner: '0xa', permissions: ['pins:create-unpaid'], ttlSeconds: 60 })
    expect(adminRequest('/pins', { op: 'ls', query: { status: 'pinned', 'meta[app]': 'x' } })).toEqual({ op: 'ls', query: { status: 'pinned', 'meta[app]': 'x' } })
    expect(adminRequest('/settlements', { op: 'list', closed: true })).toEqual({ op: 'list', closed: true })
    expect(adminRequest('/deny', { op: 'add', target: 'bafy', reason: 'r', by: 'cli' })).toEqual({ op: 'add', target: 'bafy', reason: 'r', by: 'cli' })
    expect(adminRequest('/gc', {})).toEqual({})
    expect(adminRequest('/status', {})).toEqual({})
  })

  it('refuse anything else, naming the first problem', () => {
    const refusal = (path: Parameters<typeof adminRequest>[0], body: unknown): string => {
      try { adminRequest(path, body) } catch (err) {
        expect(err).toBeInstanceOf(InvalidInputError)
        return (err as Error).message
      }
      throw new Error(`${path} took ${JSON.stringify(body)}`)
    }
    expect(refusal('/keys', { op: 'retire' })).toMatch(/^not a valid \/keys request: kid: /)
    expect(refusal('/keys', { op: 'explode' })).toMatch(/^not a valid \/keys request: op: /)
    expect(refusal('/keys', null)).toMatch(/^not a valid \/keys request/)
    expect(refusal('/pins', { op: 'ls', query: { limit: 10 } })).toMatch(/query\.limit/)
    expect(refusal('/settlements', { op: 'close', paymentId: 'p' })).toMatch(/note/)
    expect(refusal('/deny', { op: 'add', target: 'bafy', reason: 7, by: 'cli' })).toMatch(/reason/)
    expect(refusal('/gc', { dryRun: 'yes' })).toMatch(/dryRun/)
    expect(refusal('/status', { surprise: 1 })).toMatch(/^not a valid \/status request/)
  })
})
