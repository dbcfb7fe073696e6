/**
 * The x402 v2 payment gate for write calls. It returns decisions as values
 * (x402-style) and the HTTP route writes them:
 *   - no or unusable payment → a 402 challenge (PAYMENT-REQUIRED header + readable JSON body)
 *   - a verified payment → who pays, the payment id (payer:nonce) and what to settle later
 * Verification happens before the work, settlement after it. Requirements are
 * always rebuilt from the server's own quote, never taken from the client's echo.
 * This folder is the only importer of @x402/* and viem.
 */
import { createHash } from 'node:crypto'
import {
  decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader
} from '@x402/core/http'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { InsufficientFundsError, PaymentRequiredError, UnavailableError } from '../kernel/errors.js'
import type { Logger } from '../kernel/log.js'
import type { FacilitatorChoice } from './facilitator.js'
import { NetworkLane, type NetworkStatus, type NetworkTerms } from './lane.js'
import type { SettlerBalance } from './settler-balance.js'
import { describeFormula, formatUsdc, type PriceSettings } from './pricing.js'
import { z } from 'zod/v4'
import { ADDRESS, count, DIGITS, text, USDC } from '../kernel/api-shapes.js'
import { Eip3009Payload } from './eip3009-payload.js'
import type { PaidRoute } from './bazaar.js'

export interface PaymentSettings extends NetworkTerms {
  maxTimeoutSeconds: number
  prices: PriceSettings
  /** how often the settler's balance is read (default 60 s) */
  settlerBalanceIntervalMs?: number
  /** past this, a settlement's outcome is uncertain (503; its note is left to reconciliation); default 60 s */
  settleDeadlineMs?: number
  /** more networks accepted beside this one (docs/networks.md): each settles on its own chain */
  more?: NetworkTerms[]
}

/** What /ready and `pind status` say about payments: as a whole, and each network's (`networks`). */
export interface PaymentsStatus extends Omit<NetworkStatus, 'network' | 'state'> {
  /** a network's states, or degraded: some networks take payments, others cannot now (see `networks`); `ok`: can paid writes succeed now on at least one (low-balance: yes, with a warning) */
  state: NetworkStatus['state'] | 'degraded'
  /** every accepted network, the first as configured first */
  networks: NetworkStatus[]
}

/**
 * The body of a 402 challenge beside its Failure: the terms in words (the
 * machine-readable terms are the PAYMENT-REQUIRED header). OpenAPI: the
 * PaymentTerms the PaymentRequired body is made of, derived from this.
 */
export const PaymentTerms = z.object({
  x402Version: z.literal(2),
  price: z.object({
    amount: text('the exact price in atomic units (10^-6 USDC)', { pattern: DIGITS }),
    usdc: text('the price in USDC', { pattern: USDC }),
    asset: text('the EIP-3009 token', { pattern: ADDRESS }),
    network: text('CAIP-2 network'),
    payTo: text('the address paid', { pattern: ADDRESS })
  }),
  networks: z.array(z.object({
    network: text('CAIP-2 network'),
    asset: text('the EIP-3009 token on it', { pattern: ADDRESS }),
    payTo: text('the address paid on it', { pattern: ADDRESS })
  })).optional().meta({ description: 'several networks accepted: each of them (the same amount in each asset\'s atomic units); price names the first' }),
  size: text('the bytes the price is computed on', { pattern: DIGITS }),
  months: count('the months quoted', 1),
  formula: text('the price formula'),
  howToPay: text('how to pay, in words'),
  sizeSource: text('where the size came from (X-Upload-Size, Content-Length, the root block, X-Pin-Size, or none: minimum price)').optional(),
  maxBytes: text('pins by CID: the most DAG bytes the pin may hold at this price', { pattern: DIGITS }).optional(),
  pinned_until_now: text('renewals: the current end', { format: 'date-time' }).optional(),
  pinned_until_after: text('renewals: the end once paid', { format: 'date-time' }).optional()
}).meta({ description: 'The terms of a 402 challenge in readable form' })

type Terms = z.output<typeof PaymentTerms>

