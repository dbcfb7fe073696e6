/**
 * The embedded settler's transactions, kept moving. viem's nonce manager
 * hands out nonces locally; if one settlement transaction never gets mined
 * (dropped from the RPC's pool, or wedged there), every later one waits
 * behind the gap for ever. This signs and sends the settler's
 * transferWithAuthorization calls itself (keeping each signed transaction),
 * waits for their receipts with one shared poll of the settler's mined nonce,
 * and when the lowest outstanding nonce is not mined for `stuckAfterMs`:
 *   - re-broadcasts the same signed transaction when the pool no longer has it,
 *   - replaces it (same nonce, same calldata, fees +12.5%) when it sits there,
 *   - fills a nonce that was taken locally but never sent with a 0-value
 *     transfer to itself, or, with nothing outstanding, resets the nonce manager.
 * A receipt of whichever transaction got the nonce answers the settlement's wait.
 */
import { encodeFunctionData, concat, TransactionNotFoundError, type Abi, type Hex, type TransactionReceipt } from 'viem'
import type { Logger } from '../kernel/log.js'
import type { settlerClientFor } from './chain.js'

type Wallet = ReturnType<typeof settlerClientFor>

/** node pools take a replacement only with both fees up by at least 10% (geth) / 12.5% (others) */
const bump = (wei: bigint): bigint => wei + (wei + 7n) / 8n + 1n
/** a nonce is replaced at most this often (fees at most ~3x the first); after that only re-broadcast */
const MAX_REPLACEMENTS = 10
/** mined by a transaction not known here: wait this many polls for a known one's receipt before giving up */
const RECEIPT_GRACE_POLLS = 50
/** the quick polls after a send, each this long after the last (capped at pollMs): a chain that mines on arrival may answer a moment late */
const QUICK_POLLS_MS = [0, 25, 100, 400, 1600]
/** replaced settlements remembered once mined (their other hashes → the mined one): rare, so a few suffice; only hashes, never receipts (memory under sustained load) */
const MAX_REPLACED = 1000

export interface WriteContractArgs {
  address: `0x${string}`
  abi: Abi | readonly unknown[]
  functionName: string
  args?: readonly unknown[]
  dataSuffix?: Hex
}

interface Fees { gas: bigint, maxFeePerGas: bigint, maxPriorityFeePerGas: bigint }

interface Outstanding {
  nonce: number
  to: `0x${string}`
  data: Hex
  value: bigint
  fees: Fees
  /** every transaction sent at this nonce, first to last */
  hashes: Hex[]
  /** the last signed transaction (re-broadcast as is) */
  raw: Hex
  sentAt: number
  replacements: number
  missingPolls: number
  /** a poll has looked for it already (the first one reads its receipt beside the nonce) */
  polled: boolean
  /** a waiter, settled with the receipt of whichever transaction got the nonce */
  done: PromiseWithResolvers<TransactionReceipt>
}

export interface SettlerNonceOptions {
  wallet: Wallet
  log?: Logger
  /** the lowest outstanding nonce not mined for this long is re-sent */
  stuckAfterMs: number
  /** how often the settler's mined nonce is read while transactions are outstanding */
  pollMs?: number
}

export class SettlerNonces {
  /** replacements, re-broadcasts, gap fills and nonce manager resets (metrics) */
  recoveries = 0
  private readonly byNonce = new Map<number, Outstanding>()
  private readonly byHash = new Map<Hex, Outstanding>()
  /** nonces taken from the nonce manager and being sent now */
  private readonly sending = new Set<number>()
  /** nonces taken but never sent (the send failed) */
  private readonly abandoned = new Set<number>()
  /** each hash of a mined settlement that was not the one mined → the one mined (the last MAX_REPLACED) */
  private readonly replaced = new Map<Hex, Hex>()
  private timer: NodeJS.Timeout | undefined
  /** when the pending timer fires (ms since the epoch) */
  private timerAt = 0
  private polling = false
  /** polls left in the quick series after a send (QUICK_POLLS_MS, from its end; see schedule) */
  private quickPolls = 0
  private stopped = false
  private minedNonce = -1
  private progressAt = 0
  private recoveredAt = 0
  private readonly address: `0x${string}`
  private readonly chainId: number
  /** viem's nonce manager, the one the settler account's other writes use too */
  private readonly nonces: NonNullable<Wallet['account']['nonceManager']>

