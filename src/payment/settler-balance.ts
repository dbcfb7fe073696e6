/**
 * The embedded facilitator's settler pays the gas of every settlement. This
 * watches its balance of the chain's native coin: read at start, then every
 * `intervalMs` (and again, at most every few seconds, while the gate is
 * turning payments away for it). Below `minBalance` it warns; below the cost
 * of one settlement it reports `unfunded`, and the gate answers 503 before
 * any payment is used, instead of letting every settle fail.
 */
import { formatEther } from 'viem'
import type { Logger } from '../kernel/log.js'
import { publicClientFor } from './chain.js'

/**
 * gas of one transferWithAuthorization settlement, with headroom over the
 * ~70-85k measured on the test token (USDC's FiatToken is in the same range)
 */
export const SETTLE_GAS = 120_000n
/** while unfunded, a request may trigger a fresh read this often (the funding shows up quickly) */
const RECHECK_UNFUNDED_MS = 3000

export type SettlerFunding = 'unknown' | 'funded' | 'low' | 'unfunded'

export interface SettlerBalanceOptions {
  network: string
  rpcUrl: string
  address: `0x${string}`
  /** warn below this many wei */
  minBalance: bigint
  intervalMs: number
  log: Logger
}

export class SettlerBalance {
  private timer: NodeJS.Timeout | undefined
  private reading: Promise<void> | undefined
  private lastReadAt = 0
  funding: SettlerFunding = 'unknown'
  balance: bigint | undefined
  /** what one settlement costs at the current fee (wei) */
  settleCost: bigint | undefined
  lastError: string | undefined
  private readonly client

  constructor (private readonly o: SettlerBalanceOptions) {
    this.client = publicClientFor(o.network, o.rpcUrl, 5000)
  }

  /** Reads the balance now; then keeps reading it every intervalMs. */
  async start (): Promise<void> {
    await this.read()
    this.timer = setInterval(() => { this.read().catch(() => {}) }, this.o.intervalMs)
    this.timer.unref()
  }

  stop (): void {
    clearInterval(this.timer)
  }

  /** A fresh read if the last one is older than `maxAgeMs` (one at a time). */
  refresh (maxAgeMs = RECHECK_UNFUNDED_MS): void {
    if (Date.now() - this.lastReadAt < maxAgeMs) return
    this.read().catch(() => {})
  }

  /** reads again when the last reading is older than `maxAgeMs` (else waits for one under way) */
  async readIfOlder (maxAgeMs: number): Promise<void> {
    if (Date.now() - this.lastReadAt >= maxAgeMs) await this.read()
    else if (this.reading != null) await this.reading
  }

  async read (): Promise<void> {
    this.reading ??= this.readOnce().finally(() => { this.reading = undefined })
    await this.reading
  }

  private async readOnce (): Promise<void> {
    this.lastReadAt = Date.now()
    const { address, minBalance, log } = this.o
    let balance: bigint
    let cost: bigint
    try {
      const [b, fees] = await Promise.all([this.client.getBalance({ address }), this.client.estimateFeesPerGas().catch(async () => ({ maxFeePerGas: await this.client.getGasPrice() }))])
      balance = b
      cost = SETTLE_GAS * (fees.maxFeePerGas ?? 0n)
    } catch (err) {
      this.lastError = `could not read the settler's balance: ${(err as Error).message.split('\n')[0]}`
      if (this.funding !== 'unknown') log.warn('could not read the settler balance', { settler: address, error: this.lastError })
      return
    }
    this.lastError = undefined
    const was = this.funding
    this.balance = balance
    this.settleCost = cost
    this.funding = balance < cost ? 'unfunded' : balance < minBalance ? 'low' : 'funded'
    if (this.funding === was) return
    const fields = { settler: address, balance: `${formatEther(balance)} ETH`, balanceWei: balance.toString(), minBalanceWei: minBalance.toString(), settleCostWei: cost.toString() }
    if (this.funding === 'unfunded') log.error('the settler cannot pay gas: paid writes answer 503 until it is funded; send ETH to the settler address', fields)
    else if (this.funding === 'low') log.warn('the settler balance is below --settler-min-balance: fund the settler address', fields)
    else if (was === 'unknown') log.info('settler balance', fields)
    else log.notice('the settler is funded again', fields)
  }
}