export interface Quote {
  amount: bigint
  months: number
  /** the size the price was computed on */
  bytes: bigint
  /** absolute URL of the resource being paid for */
  resourceUrl: string
  description: string
  /** extra readable facts for the 402 body (e.g. how the size was determined) */
  notes?: Pick<Terms, 'sizeSource' | 'maxBytes' | 'pinned_until_now' | 'pinned_until_after'>
  /** the paid route and the request's path: the 402 carries its bazaar discovery extension (bazaar.ts) */
  discovery?: { route: PaidRoute, path: string }
}

/** the bazaar's service metadata of every 402 (resource.serviceName, resource.tags) */
const SERVICE = { serviceName: 'pind', tags: ['ipfs', 'pinning', 'storage'] }
/** why a write without a payment is refused */
const UNPAID = 'this write must be paid: see the PAYMENT-REQUIRED header'

export interface VerifiedPayment {
  payer: string
  /** `${payer}:${nonce}`: unique per signed authorization */
  id: string
  amount: bigint
  /** sha256 of the signed authorization: tells an honest retry from a forged one */
  proof: string
  payload: PaymentPayload
  /** the server's own requirements the payment matched: its network, asset and pay-to are the ones paid on */
  requirements: PaymentRequirements
  /** the CAIP-2 network paid on (= requirements.network) */
  network: string
  /** the token paid in (= requirements.asset) */
  asset: string
}

export type GateDecision =
  | { type: 'payment-required', error: PaymentRequiredError }
  | { type: 'verified', payment: VerifiedPayment }
  /** a payment already settled by this server (an honest retry, or a replay): not verified again */
  | { type: 'settled-before', payment: VerifiedPayment }

export type SettleOutcome =
  | { ok: true, tx: string, network: string, header: string }
  /**
   * serverSide: this service could not settle (gas, RPC, facilitator): 503, not 402. Either the
   * facilitator refused and the payment still verifies (it was not used), or `uncertain`: the
   * payment may have been used all the same — the settlement threw (it may have reached the chain
   * before failing: a facilitator that went away, a receipt never read), or it was refused but the
   * chain says the authorization is used, or that could not be checked. An uncertain settlement's
   * note stays for reconciliation (service/payments/settle.ts).
   */
  | { ok: false, reason: string, serverSide: boolean, uncertain?: boolean }

export const PAYMENT_HEADER = 'payment-signature'

/**
 * How long a request waits for its payment to be verified (the facilitator's
 * answer, or the embedded facilitator's RPC reads) before it answers 503: a
 * healthy verification takes milliseconds, and a request waiting on a hung
 * facilitator holds its socket and, for an upload, its slot. The payment is
 * not used by a verification, so the client retries it as it is.
 */
export const VERIFY_DEADLINE_MS = 10_000
/** how long a settlement may take before its outcome counts as uncertain (--settle-timeout) */
export const DEFAULT_SETTLE_DEADLINE_MS = 60_000
/** Retry-After (seconds) of a verification that did not finish in time */
const VERIFY_RETRY_S = 10

/**
 * The reasons (x402's named codes) a verifier or settler gives when the
 * payer's balance does not cover the payment: @x402/evm's exact EIP-3009
 * and Permit2 checks, its batch settlement, and x402 v1's generic name.
 */
export const INSUFFICIENT_FUNDS: ReadonlySet<string> = new Set([
  'invalid_exact_evm_insufficient_balance',
  'permit2_insufficient_balance',
  'invalid_batch_settlement_evm_insufficient_balance',
  'insufficient_funds'
])

export type PaymentEvent = 'required' | 'refused' | 'verified' | 'settled' | 'settle_failed'

export class PaymentGate {
  /** one per accepted network, the first as configured first */
  private readonly lanes: NetworkLane[]
  private readonly byNetwork = new Map<string, NetworkLane>()
  /** the first network's settler (the start-up summary; the others are in status().networks) */
  readonly settler?: string
  /** the first network's settler gas balance, when watched */
  readonly balance?: SettlerBalance
  /** settlements under way */
  settlesPending = 0
  /** built 402 answers by quote and reason, the latest MAX_CHALLENGES; each is sent as is, serialized once (rebuilt when a network comes up) */
  private readonly challenges = new Map<string, PaymentRequiredError>()
  /** the same, by the quote object given again (a WeakMap: they go with their quote) */
  private byQuote = new WeakMap<Quote, Map<string, PaymentRequiredError>>()