  constructor (private readonly o: SettlerNonceOptions) {
    this.address = o.wallet.account.address
    this.chainId = o.wallet.chain.id
    const manager = o.wallet.account.nonceManager
    if (manager == null) throw new Error('the settler account has no nonce manager')
    this.nonces = manager
  }

  /**
   * x402's `writeContract`: estimates the gas first (a call that would revert
   * takes no nonce), then takes a nonce, signs, sends and keeps the signed
   * transaction until its nonce is mined.
   */
  async writeContract (a: WriteContractArgs): Promise<Hex> {
    const w = this.o.wallet
    const call = encodeFunctionData({ abi: a.abi as Abi, functionName: a.functionName, args: a.args as unknown[] })
    const data = a.dataSuffix != null ? concat([call, a.dataSuffix]) : call
    // two reads of one round trip: a call that reverts still takes no nonce (the fees read is then dropped)
    const [gas, fees] = await Promise.all([w.estimateGas({ account: w.account, to: a.address, data }), w.estimateFeesPerGas()])
    return await this.send(a.address, data, 0n, { gas, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas })
  }

  /** x402's `waitForTransactionReceipt`: the receipt of whichever transaction got this one's nonce */
  async waitForTransactionReceipt (args: { hash: Hex, timeout?: number }): Promise<TransactionReceipt> {
    const entry = this.byHash.get(args.hash)
    if (entry == null) {
      // mined already (x402 waits again for a settlement it kept as pending: a replaced one's first
      // hash never gets a receipt, the one mined does), or not one of the settlements
      return await this.o.wallet.waitForTransactionReceipt({ ...args, hash: this.replaced.get(args.hash) ?? args.hash, pollingInterval: this.o.pollMs ?? 100 })
    }
    if (args.timeout == null) return await entry.done.promise
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((resolve, reject) => { timer = setTimeout(() => { reject(new Error(`timed out waiting for the receipt of ${args.hash}`)) }, args.timeout) })
    try {
      return await Promise.race([entry.done.promise, late])
    } finally {
      clearTimeout(timer)
    }
  }

  /** The hash that was mined for a settlement x402 knows by `hash` (its replacement's); else `hash`. */
  minedHash (hash: string): string {
    return this.replaced.get(hash as Hex) ?? hash
  }

  stop (): void {
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = undefined
  }

  private async send (to: `0x${string}`, data: Hex, value: bigint, fees: Fees): Promise<Hex> {
    const nonce = await this.nonces.consume({ address: this.address, chainId: this.chainId, client: this.o.wallet })
    this.sending.add(nonce)
    try {
      const raw = await this.sign(nonce, to, data, value, fees)
      let hash: Hex
      try {
        hash = await this.o.wallet.sendRawTransaction({ serializedTransaction: raw })
      } catch (err) {
        // the nonce is taken and (as far as this side knows) not sent: the poll fills or forgets it
        this.abandoned.add(nonce)
        throw err
      }
      const entry: Outstanding = { nonce, to, data, value, fees, hashes: [hash], raw, sentAt: Date.now(), replacements: 0, missingPolls: 0, polled: false, done: Promise.withResolvers() }
      // a waiter that has gone (x402 timed out) leaves no unhandled rejection
      entry.done.promise.catch(() => {})
      this.byNonce.set(nonce, entry)
      this.byHash.set(hash, entry)
      this.quickPolls = QUICK_POLLS_MS.length
      return hash
    } finally {
      this.sending.delete(nonce)
      this.schedule()
    }
  }

