/**
 * Sign-In with Ethereum (EIP-4361), so an owner can get a new wallet token
 * without paying again: POST /auth/challenge gives a message with a fresh
 * nonce; POST /auth/token takes it back signed. Nonces are single-use, expire
 * after 10 minutes, and are bound to the address, this service's domain/URI
 * and the payment chain. They live in memory (bounded): an unauthenticated
 * request never writes to the ledger, and a restart simply voids open
 * challenges. Signatures are checked with viem (EOA signatures; ERC-1271
 * smart-contract wallets are not supported).
 */
import { getAddress, isAddress, verifyMessage } from 'viem'
import { createSiweMessage, generateSiweNonce, parseSiweMessage, validateSiweMessage } from 'viem/siwe'

export const CHALLENGE_TTL_MS = 10 * 60 * 1000
const MAX_OPEN_CHALLENGES = 10_000

export class SiweError extends Error {
  override name = 'SiweError'
}

export interface SiweOptions {
  /** the service's public URL: its host is the SIWE domain */
  publicUrl: string
  chainId: number
  clock?: () => Date
}

interface Open { address: string, expires: number }

export class SiweChallenges {
  private readonly open = new Map<string, Open>()
  private readonly domain: string
  private readonly clock: () => Date

  constructor (private readonly o: SiweOptions) {
    this.domain = new URL(o.publicUrl).host
    this.clock = o.clock ?? (() => new Date())
  }

  challenge (address: string): { message: string, nonce: string, expiresAt: string } {
    if (typeof address !== 'string' || !isAddress(address, { strict: false })) throw new SiweError('address must be a 0x-prefixed 20-byte hex address')
    const now = this.clock()
    this.sweep(now.getTime())
    if (this.open.size >= MAX_OPEN_CHALLENGES) throw new SiweError('too many open sign-in challenges; retry in a few minutes')
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
    this.open.set(nonce, { address: address.toLowerCase(), expires: expires.getTime() })
    return { message, nonce, expiresAt: expires.toISOString() }
  }

  /** Checks a signed challenge; returns the lowercase address. Consumes the nonce whatever the outcome. */
  async verify (message: string, signature: string): Promise<string> {
    if (typeof message !== 'string' || typeof signature !== 'string' || !/^0x[0-9a-fA-F]+$/.test(signature)) {
      throw new SiweError('send {"message": "<the challenge message>", "signature": "0x…"}')
    }
    const parsed = parseSiweMessage(message)
    const nonce = parsed.nonce
    const open = nonce != null ? this.open.get(nonce) : undefined
    if (nonce != null) this.open.delete(nonce)
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

  private sweep (now: number): void {
    for (const [nonce, o] of this.open) if (o.expires <= now) this.open.delete(nonce)
  }
}
