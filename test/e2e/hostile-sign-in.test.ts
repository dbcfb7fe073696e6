/**
 * Issue 13, finding 6: one client locked every wallet out of Sign-In with
 * Ethereum by filling the 10,000 open challenges in 11 s; everyone then got
 * 400 for 10 minutes. The unpaid-write limit is off here (as behind a proxy
 * that hides client addresses, or an operator's choice), so only the caps on
 * open challenges stand between the attacker and everyone else. Each
 * attacker and victim is its own loopback source address.
 */
import { randomBytes } from 'node:crypto'
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { clientAt, inParallel, type ClientAt } from '../helpers/hostile.js'

let pind: PindProcess
beforeAll(async () => { pind = await startPind({ args: ['--rate-limit-unpaid', '0'] }) })
afterAll(async () => { await pind?.stop() })

const randomAddress = (): string => `0x${randomBytes(20).toString('hex')}`

async function challenge (c: ClientAt, address: string): Promise<{ status: number, body: any, retryAfter?: string }> {
  const r = await c.request(`${pind.url}/auth/challenge`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ address }) })
  return { status: r.statusCode, body: await r.body.json(), retryAfter: r.headers['retry-after'] as string | undefined }
}

/** A victim signs in from `from`: a challenge, signed, exchanged for a token that works. */
async function signIn (from: string, key = generatePrivateKey(), open?: { message: string }): Promise<number> {
  const account = privateKeyToAccount(key)
  const c = clientAt(from, 1)
  try {
    let message = open?.message
    if (message == null) {
      const ch = await challenge(c, account.address)
      if (ch.status !== 200) return ch.status
      message = ch.body.message as string
    }
    const r = await c.request(`${pind.url}/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message, signature: await account.signMessage({ message }) }) })
    const body = await r.body.json() as any
    if (r.statusCode !== 200) return r.statusCode
    const list = await c.request(`${pind.url}/pins`, { headers: { authorization: `Bearer ${body.token as string}` } })
    await list.body.dump()
    return list.statusCode
  } finally {
    await c.close()
  }
}

describe('Sign-In with Ethereum under a challenge flood', () => {
  it('one client asking for 10,050 challenges holds only its share (429 past it); another wallet still signs in', async () => {
    const attacker = clientAt('127.0.0.1', 16)
    const answers = await inParallel(10_050, 16, async () => await challenge(attacker, randomAddress()))
    await attacker.close()
    const granted = answers.filter(a => a.status === 200).length
    expect(granted).toBeLessThanOrEqual(16)
    const refused = answers.filter(a => a.status !== 200)
    expect(refused.every(a => a.status === 429 && a.body.error.reason === 'TOO_MANY_REQUESTS' && Number(a.retryAfter) >= 1)).toBe(true)
    expect(await signIn('127.0.0.2')).toBe(200)
  })

  it('challenges others ask for the same wallet do not void or block its owner', async () => {
    const key = generatePrivateKey()
    const owner = privateKeyToAccount(key).address
    const victim = clientAt('127.0.0.3', 1)
    const mine = await challenge(victim, owner)
    await victim.close()
    expect(mine.status).toBe(200)
    for (const from of ['127.0.0.4', '127.0.0.5']) {
      const attacker = clientAt(from, 4)
      await inParallel(50, 4, async () => await challenge(attacker, owner))
      await attacker.close()
    }
    // the challenge asked for before the flood is still good, and so is a new one
    expect(await signIn('127.0.0.3', key, mine.body)).toBe(200)
    expect(await signIn('127.0.0.3', key)).toBe(200)
  })

  it('when 640 addresses fill all 10,000 open challenges, a newcomer still signs in (the oldest challenge gives way)', async () => {
    const clients = Array.from({ length: 640 }, (_, i) => `127.0.${2 + Math.floor(i / 250)}.${1 + (i % 250)}`)
    await inParallel(clients.length, 32, async (i) => {
      const c = clientAt(clients[i] as string, 1)
      try {
        for (let k = 0; k < 16; k++) {
          const a = await challenge(c, randomAddress())
          if (a.status !== 200) throw new Error(`client ${clients[i] as string} got ${a.status} on challenge ${k}`)
        }
      } finally {
        await c.close()
      }
    })
    expect(await signIn('127.0.10.1')).toBe(200)
  })
})
