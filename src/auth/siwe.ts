/**
 * Sign-In with Ethereum (EIP-4361), so an owner can get a new wallet token
 * without paying again: POST /auth/challenge gives a message with a fresh
 * nonce; POST /auth/token takes it back signed. Nonces are single-use, expire
 * after 10 minutes, and are bound to the address, this service's domain/URI
 * and the payment chain. They live in memory (bounded): an unauthenticated
 * request never writes to the ledger, and a restart simply voids open
 * challenges. Signatures are checked with viem (EOA signatures; ERC-1271
 * smart-contract wallets are not supported).
 *
 * Nobody can lock others out by holding challenges open: a client (its
 * address; IPv6 by /64) holds at most MAX_PER_CLIENT open challenges (past
 * that: SiweBusyError, a 429), and at most MAX_PER_CLIENT_WALLET for one
 * wallet (a newer one replaces its own oldest). No cap per wallet across
 * clients: that would let anyone block a wallet. Should many clients fill
 * all MAX_OPEN_CHALLENGES, the oldest open challenge is dropped, never a new
 * one refused.
 */
import { getAddress, verifyMessage } from 'viem'
import { createSiweMessage, generateSiweNonce, parseSiweMessage, validateSiweMessage } from 'viem/siwe'
import { z } from 'zod/v4'
import { ADDRESS, HEX, matching, text } from '../kernel/api-shapes.js'
import { PindError } from '../kernel/errors.js'

export const CHALLENGE_TTL_MS = 10 * 60 * 1000
export const MAX_OPEN_CHALLENGES = 10_000
export const MAX_PER_CLIENT = 16
export const MAX_PER_CLIENT_WALLET = 3

export class SiweError extends PindError {
  override name = 'SiweError'
}

/** The client already holds its share of open challenges: sign one of them, or wait. */
export class SiweBusyError extends SiweError {
  override name = 'SiweBusyError'
  constructor (message: string, readonly retryAfterSeconds: number) {
    super(message)
  }
}

/** the body of POST /auth/challenge: challenge() checks the address with it (OpenAPI: SiweChallengeRequest, derived from this) */
export const SiweChallengeRequest = z.object({
  address: matching('the wallet address', ADDRESS)
})

/** the body of POST /auth/token: verify() checks its fields with it (OpenAPI: SiweTokenRequest, derived from this) */
export const SiweTokenRequest = z.object({
  message: text('the challenge message, unchanged'),
  signature: matching('personal_sign signature of the message', HEX)
})

export interface SiweOptions {
  /** the service's public URL: its host is the SIWE domain */
  publicUrl: string
  chainId: number
  clock?: () => Date
}

interface Open { address: string, client: string, expires: number }

export class SiweChallenges {
  /** insertion order is expiry order (one TTL for all) */
  private readonly open = new Map<string, Open>()
  /** each client's open nonces, oldest first */
  private readonly byClient = new Map<string, string[]>()
  private readonly domain: string
  private readonly clock: () => Date

  constructor (private readonly o: SiweOptions) {
    this.domain = new URL(o.publicUrl).host
    this.clock = o.clock ?? (() => new Date())
  }

  /** A new challenge for `address`, asked for by `client` (the key per-client limits count by). */
  challenge (address: string, client: string): { message: string, nonce: string, expiresAt: string } {
    if (!SiweChallengeRequest.safeParse({ address }).success) throw new SiweError('address must be a 0x-prefixed 20-byte hex address')
    const now = this.clock()
    this.sweep(now.getTime())
    const wallet = address.toLowerCase()
    const mine = this.byClient.get(client) ?? []
    const forWallet = mine.filter(n => this.open.get(n)?.address === wallet)
    if (forWallet.length >= MAX_PER_CLIENT_WALLET) this.drop(forWallet[0] as string)
    else if (mine.length >= MAX_PER_CLIENT) {
      const oldest = this.open.get(mine[0] as string) as Open
      const retry = Math.max(1, Math.ceil((oldest.expires - now.getTime()) / 1000))
      throw new SiweBusyError(`this address already has ${MAX_PER_CLIENT} open sign-in challenges: sign one of them, or retry in ${retry} s`, retry)
    }
    if (this.open.size >= MAX_OPEN_CHALLENGES) this.drop(this.open.keys().next().value as string)
    const nonce = generateSiweNonce()
    const expires = new Date(now.getTime() + CHALLENGE_TTL_MS)
    const message = createSiweMessage({
      domain: this.domain,
      address: getAddress(address),
      statement: 'Sign in to pind to get a wallet auth token for your pins. This costs nothing.',
      uri: this.o.publicUrl,
      version: '1',
      chainId: this.o.chainId,
      nonce,
      issuedAt: now,
      expirationTime: expires
    })
    this.open.set(nonce, { address: wallet, client, expires: expires.getTime() })
    const list = this.byClient.get(client)
    if (list == null) this.byClient.set(client, [nonce])
    else list.push(nonce)
    return { message, nonce, expiresAt: expires.toISOString() }
  }

  /** Checks a signed challenge; returns the lowercase address. Consumes the nonce whatever the outcome. */
  async verify (message: string, signature: string): Promise<string> {
    if (!SiweTokenRequest.safeParse({ message, signature }).success) {
      throw new SiweError('send {"message": "<the challenge message>", "signature": "0x…"}')
    }
    const parsed = parseSiweMessage(message)
    const nonce = parsed.nonce
    const open = nonce != null ? this.open.get(nonce) : undefined
    if (nonce != null) this.drop(nonce)
    const now = this.clock()
    if (open == null) throw new SiweError('unknown or already used nonce: ask POST /auth/challenge for a new message')
    if (open.expires <= now.getTime()) throw new SiweError('the sign-in message has expired: ask for a new one')
    if (parsed.address == null || parsed.address.toLowerCase() !== open.address) throw new SiweError('the message names another address than the challenge')
    if (parsed.chainId !== this.o.chainId) throw new SiweError(`the message is for chain ${String(parsed.chainId)}, this service signs in on chain ${this.o.chainId}`)
    if (parsed.uri !== this.o.publicUrl) throw new SiweError('the message is for another service URI')
    if (!validateSiweMessage({ message: parsed, domain: this.domain, nonce, time: now })) {
      throw new SiweError('the sign-in message is not valid for this service (domain, time or fields)')
    }
    const ok = await verifyMessage({ address: parsed.address, message, signature: signature as `0x${string}` }).catch(() => false)
    if (!ok) throw new SiweError('the signature does not match the address')
    return open.address
  }

  /** open challenges (all clients) */
  get size (): number {
    return this.open.size
  }

  private drop (nonce: string): void {
    const o = this.open.get(nonce)
    if (o == null) return
    this.open.delete(nonce)
    const list = this.byClient.get(o.client) as string[]
    list.splice(list.indexOf(nonce), 1)
    if (list.length === 0) this.byClient.delete(o.client)
  }

  private sweep (now: number): void {
    for (const [nonce, o] of this.open) {
      if (o.expires > now) break
      this.drop(nonce)
    }
  }
}