  /** `onEvent` observes (metrics) what happened to each payment; `reason` for settle_failed, `network` the one paid on */
  constructor (private readonly s: PaymentSettings, private readonly log: Logger, private readonly onEvent?: (event: PaymentEvent, amount?: bigint, reason?: string, network?: string) => void) {
    // a stuck settlement transaction is re-sent well within the settle deadline (a quarter of it, 2-15 s)
    const stuckAfterMs = Math.min(15_000, Math.max(2000, (s.settleDeadlineMs ?? DEFAULT_SETTLE_DEADLINE_MS) / 4))
    const all: NetworkTerms[] = [s, ...(s.more ?? [])]
    const opts = {
      log,
      stuckAfterMs,
      settlerBalanceIntervalMs: s.settlerBalanceIntervalMs ?? 60_000,
      named: all.length > 1,
      // a network that comes up joins the challenges: those built without it are dropped
      onInitialised: () => { this.challenges.clear(); this.byQuote = new WeakMap() }
    }
    this.lanes = all.map(t => {
      if (this.byNetwork.has(t.network)) throw new Error(`payment network ${t.network} is configured twice`)
      const lane = new NetworkLane({ network: t.network, asset: t.asset, assetName: t.assetName, assetVersion: t.assetVersion, payTo: t.payTo, facilitator: t.facilitator, ...(t.rpcUrl != null ? { rpcUrl: t.rpcUrl } : {}), ...(t.settlerMinBalance != null ? { settlerMinBalance: t.settlerMinBalance } : {}) }, opts)
      this.byNetwork.set(t.network, lane)
      return lane
    })
    const first = this.lanes[0] as NetworkLane
    this.settler = first.settler
    this.balance = first.balance
  }

  /**
   * Starts every network: checks its asset (fatal when it is wrong) and
   * initialises it. An unreachable RPC or facilitator is retried in the
   * background; writes paid on that network answer 503 until then.
   */
  async start (): Promise<void> {
    await Promise.all(this.lanes.map(async l => { await l.start() }))
  }

  /** the accepted networks, in order */
  get networks (): readonly string[] {
    return this.lanes.map(l => l.network)
  }

  /** stuck settlement nonces re-sent or filled so far (embedded facilitators, all networks) */
  get nonceRecoveries (): number | undefined {
    const counted = this.lanes.filter(l => l.nonces != null)
    return counted.length === 0 ? undefined : counted.reduce((n, l) => n + (l.nonces?.recoveries ?? 0), 0)
  }

  /** each watched settler's gas balance, by network */
  settlerBalances (): Array<{ network: string, wei: bigint }> {
    return this.lanes.flatMap(l => l.balance?.balance != null ? [{ network: l.network, wei: l.balance.balance }] : [])
  }

  stop (): void {
    for (const l of this.lanes) l.stop()
  }

  /**
   * Can paid writes succeed, and if not, why (for /ready, `pind status` and the
   * logs). One network: its status. Several: ready when all are, degraded when
   * some are (the others named), else the first one's trouble.
   */
  status (): PaymentsStatus {
    const networks = this.lanes.map(l => l.status())
    const first = networks[0] as NetworkStatus
    const { network: _n, ...head } = first
    if (networks.length === 1) return { ...head, networks }
    const down = networks.filter(n => !n.ok)
    if (down.length === 0) {
      const low = networks.filter(n => n.state === 'low-balance')
      return low.length === 0
        ? { ...head, state: 'ready', ok: true, message: 'payments are ready on every network', networks }
        : { ...head, state: 'low-balance', ok: true, message: low.map(n => n.message).join('; '), networks }
    }
    if (down.length < networks.length) {
      return { ...head, state: 'degraded', ok: true, message: `payments work on ${networks.filter(n => n.ok).map(n => n.network).join(', ')}; not on ${down.map(n => `${n.network} (${n.state})`).join(', ')}: ${down.map(n => n.message).join('; ')}`, networks }
    }
    return { ...head, ok: false, message: down.map(n => n.message).join('; '), networks }
  }

