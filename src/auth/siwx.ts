/**
 * Sign-In-With-X (x402's `sign-in-with-x` extension, CAIP-122 / EIP-4361) on
 * the owner endpoints: a request carries `SIGN-IN-WITH-X: <base64 JSON>`, a
 * SIWE message's fields plus its signature, instead of a bearer token. The
 * parsing, the field checks and the signature check are @x402/extensions'
 * (loaded on first use); this file adds what the package leaves to servers:
 * the payment chain only, a bounded header, and single-use nonces kept in
 * the ledger so that every front end sharing it refuses a replay.
 *
 * A nonce is marked used only after the signature checks out (an unsigned
 * header never writes to the ledger), until its message can no longer be
 * valid anywhere (issuedAt + MAX_AGE_MS, plus CLOCK_SKEW_MS for front ends
 * whose clocks differ).
 *
 * Signatures: an EOA's is recovered locally (no RPC); anything else
 * (EIP-1271 contract wallets, EIP-6492 wallets not deployed yet) goes to
 * viem's verifyMessage through the payment RPC, when there is one.
 */
import { randomBytes } from 'node:crypto'
import type { EVMMessageVerifier, SIWxPayload } from '@x402/extensions/sign-in-with-x'
import { PindError } from '../kernel/errors.js'

/** a message's issuedAt may be this old at most (the package's default); the challenge expires then too */
export const MAX_AGE_MS = 5 * 60 * 1000
/** how much front ends' clocks may differ: a used nonce is kept this much longer */
export const CLOCK_SKEW_MS = 5 * 60 * 1000
/** the longest SIGN-IN-WITH-X header taken (base64 characters): an EIP-6492 signature with its factory call fits well */
export const MAX_HEADER_CHARS = 8192
export const SIWX_HEADER = 'sign-in-with-x'
/**
 * contract-wallet checks (each an eth_call) in flight at most; past that a sign-in answers 503:
 * a forged signature for any address costs one, so the RPC is not flooded by them
 */
export const MAX_CONTRACT_CHECKS = 8
export const STATEMENT = 'Sign in to pind to manage your pins. This costs nothing.'

/** A SIGN-IN-WITH-X header that does not sign anyone in (its message is for the client: a 401). */
export class SiwxError extends PindError {
  override name = 'SiwxError'
  /** reason: the package's code (`invalid_siwx_*`) or pind's own */
  constructor (message: string, readonly reason: string) {
    super(message)
  }
}

/** The signature could not be checked now (the RPC failed): a 503, nothing was decided. */
export class SiwxUnavailableError extends PindError {
  override name = 'SiwxUnavailableError'
  readonly retryAfterSeconds = 5
}

export interface SiwxOptions {
  /** the service's public URL: its host is the domain, its origin the URI's */
  publicUrl: string
  /** the payment network (`eip155:<id>`): the only chain signed in on */
  network: string
  /** TokenLedger.useNonce: true when the nonce was free and is now used */
  useNonce: (nonce: string, until: Date) => Promise<boolean>
  /** checks a signature that is not an EOA's through the chain (viem's publicClient.verifyMessage); absent: EOA signatures only */
  contractVerifier?: () => EVMMessageVerifier
}

type Siwx = typeof import('@x402/extensions/sign-in-with-x')
let loaded: Promise<Siwx> | undefined
const siwx = async (): Promise<Siwx> => await (loaded ??= import('@x402/extensions/sign-in-with-x'))

const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const NONCE = /^[A-Za-z0-9]{8,64}$/
const SIGNATURE = /^0x(?:[0-9a-fA-F]{2})+$/

export class SignInWithX {
  private readonly origin: URL
  /** the public URL without a trailing slash: resource URIs are it plus the request's path */
  private readonly base: string
  private contract: EVMMessageVerifier | undefined
  private contractChecks = 0

  constructor (private readonly o: SiwxOptions) {
    this.origin = new URL(new URL(o.publicUrl).origin)
    this.base = o.publicUrl.replace(/\/+$/, '')
  }

  /**
   * The `PAYMENT-REQUIRED` value of a 401 (base64 JSON, x402 v2): nothing to
   * pay (`accepts: []`, the package's "auth-only" route) and a fresh
   * `sign-in-with-x` challenge for `resource` (the request's path, under
   * the public URL).
   */
  async challenge (resource: string, error: string): Promise<string> {
    const { buildSIWxSchema, SIGN_IN_WITH_X } = await siwx()
    const now = Date.now()
    const uri = new URL(this.base + resource).href
    const required = {
      x402Version: 2,
      error,
      resource: { url: uri, description: 'an owner endpoint: sign in with your wallet (SIGN-IN-WITH-X) or send Authorization: Bearer', mimeType: 'application/json' },
      accepts: [],
      extensions: {
        [SIGN_IN_WITH_X]: {
          info: {
            domain: this.origin.host,
            uri,
            version: '1',
            nonce: randomBytes(16).toString('hex'),
            issuedAt: new Date(now).toISOString(),
            expirationTime: new Date(now + MAX_AGE_MS).toISOString(),
            statement: STATEMENT,
            resources: [uri]
          },
          supportedChains: [{ chainId: this.o.network, type: 'eip191' }],
          schema: buildSIWxSchema()
        }
      }
    }
    return Buffer.from(JSON.stringify(required)).toString('base64')
  }

