/**
 * Sign-In with Ethereum end to end with a viem account: a new wallet token
 * without paying; nonces single-use; wrong chain, expired, foreign-signer and
 * tampered messages refused.
 */
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPind, type PindProcess } from '../helpers/pind.js'

let pind: PindProcess
beforeAll(async () => { pind = await startPind() })
afterAll(async () => { await pind?.stop() })

const post = async (path: string, body: unknown): Promise<Response> =>
  await fetch(`${pind.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

describe('Sign-In with Ethereum', () => {
  it('issues a wallet token for the signer that works on the owner API; the nonce is single-use', async () => {
    const account = privateKeyToAccount(generatePrivateKey())
    const c = await post('/auth/challenge', { address: account.address })
    expect(c.status).toBe(200)
    const { message, nonce } = await c.json() as any
    expect(message).toContain(account.address)
    expect(message).toContain('Chain ID: 167000')
    expect(message).toContain(`Nonce: ${nonce as string}`)
    const signature = await account.signMessage({ message })
    const t = await post('/auth/token', { message, signature })
    expect(t.status).toBe(200)
    const body = await t.json() as any
    expect(body.owner).toBe(account.address.toLowerCase())
    expect(t.headers.get('x-wallet-auth-token')).toBe(body.token)
    const list = await fetch(`${pind.url}/pins`, { headers: { authorization: `Bearer ${body.token as string}` } })
    expect(list.status).toBe(200)
    expect(await list.json()).toEqual({ count: 0, results: [] })

    const again = await post('/auth/token', { message, signature })
    expect(again.status).toBe(401)
    expect((await again.json() as any).error.details).toMatch(/already used/)
  })

  it('refuses a signature by another key, a message for another chain, and a tampered message', async () => {
    const account = privateKeyToAccount(generatePrivateKey())
    const other = privateKeyToAccount(generatePrivateKey())

    const c1 = await (await post('/auth/challenge', { address: account.address })).json() as any
    const wrongSigner = await post('/auth/token', { message: c1.message, signature: await other.signMessage({ message: c1.message }) })
    expect(wrongSigner.status).toBe(401)
    expect((await wrongSigner.json() as any).error.details).toMatch(/signature does not match/)

    const c2 = await (await post('/auth/challenge', { address: account.address })).json() as any
    const otherChain = (c2.message as string).replace('Chain ID: 167000', 'Chain ID: 1')
    const r2 = await post('/auth/token', { message: otherChain, signature: await account.signMessage({ message: otherChain }) })
    expect(r2.status).toBe(401)
    expect((await r2.json() as any).error.details).toMatch(/chain 1/)

    const c3 = await (await post('/auth/challenge', { address: account.address })).json() as any
    const sig = await account.signMessage({ message: c3.message })
    const tampered = (c3.message as string).replace('This costs nothing.', 'This costs everything.')
    const r3 = await post('/auth/token', { message: tampered, signature: sig })
    expect(r3.status).toBe(401)
  })

  it('refuses an expired message', async () => {
    const account = privateKeyToAccount(generatePrivateKey())
    const c = await (await post('/auth/challenge', { address: account.address })).json() as any
    const expired = (c.message as string).replace(/Expiration Time: .*/, 'Expiration Time: 2020-01-01T00:00:00.000Z')
    const r = await post('/auth/token', { message: expired, signature: await account.signMessage({ message: expired }) })
    expect(r.status).toBe(401)
    expect((await r.json() as any).error.details).toMatch(/not valid|expired/)
  })

  it('answers bad input with 400/415/413 in the spec error shape', async () => {
    expect((await post('/auth/challenge', { address: '0x1234' })).status).toBe(400)
    expect((await fetch(`${pind.url}/auth/challenge`, { method: 'POST', body: '{"address":1}' })).status).toBe(415)
    const notJson = await fetch(`${pind.url}/auth/challenge`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' })
    expect(notJson.status).toBe(400)
    expect((await notJson.json() as any).error.reason).toBe('BAD_REQUEST')
    const huge = await fetch(`${pind.url}/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'x'.repeat(100_000) }) })
    expect(huge.status).toBe(413)
    expect((await post('/auth/token', { message: 'hello', signature: '0x00' })).status).toBe(401)
  })
})