  /** 402 answers kept by their fields (tests) */
  get challengesKept (): number {
    return this.challenges.size
  }

  /** some network takes payments */
  isReady (): boolean {
    return this.lanes.some(l => l.ready)
  }

  /** every initialised network's requirements for this quote, in order */
  private async requirementsFor (q: Quote): Promise<Array<{ lane: NetworkLane, req: PaymentRequirements }>> {
    const out: Array<{ lane: NetworkLane, req: PaymentRequirements }> = []
    for (const lane of this.lanes) {
      if (lane.initialised) out.push({ lane, req: await lane.requirements(q.amount, this.s.maxTimeoutSeconds) })
    }
    if (out.length === 0) throw new UnavailableError('payments are temporarily unavailable (payment backend starting); retry shortly', 15)
    return out
  }

  /** A challenge (x402's 402) for this quote, with a readable reason; `insufficient`: the payer's balance is the reason. */
  async challenge (q: Quote, details: string, insufficient = false): Promise<PaymentRequiredError> {
    this.assertReady()
    // the same quote always yields the same challenge: build it once (the 402 path is the hot one).
    // A quote made once and given again (pin-create.ts keeps them) finds its challenges by itself;
    // any other by its fields
    const reason = insufficient ? `!${details}` : details
    let mine = this.byQuote.get(q)
    const ready = mine?.get(reason)
    if (ready != null) return ready
    const key = challengeKey(q, reason)
    let built = this.challenges.get(key)
    if (built == null) {
      const reqs = await this.requirementsFor(q)
      const d = q.discovery
      // every accepted network, as its own entry of `accepts`
      const rs = (reqs[0] as { lane: NetworkLane }).lane.rs
      const pr = await rs.createPaymentRequiredResponse(reqs.map(r => r.req), { url: q.resourceUrl, description: q.description, mimeType: 'application/json', ...SERVICE }, details, d?.route.extensionsFor(d.path))
      built = new (insufficient ? InsufficientFundsError : PaymentRequiredError)(details, encodePaymentRequiredHeader(pr), this.readableTerms(q, reqs.map(r => r.lane)))
      if (this.challenges.size >= MAX_CHALLENGES) this.challenges.delete(this.challenges.keys().next().value as string)
      this.challenges.set(key, built)
    }
    if (mine == null) this.byQuote.set(q, mine = new Map())
    // a quote's reasons: the few fixed ones, and a facilitator's codes
    if (mine.size < 16) mine.set(reason, built)
    return built
  }

  /**
   * The 402 body: the terms in words. Kept short on purpose (the 402 is the
   * hottest answer, and its cost grows with its size): the machine-readable
   * terms are only in the PAYMENT-REQUIRED header, the rules in the agent card.
   * `price` names the first network; `networks` every one, when there are several.
   */
  private readableTerms (q: Quote, lanes: NetworkLane[]): Terms {
    const t = (lanes[0] as NetworkLane).t
    return {
      x402Version: 2,
      price: { amount: q.amount.toString(), usdc: formatUsdc(q.amount), asset: t.asset, network: t.network, payTo: t.payTo },
      ...(lanes.length > 1 ? { networks: lanes.map(l => ({ network: l.t.network, asset: l.t.asset, payTo: l.t.payTo })) } : {}),
      size: q.bytes.toString(),
      months: q.months,
      formula: describeFormula(this.s.prices),
      ...q.notes,
      howToPay: 'x402 v2: sign the terms in the PAYMENT-REQUIRED header (EIP-3009, the exact amount) and retry with PAYMENT-SIGNATURE'
    }
  }