  /**
   * The wallet a SIGN-IN-WITH-X header signs in (lowercase); SiwxError when it does not,
   * SiwxUnavailableError when that cannot be told now. `path`: the request's path; the
   * message's URI must name it (the spec asks only for the origin: a header signed for
   * one endpoint is not taken at another, e.g. a list's at a DELETE).
   */
  async verify (header: string, path: string): Promise<string> {
    if (header.length > MAX_HEADER_CHARS) throw new SiwxError(`the SIGN-IN-WITH-X header is over ${MAX_HEADER_CHARS} characters`, 'pind_siwx_too_large')
    const x = await siwx()
    let p: SIWxPayload
    try {
      p = x.parseSIWxHeader(header)
    } catch (err) {
      throw new SiwxError(`${(err as Error).message.slice(0, 300)} (send base64 of the JSON the sign-in-with-x extension describes)`, 'pind_siwx_malformed')
    }
    if (p.chainId !== this.o.network || p.type !== 'eip191') {
      throw new SiwxError(`the message is for chain ${p.chainId.slice(0, 100)} (${p.type}); this service signs in on ${this.o.network} (eip191)`, 'invalid_siwx_chain_id')
    }
    if (!ADDRESS.test(p.address)) throw new SiwxError('address must be a 0x-prefixed 20-byte hex address', 'pind_siwx_malformed')
    if (!NONCE.test(p.nonce)) throw new SiwxError('nonce must be 8 to 64 letters and digits (the challenge\'s)', 'invalid_siwx_nonce')
    if (!SIGNATURE.test(p.signature)) throw new SiwxError('signature must be 0x-prefixed hex', 'invalid_siwx_malformed_signature')
    if (p.version !== '1') throw new SiwxError('version must be "1"', 'pind_siwx_malformed')
    const fields = await x.validateSIWxMessage(p, this.origin, { maxAge: MAX_AGE_MS })
    // the package's messages quote the header's fields: bounded here
    if (!fields.isValid) throw new SiwxError(fields.invalidMessage.slice(0, 300), fields.invalidReason)
    const expected = new URL(this.base + path).pathname
    if (new URL(p.uri).pathname !== expected) {
      throw new SiwxError(`the message's URI is for ${new URL(p.uri).pathname.slice(0, 200)}, this request is for ${expected}: sign this request's challenge`, 'invalid_siwx_uri_mismatch')
    }
    let checked: Awaited<ReturnType<Siwx['verifySIWxSignature']>>
    try {
      checked = await x.verifySIWxSignature(p, { evmVerifier: this.verifier(x) })
    } catch (err) {
      // the message could not be put together from these fields (the SIWE library refused one)
      throw new SiwxError(`the message cannot be built from these fields: ${(err as Error).message.slice(0, 200)}`, 'pind_siwx_malformed')
    }
    if (!checked.isValid) {
      if (checked.invalidReason === 'invalid_siwx_verifier_error') throw new SiwxUnavailableError('the signature could not be checked against the chain now; retry shortly')
      const why = this.o.contractVerifier != null ? 'for a contract wallet: its isValidSignature refused it' : 'contract wallets cannot sign in here: the service has no RPC to ask them'
      throw new SiwxError(checked.invalidReason === 'invalid_siwx_signature' ? `the signature is not the address's (${why})` : checked.invalidMessage.slice(0, 300), checked.invalidReason)
    }
    const until = new Date(Date.parse(p.issuedAt) + MAX_AGE_MS + CLOCK_SKEW_MS)
    if (!(await this.o.useNonce(p.nonce, until))) throw new SiwxError('this nonce was used already: sign a new challenge for each request', 'invalid_siwx_nonce')
    return p.address.toLowerCase()
  }

  /** an EOA's signature recovered locally; otherwise the chain's word, when there is an RPC */
  private verifier (x: Siwx): EVMMessageVerifier {
    return async (args) => {
      if (await x.verifyEVMSignature(args.message, args.address, args.signature)) return true
      if (this.o.contractVerifier == null) return false
      // thrown here: the package answers invalid_siwx_verifier_error, which verify() makes a 503
      if (this.contractChecks >= MAX_CONTRACT_CHECKS) throw new Error('too many contract-wallet sign-ins being checked')
      this.contract ??= this.o.contractVerifier()
      this.contractChecks++
      try {
        return await this.contract(args)
      } finally {
        this.contractChecks--
      }
    }
  }
}
