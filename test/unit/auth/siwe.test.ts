/**
 * Open sign-in challenges: per-client caps, per client and wallet
 * replacement, and the global cap giving way instead of locking anyone out.
 */
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts'
import { describe, expect, it } from 'vitest'
import { MAX_OPEN_CHALLENGES, MAX_PER_CLIENT, MAX_PER_CLIENT_WALLET, SiweBusyError, SiweChallenges } from '../../../src/auth/siwe.js'

const wallet = (i: number): string => `0x${i.toString(16).padStart(40, '0')}`

describe('SiweChallenges', () => {
  it('a client holds at most MAX_PER_CLIENT open challenges; past that a SiweBusyError with the wait', () => {
    let now = new Date('2026-01-01T00:00:00Z')
    const s = new SiweChallenges({ publicUrl: 'http://pind.test', chainId: 167000, clock: () => now })
    for (let i = 0; i < MAX_PER_CLIENT; i++) s.challenge(wallet(i), 'a')
    let err: unknown
    try { s.challenge(wallet(999), 'a') } catch (e) { err = e }
    expect(err).toBeInstanceOf(SiweBusyError)
    expect((err as SiweBusyError).retryAfterSeconds).toBe(600)
    s.challenge(wallet(999), 'b') // another client is not affected
    now = new Date(now.getTime() + 10 * 60 * 1000) // they expire
    s.challenge(wallet(999), 'a')
    expect(s.size).toBe(1)
  })

  it('a newer challenge of one client for one wallet replaces its oldest, and voids no other client\'s', async () => {
    const key = generatePrivateKey()
    const account = privateKeyToAccount(key)
    const s = new SiweChallenges({ publicUrl: 'http://pind.test', chainId: 167000 })
    const victims = s.challenge(account.address, 'victim')
    const mine = Array.from({ length: MAX_PER_CLIENT_WALLET + 2 }, () => s.challenge(account.address, 'attacker'))
    expect(s.size).toBe(1 + MAX_PER_CLIENT_WALLET)
    // the victim's challenge survived the attacker's, and signs in
    expect(await s.verify(victims.message, await account.signMessage({ message: victims.message }))).toBe(account.address.toLowerCase())
    // the attacker's oldest two were replaced
    await expect(s.verify(mine[0]!.message, await account.signMessage({ message: mine[0]!.message }))).rejects.toThrow(/unknown or already used nonce/)
    expect(await s.verify(mine.at(-1)!.message, await account.signMessage({ message: mine.at(-1)!.message }))).toBe(account.address.toLowerCase())
  })

  it('when every open challenge is taken, the oldest gives way to a new one', () => {
    const s = new SiweChallenges({ publicUrl: 'http://pind.test', chainId: 167000 })
    for (let i = 0; i < MAX_OPEN_CHALLENGES; i++) s.challenge(wallet(i), `client-${Math.floor(i / MAX_PER_CLIENT)}`)
    expect(s.size).toBe(MAX_OPEN_CHALLENGES)
    s.challenge(wallet(1), 'newcomer')
    expect(s.size).toBe(MAX_OPEN_CHALLENGES)
  })
})