  /**
   * Reads PAYMENT-SIGNATURE and verifies it against the server's own requirements for this quote.
   * Without one, the quote's challenge; synchronous once it is built (throws synchronously only when
   * no network is set up: assertReady).
   */
  decide (header: string | undefined, q: Quote, settledBefore: (paymentId: string) => Promise<boolean> | boolean = () => false): Promise<GateDecision> | GateDecision {
    this.assertReady()
    if (header == null || header === '') {
      this.onEvent?.('required')
      // unpaid, and this quote's challenge built already: answered at once (the 402 is the hottest answer)
      const built = this.byQuote.get(q)?.get(UNPAID)
      return built != null ? { type: 'payment-required', error: built } : this.challenge(q, UNPAID).then(error => ({ type: 'payment-required', error }))
    }
    return this.decidePaid(header, q, settledBefore)
  }

  private async decidePaid (header: string, q: Quote, settledBefore: (paymentId: string) => Promise<boolean> | boolean): Promise<GateDecision> {
    let payload: PaymentPayload
    try {
      payload = decodePaymentSignatureHeader(header)
    } catch {
      return { type: 'payment-required', error: await this.challenge(q, 'the PAYMENT-SIGNATURE header is not a valid base64 x402 payment payload') }
    }
    const reqs = await this.requirementsFor(q)
    // the payment's accepted terms must equal one network's own requirements as a whole (network, asset,
    // pay-to, amount, EIP-712 domain): terms mixed from two networks match none
    let found: { lane: NetworkLane, match: PaymentRequirements } | undefined
    if (payload?.x402Version === 2) {
      for (const { lane, req } of reqs) {
        const match = lane.rs.findMatchingRequirements([req], payload)
        if (match != null) { found = { lane, match }; break }
      }
    }
    if (found == null) {
      const terms = reqs.map(({ lane }) => `${lane.t.asset} to ${lane.t.payTo} on ${lane.network}`).join(', or ')
      return { type: 'payment-required', error: await this.challenge(q, `the payment does not match this request's terms (amount ${q.amount} of ${terms})`) }
    }
    const { lane, match } = found
    const who = identify(payload)
    if (who == null) {
      this.onEvent?.('refused', undefined, undefined, lane.network)
      return { type: 'payment-required', error: await this.challenge(q, 'only well-formed EIP-3009 (transferWithAuthorization) payments are accepted: payload.authorization needs from, to, value, validAfter, validBefore and nonce, and payload.signature') }
    }
    const { payer: from, id, proof } = who
    const payment: VerifiedPayment = { payer: from, id, amount: q.amount, proof, payload, requirements: match, network: lane.network, asset: lane.t.asset }
    if (await settledBefore(id)) {
      return { type: 'settled-before', payment }
    }
    // a network that cannot take payments now: 503, the payment not used (the others go on)
    lane.assertUsable()
    let verify
    try {
      verify = await withDeadline(lane.rs.verifyPayment(payload, match), VERIFY_DEADLINE_MS)
    } catch (err) {
      if (err instanceof DeadlineError) {
        this.log.warn('payment verification did not finish in time', { payment: id, network: lane.network, deadlineMs: VERIFY_DEADLINE_MS })
        throw new UnavailableError('the payment could not be verified in time (the payment service is slow right now); it was not used: retry shortly with the same payment', VERIFY_RETRY_S)
      }
      this.log.warn('payment verification failed to run', { network: lane.network, error: (err as Error).message })
      lane.balance?.refresh(0)
      throw new UnavailableError(this.lanes.length > 1 ? `the payment on ${lane.network} could not be verified right now; retry shortly (or pay on another network)` : 'the payment could not be verified right now; retry shortly', VERIFY_RETRY_S)
    }
    if (!verify.isValid) {
      if (!await lane.answers()) {
        this.log.warn('payment verification failed while the network\'s RPC does not answer', { network: lane.network, reason: verify.invalidReason })
        throw new UnavailableError(this.lanes.length > 1 ? `the payment on ${lane.network} could not be verified right now (its RPC does not answer); it was not used: retry shortly (or pay on another network)` : 'the payment could not be verified right now; it was not used: retry shortly', VERIFY_RETRY_S)
      }
      this.onEvent?.('refused', undefined, undefined, lane.network)
      const code = verify.invalidReason ?? 'invalid_payment'
      return { type: 'payment-required', error: await this.challenge(q, `the payment was refused: ${code}`, INSUFFICIENT_FUNDS.has(code)) }
    }
    this.onEvent?.('verified', q.amount, undefined, lane.network)
    return { type: 'verified', payment }
  }

