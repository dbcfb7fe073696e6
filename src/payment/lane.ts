/**
 * One accepted payment network (docs/networks.md): its terms (asset, EIP-712
 * domain, pay-to), the facilitator that verifies and settles on it, the
 * settler's gas balance there, and whether it works now. The gate (gate.ts)
 * holds one per network; a network whose RPC or facilitator fails never stops
 * the others.
 */
import { x402ResourceServer } from '@x402/core/server'
import type { PaymentRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/server'
import type { AcceptedNetwork } from '../kernel/accepted-network.js'
import { UnavailableError } from '../kernel/errors.js'
import type { Logger } from '../kernel/log.js'
import { AssetMismatchError, checkAsset } from './asset-check.js'
import { authorizationStateReader, type AuthorizationStateReader } from './authorization-state.js'
import { buildFacilitator, type FacilitatorChoice } from './facilitator.js'
import { SettlerBalance } from './settler-balance.js'
import type { SettlerNonces } from './settler-nonce.js'

/** the terms of one accepted network and what settles on it */
export interface NetworkTerms extends AcceptedNetwork<`0x${string}`> {
  rpcUrl?: string
  facilitator: FacilitatorChoice
  /** embedded facilitator: warn below this settler balance (wei); its balance is watched only when set */
  settlerMinBalance?: bigint
}

/** What /ready and `pind status` say about payments on one network. */
export interface NetworkStatus {
  network: string
  state: 'ready' | 'low-balance' | 'starting' | 'unreachable' | 'unfunded' | 'asset-misconfigured'
  ok: boolean
  message: string
  facilitator: FacilitatorChoice['kind']
  settler?: string
  settlerBalanceWei?: string
  settlerMinBalanceWei?: string
}

export interface LaneOptions {
  log: Logger
  stuckAfterMs: number
  settlerBalanceIntervalMs: number
  /** several networks: messages name theirs */
  named: boolean
  /** called each time the lane's resource server is initialised (the gate's challenges are rebuilt) */
  onInitialised: () => void
}

/** a /ready (or status) call reads a watched settler balance again at most this often */
const STATUS_RECHECK_MS = 5000

export class NetworkLane {
  readonly rs: x402ResourceServer
  /** the resource server knows the facilitator's kinds: requirements can be built */
  initialised = false
  /** the asset checked and the resource server initialised */
  ready = false
  lastError = 'payment backend starting'
  private retry: NodeJS.Timeout | undefined
  private stopped = false
  readonly settler?: `0x${string}`
  readonly balance?: SettlerBalance
  readonly authorizations?: AuthorizationStateReader
  private readonly warm?: () => Promise<void>
  readonly nonces?: SettlerNonces

  constructor (readonly t: NetworkTerms, private readonly o: LaneOptions) {
    const built = buildFacilitator(t.facilitator, { log: o.log, stuckAfterMs: o.stuckAfterMs })
    this.nonces = built.nonces
    if (t.rpcUrl != null) this.authorizations = authorizationStateReader({ network: t.network, rpcUrl: t.rpcUrl, asset: t.asset })
    this.settler = built.settler
    this.warm = built.warm
    if (t.facilitator.kind === 'embedded' && built.settler != null && t.settlerMinBalance != null) {
      this.balance = new SettlerBalance({
        network: t.network,
        rpcUrl: t.facilitator.rpcUrl,
        address: built.settler,
        minBalance: t.settlerMinBalance,
        intervalMs: o.settlerBalanceIntervalMs,
        log: o.log
      })
    }
    this.rs = new x402ResourceServer(built.client).register(t.network as `${string}:${string}`, new ExactEvmScheme())
  }

  get network (): string {
    return this.t.network
  }

  /** ` on eip155:8453` when several networks are accepted, else nothing */
  private get on (): string {
    return this.o.named ? ` on ${this.t.network}` : ''
  }

  /** Checks the asset (fatal when it is wrong) and initialises; an unreachable RPC or facilitator is retried in the background. */
  async start (): Promise<void> {
    try {
      await this.init()
    } catch (err) {
      if (err instanceof AssetMismatchError) throw err
      this.lastError = 'payment backend unreachable'
      this.o.log.warn('payments not ready; retrying in the background', { network: this.t.network, error: (err as Error).message })
      this.scheduleRetry(2000)
    }
    // the settler's balance, read now (logged with its address) and then periodically
    await this.balance?.start()
  }

  stop (): void {
    this.nonces?.stop()
    this.stopped = true
    clearTimeout(this.retry)
    this.balance?.stop()
  }

  private async init (): Promise<void> {
    if (this.t.rpcUrl != null) {
      await checkAsset({ network: this.t.network, rpcUrl: this.t.rpcUrl, asset: this.t.asset, assetName: this.t.assetName, assetVersion: this.t.assetVersion })
    }
    await this.warm?.()
    await this.rs.initialize()
    // a network that comes up after start: its settler's balance, unread while the RPC was away, read now
    if (this.balance?.lastError != null) await this.balance.read()
    this.initialised = true
    this.ready = true
    this.o.onInitialised()
    this.o.log.info('payments ready', { network: this.t.network, facilitator: this.t.facilitator.kind })
  }

  private scheduleRetry (ms: number): void {
    if (this.stopped) return
    this.retry = setTimeout(() => {
      this.init().catch((err: Error) => {
        if (err instanceof AssetMismatchError) {
          this.lastError = 'payment asset misconfigured'
          this.o.log.error('payment asset check failed; paid writes on this network are disabled', { network: this.t.network, error: err.message })
          return
        }
        this.scheduleRetry(Math.min(ms * 2, 60_000))
      })
    }, ms)
    this.retry.unref()
  }

  /** can payments on this network be taken now (an unfunded settler cannot pay the gas of a settlement) */
  usable (): boolean {
    return this.ready && this.balance?.funding !== 'unfunded'
  }

  /** throws the 503 a payment on this network gets while it cannot be taken (nothing is used) */
  assertUsable (): void {
    if (!this.ready) throw new UnavailableError(`payments${this.on} are temporarily unavailable (${this.lastError}); retry shortly`, 15)

    if (this.balance?.funding === 'unfunded') {
      // before any payment is used: the settlement could not pay its gas (read again soon: the funding shows at once)
      this.balance.refresh()
      throw new UnavailableError(`payments${this.on} are temporarily unavailable (this service's settlement account cannot pay gas); retry later`, 60)
    }
  }

  /**
   * After a refused verification: does this network's RPC answer? A dead RPC makes a good payment
   * look invalid (its reads fail inside the verifier): that is this side's trouble, a 503, not the
   * payer's. Read through the settler's balance (at most once a second); true without a watched settler.
   */
  async answers (): Promise<boolean> {
    if (this.balance == null) return true
    await this.balance.readIfOlder(1000)
    return this.balance.lastError == null
  }

  /** this network's requirements for an amount (the lane must be initialised) */
  async requirements (amount: bigint, maxTimeoutSeconds: number): Promise<PaymentRequirements> {
    const [req] = await this.rs.buildPaymentRequirements({
      scheme: 'exact',
      network: this.t.network as `${string}:${string}`,
      payTo: this.t.payTo,
      price: { amount: amount.toString(), asset: this.t.asset, extra: { name: this.t.assetName, version: this.t.assetVersion } },
      maxTimeoutSeconds
    })
    if (req == null) throw new Error('no payment requirements could be built')
    return req
  }

  status (): NetworkStatus {
    // a watched balance is read again now and then when asked (a dead RPC shows on /ready)
    if (this.ready) this.balance?.refresh(STATUS_RECHECK_MS)
    const base = {
      network: this.t.network,
      facilitator: this.t.facilitator.kind,
      ...(this.settler != null
        ? {
            settler: this.settler,
            ...(this.balance?.balance != null ? { settlerBalanceWei: this.balance.balance.toString() } : {}),
            ...(this.t.settlerMinBalance != null ? { settlerMinBalanceWei: this.t.settlerMinBalance.toString() } : {})
          }
        : {})
    }
    const what = this.t.facilitator.kind === 'remote' ? 'the facilitator' : 'the RPC'
    if (!this.ready) {
      const state = this.lastError === 'payment asset misconfigured' ? 'asset-misconfigured' : this.lastError === 'payment backend starting' ? 'starting' : 'unreachable'
      return { ...base, state, ok: false, message: state === 'unreachable' ? `${what}${this.on} does not answer: paid writes${this.on} answer 503 until it does` : state === 'starting' ? `payments${this.on} are starting` : `the payment asset${this.on} does not match its configuration: paid writes${this.on} are disabled` }
    }
    if (this.balance?.funding === 'unfunded') return { ...base, state: 'unfunded', ok: false, message: `the settler${this.on} cannot pay gas for a settlement: paid writes${this.on} answer 503 until it is funded` }
    if (this.balance?.lastError != null) return { ...base, state: 'unreachable', ok: false, message: `${what}${this.on} does not answer: paid writes${this.on} answer 503 until it does` }
    if (this.balance?.funding === 'low') return { ...base, state: 'low-balance', ok: true, message: `the settler balance${this.on} is below --settler-min-balance: fund it soon` }
    return { ...base, state: 'ready', ok: true, message: `payments${this.on} are ready` }
  }
}