  private async sign (nonce: number, to: `0x${string}`, data: Hex, value: bigint, fees: Fees): Promise<Hex> {
    return await this.o.wallet.account.signTransaction({
      type: 'eip1559', chainId: this.chainId, nonce, to, data, value, gas: fees.gas,
      maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas
    })
  }

  /**
   * The next poll: every `pollMs` while transactions are outstanding, and
   * after a send a quick series first (at once, then QUICK_POLLS_MS apart): a
   * chain that mines as it receives (a dev chain, a sequencer) has the receipt
   * ready at once or a moment later, and waiting a whole `pollMs` adds to
   * every paid write; elsewhere it is a few reads more per settlement.
   */
  private schedule (): void {
    if (this.stopped || (this.byNonce.size === 0 && this.abandoned.size === 0)) return
    const pollMs = this.o.pollMs ?? 100
    const delay = this.quickPolls > 0 ? Math.min(QUICK_POLLS_MS[QUICK_POLLS_MS.length - this.quickPolls]!, pollMs) : pollMs
    if (this.timer != null) {
      if (this.timerAt <= Date.now() + delay) return
      clearTimeout(this.timer)
    }
    this.timerAt = Date.now() + delay
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (this.polling) return
      this.polling = true
      if (this.quickPolls > 0) this.quickPolls--
      this.poll()
        .catch((err: Error) => { this.o.log?.debug('settler nonce poll failed', { error: err.message.split('\n')[0] }) })
        .finally(() => { this.polling = false; this.schedule() })
    }, delay)
    this.timer.unref()
  }

  private async poll (): Promise<void> {
    const w = this.o.wallet
    // the receipt of a transaction this poll is the first to look for is read beside the nonce: one round trip, when it is mined already
    const early = new Map<Outstanding, Promise<TransactionReceipt | undefined>>()
    for (const e of this.byNonce.values()) {
      if (e.polled) continue
      e.polled = true
      early.set(e, w.getTransactionReceipt({ hash: e.hashes[e.hashes.length - 1]! }).catch(() => undefined))
    }
    const mined = await w.getTransactionCount({ address: this.address, blockTag: 'latest' })
    const now = Date.now()
    if (mined > this.minedNonce) {
      this.minedNonce = mined
      this.progressAt = now
    }
    for (const n of this.abandoned) if (n < mined) this.abandoned.delete(n)
    for (const entry of [...this.byNonce.values()].filter(e => e.nonce < mined)) await this.settle(entry, await early.get(entry))
    if (this.byNonce.size === 0) {
      // a nonce taken but never sent, and nothing behind it: the next settlement takes it again
      if (this.abandoned.size > 0 && this.sending.size === 0) {
        this.nonces.reset({ address: this.address, chainId: this.chainId })
        this.recovered('nonce manager reset: a nonce was taken but its transaction never sent', { nonce: Math.min(...this.abandoned), minedNonce: mined })
        this.abandoned.clear()
      }
      return
    }
    const lowest = this.byNonce.get(mined)
    const since = Math.max(this.progressAt, this.recoveredAt, lowest?.sentAt ?? 0)
    if (now - since < this.o.stuckAfterMs) return
    if (lowest != null) {
      await this.resend(lowest)
    } else if (!this.sending.has(mined) && [...this.byNonce.keys()].some(n => n > mined)) {
      // later settlements wait behind a nonce with no transaction of ours (never sent, or lost)
      const fees = await w.estimateFeesPerGas()
      const raw = await this.sign(mined, this.address, '0x', 0n, { gas: 21_000n, maxFeePerGas: bump(fees.maxFeePerGas), maxPriorityFeePerGas: bump(fees.maxPriorityFeePerGas) })
      await w.sendRawTransaction({ serializedTransaction: raw }).catch(() => {})
      this.recovered('settler nonce gap filled with an empty transaction', { nonce: mined })
    }
  }

  /**
   * Re-sends the lowest outstanding transaction. A replacement can never pay
   * twice: it carries the same transferWithAuthorization (the same EIP-3009
   * authorization, whose nonce the token accepts once) at the same account
   * nonce, so at most one of the two is mined and at most one transfer happens.
   */
  private async resend (entry: Outstanding): Promise<void> {
    const w = this.o.wallet
    const inPool = await w.getTransaction({ hash: entry.hashes[entry.hashes.length - 1]! }).then(() => true, (err: unknown) => {
      if (err instanceof TransactionNotFoundError) return false
      throw err
    })
    if (!inPool || entry.replacements >= MAX_REPLACEMENTS) {
      // gone from the pool (or replaced enough): the same signed transaction again
      await w.sendRawTransaction({ serializedTransaction: entry.raw }).catch(() => {})
      this.recovered('settlement transaction re-broadcast: its nonce was not mined', { nonce: entry.nonce, tx: entry.hashes[entry.hashes.length - 1], inPool })
      return
    }
    const current = await w.estimateFeesPerGas().catch(() => undefined)
    const max = (a: bigint, b: bigint | undefined): bigint => b != null && b > a ? b : a
    const fees = { gas: entry.fees.gas, maxFeePerGas: max(bump(entry.fees.maxFeePerGas), current?.maxFeePerGas), maxPriorityFeePerGas: max(bump(entry.fees.maxPriorityFeePerGas), current?.maxPriorityFeePerGas) }
    if (fees.maxPriorityFeePerGas > fees.maxFeePerGas) fees.maxFeePerGas = fees.maxPriorityFeePerGas
    const raw = await this.sign(entry.nonce, entry.to, entry.data, entry.value, fees)
    let hash: Hex
    try {
      hash = await w.sendRawTransaction({ serializedTransaction: raw })
    } catch (err) {
      // most often: the original was mined meanwhile (nonce too low); the next poll finds its receipt
      this.recoveredAt = Date.now()
      this.o.log?.debug('settlement replacement not taken', { nonce: entry.nonce, error: (err as Error).message.split('\n')[0] })
      return
    }
    entry.fees = fees
    entry.raw = raw
    entry.replacements++
    entry.hashes.push(hash)
    this.byHash.set(hash, entry)
    this.recovered('settlement transaction replaced with higher fees: its nonce was not mined', { nonce: entry.nonce, tx: hash, replaces: entry.hashes[entry.hashes.length - 2], maxFeePerGas: fees.maxFeePerGas.toString() })
  }

  /** the entry's nonce is mined: answer its waiter with the receipt of whichever of its transactions got it (`known`: one read already) */
  private async settle (entry: Outstanding, known?: TransactionReceipt): Promise<void> {
    for (const hash of [...entry.hashes].reverse()) {
      const receipt = known?.transactionHash === hash ? known : await this.o.wallet.getTransactionReceipt({ hash }).catch(() => undefined)
      if (receipt == null) continue
      for (const h of entry.hashes) if (h !== hash) this.replaced.set(h, hash)
      while (this.replaced.size > MAX_REPLACED) this.replaced.delete(this.replaced.keys().next().value!)
      this.forget(entry)
      entry.done.resolve(receipt)
      return
    }
    if (++entry.missingPolls >= RECEIPT_GRACE_POLLS) {
      this.forget(entry)
      entry.done.reject(new Error(`settler nonce ${entry.nonce} was used by another transaction`))
    }
  }

  private forget (entry: Outstanding): void {
    this.byNonce.delete(entry.nonce)
    for (const h of entry.hashes) this.byHash.delete(h)
  }

  private recovered (msg: string, fields: Record<string, unknown>): void {
    this.recoveries++
    this.recoveredAt = Date.now()
    this.o.log?.warn(msg, { settler: this.address, ...fields })
  }
}