  /** the network a verified payment was made on */
  private laneOf (p: VerifiedPayment): NetworkLane | undefined {
    return this.byNetwork.get(p.requirements.network)
  }

  /**
   * Settles a verified payment after the work is done, on the network it was
   * made on. Never throws; facilitator text is logged, not returned. A refused
   * settlement whose payment still verifies (the payer's signature, balance and
   * nonce are fine) failed on this side — the settler's gas, the RPC, the
   * facilitator: `serverSide`, so the payer is not blamed (503, and the payment stays usable).
   */
  async settle (p: VerifiedPayment): Promise<SettleOutcome> {
    const lane = this.laneOf(p)
    if (lane == null) return { ok: false, reason: 'unknown_network', serverSide: true }
    this.settlesPending++
    try {
      const r = await withDeadline(lane.rs.settlePayment(p.payload, p.requirements), this.s.settleDeadlineMs ?? DEFAULT_SETTLE_DEADLINE_MS)
      if (!r.success) {
        const reason = r.errorReason ?? 'settlement_failed'
        const state = await this.afterRefusal(lane, p)
        const serverSide = state !== 'refused'
        this.onEvent?.('settle_failed', p.amount, serverSide ? `server:${reason}` : reason, lane.network)
        this.log.warn({
          unused: 'settlement failed on this side; the payment is still valid',
          refused: 'settlement refused',
          used: 'settlement failed, yet the authorization is used on chain: the payment went through; its note stays for reconciliation',
          unknown: 'settlement failed and whether the payment was used cannot be told now: its note stays for reconciliation'
        }[state], { payment: p.id, network: lane.network, reason })
        if (serverSide) lane.balance?.refresh(0)
        return state === 'used' || state === 'unknown' ? { ok: false, reason, serverSide, uncertain: true } : { ok: false, reason, serverSide }
      }
      this.onEvent?.('settled', p.amount, undefined, lane.network)
      return { ok: true, tx: r.transaction, network: r.network, header: encodePaymentResponseHeader(r) }
    } catch (err) {
      // it may still go through (the transaction may be in flight): uncertain either way
      const late = err instanceof DeadlineError
      this.onEvent?.('settle_failed', p.amount, late ? 'server:timeout' : 'server:error', lane.network)
      this.log.warn(late ? 'settlement did not finish in time: its note stays for reconciliation' : 'settlement failed', { payment: p.id, network: lane.network, error: (err as Error).message.split('\n')[0] })
      lane.balance?.refresh(0)
      return { ok: false, reason: 'settlement_failed', serverSide: true, uncertain: true }
    } finally {
      this.settlesPending--
    }
  }

  /**
   * After a refused settlement: `unused` when the payment still verifies (this side failed; the
   * payment stays good). When it no longer does, the payer may be at fault (balance spent, nonce
   * used elsewhere) — or the facilitator's transaction went through before it failed (an RPC
   * that dropped the answer to eth_sendRawTransaction, a receipt that could not be read): the
   * token's authorizationState tells `used` (the money moved) from `refused`. `unknown`: the
   * payment could not be verified, or its authorization not read.
   */
  private async afterRefusal (lane: NetworkLane, p: VerifiedPayment): Promise<'unused' | 'refused' | 'used' | 'unknown'> {
    try {
      if ((await lane.rs.verifyPayment(p.payload, p.requirements)).isValid) return 'unused'
    } catch {
      return 'unknown'
    }
    const [authorizer, nonce] = p.id.split(':') as [`0x${string}`, `0x${string}`]
    if (lane.authorizations == null) return 'refused'
    try {
      return await lane.authorizations.isUsed(authorizer, nonce) ? 'used' : 'refused'
    } catch {
      return 'unknown'
    }
  }

  /**
   * The answer to a failed settlement: 503 with Retry-After when it failed
   * on this side (the same signed payment can be sent again), else a 402
   * challenge naming the payer's problem. `outcome`: what was not done.
   */
  async settleRefusal (q: Quote, s: Extract<SettleOutcome, { ok: false }>, outcome: string): Promise<UnavailableError | PaymentRequiredError> {
    if (s.serverSide) {
      return new UnavailableError(s.uncertain === true
        ? `this service could not settle the payment (a problem on its side, not the payment's); ${outcome}: retry later`
        : `this service could not settle the payment (a problem on its side, not the payment's); ${outcome}, the payment was not used: retry later with the same or a new payment`, 60)
    }
    return await this.challenge(q, `the payment could not be settled (${s.reason}); ${outcome}`, INSUFFICIENT_FUNDS.has(s.reason))
  }

  /** some network can take payments now, else the 503 of the first one's trouble */
  private assertReady (): void {
    if (this.lanes.some(l => l.usable())) return
    const ready = this.lanes.find(l => l.ready)
    if (this.lanes.length === 1 || ready == null) {
      const l = ready ?? this.lanes[0] as NetworkLane
      if (this.lanes.length === 1) { l.assertUsable(); return }
      throw new UnavailableError(`payments are temporarily unavailable (${this.lanes.map(x => `${x.network}: ${x.lastError}`).join('; ')}); retry shortly`, 15)
    }
    for (const l of this.lanes) l.balance?.refresh()
    throw new UnavailableError('payments are temporarily unavailable (this service\'s settlement accounts cannot pay gas on any network); retry later', 60)
  }
}

/**
 * 402 answers kept: the hot path asks for the same few again and again (an agent's unpaid retry,
 * a scanner); one quote for each size asked is what a busy service sees otherwise, and those gain
 * nothing from being kept. Each is ~4.5 KB of strings (the PAYMENT-REQUIRED header, the body):
 * 1,000 of them were 5-8 MiB of the heap that stayed after a soak's load (docs/performance.md).
 */
export const MAX_CHALLENGES = 64

/** a quote's fields and the reason, as one string (NUL-separated: no field holds one) */
function challengeKey (q: Quote, reason: string): string {
  const n = q.notes
  return `${q.amount}\0${q.months}\0${q.bytes}\0${q.resourceUrl}\0${q.description}\0${q.discovery?.route.key ?? ''} ${q.discovery?.path ?? ''}\0${n?.sizeSource ?? '\u0001'}\0${n?.maxBytes ?? '\u0001'}\0${n?.pinned_until_now ?? '\u0001'}\0${n?.pinned_until_after ?? '\u0001'}\0${reason}`
}

class DeadlineError extends Error {}

/** `p`, or a DeadlineError once `ms` have passed (p goes on; its outcome is dropped) */
async function withDeadline<T> (p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => { reject(new DeadlineError(`not done within ${ms} ms`)) }, ms)
  })
  p.catch(() => {})
  try {
    return await Promise.race([p, deadline])
  } finally {
    clearTimeout(timer)
  }
}

export interface PaymentIdentity {
  payer: string
  /** `${payer}:${nonce}` */
  id: string
  /** sha256 of the signed authorization */
  proof: string
}

/**
 * Who pays and which payment a PAYMENT-SIGNATURE header carries, read from
 * the header alone: nothing is verified (a header naming a payment that was
 * already used needs no verifier to be recognised). Undefined when it is not
 * a well-formed EIP-3009 payment.
 */
export function identifyPayment (header: string): PaymentIdentity | undefined {
  try {
    return identify(decodePaymentSignatureHeader(header))
  } catch {
    return undefined
  }
}

function identify (payload: PaymentPayload): PaymentIdentity | undefined {
  const auth = eip3009Authorization(payload?.payload)
  if (auth == null) return undefined
  const payer = auth.from.toLowerCase()
  return { payer, id: `${payer}:${auth.nonce.toLowerCase()}`, proof: createHash('sha256').update(JSON.stringify(payload.payload)).digest('hex') }
}

/** The EIP-3009 authorization of an exact-EVM payload, if it is well-formed (checked before any verifier sees it). */
function eip3009Authorization (payload: unknown): { from: string, nonce: string } | undefined {
  const r = Eip3009Payload.safeParse(payload)
  return r.success ? { from: r.data.authorization.from, nonce: r.data.authorization.nonce } : undefined
}
