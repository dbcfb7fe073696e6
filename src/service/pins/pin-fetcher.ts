/**
 * The background fetcher for pins by CID. The queue lives in the ledger
 * (`fetch-queue`), so it survives restarts; this class only schedules it:
 *
 *   queued ──attempt──▶ pinning ──all blocks, within the cap──▶ pinned
 *     ▲                    │ stalled / unreachable                 
 *     └──── backoff ◀──────┤                                       
 *                          └─ cannot succeed (larger than paid, a codec it
 *                             cannot walk…), or retry window over ─▶ failed
 *
 * Front ends sharing a ledger fetch each pin once: this one fetches only the
 * pins it has claimed in the ledger under its `holder` id, renews those
 * claims every third of the lease while it fetches, and gives a pin up when
 * its claim is lost. A front end that dies stops renewing: its pins are
 * claimed by another within the lease plus half of it (the interval at which
 * each fetcher looks for lapsed claims).
 *
 * At most `concurrency` pins are fetched at once; each attempt dials the
 * pin's origins (and configured peers) first, then fetches the DAG with
 * bounded parallelism into a staging area. Only a complete DAG within the
 * paid cap is committed to the blockstore and referenced by the ledger; a
 * failed pin keeps nothing. Blocks staged by a stalled attempt are kept for
 * the next attempt while this process runs.
 */
import { CID } from 'multiformats/cid'
import type { CommitLock } from '../../ipfs/commit-lock.js'
import { FetchBudget } from '../../ipfs/fetch-budget.js'
import { fetchDag, PermanentFetchError, StalledError, WINDOW_BYTES } from '../../ipfs/fetch-dag.js'
import type { BlockNetwork } from '../../ipfs/network.js'
import type { IpfsNode } from '../../ipfs/node.js'
import type { BlockStaging, StagedImport } from '../../ipfs/staging.js'
import type { PinLedger } from '../../ledger/pins.js'
import { withdrawn, type PinRecord } from '../../ledger/records.js'
import type { Logger } from '../../kernel/log.js'
import type { Refusal } from '../serving/serve-policy.js'

export interface PinFetcherOptions {
  ledger: Pick<PinLedger, 'pendingFetches' | 'claimFetches' | 'renewFetches' | 'releaseFetches' | 'get' | 'update' | 'failFetch' | 'finishFetch' | 'watchQueued' | 'watchRemoved'>
  /** who claims the pins this fetcher fetches: one id per front end (its peer id) */
  holder: string
  /** how long a claim lasts unrenewed (FETCH_LEASE_MS unless a test says otherwise) */
  leaseMs?: number
  staging: Pick<BlockStaging, 'begin' | 'commit' | 'discard'>
  /** commits hold it shared so gc never sweeps between commit and ledger record */
  lock: Pick<CommitLock, 'shared'>
  /** the blocks held here, and the codecs (a DAG's links) */
  node: Pick<IpfsNode, 'blockstore' | 'getCodec'>
  network: Pick<BlockNetwork, 'dial' | 'retrieve' | 'announce'>
  log: Logger
  /** pins fetched at the same time */
  concurrency: number
  /** blocks in flight per pin */
  blockConcurrency: number
  /** an attempt ends when no block arrives for this long */
  stallMs: number
  /** how long after its creation a pin keeps being retried */
  retryWindowMs: number
  dialTimeoutMs?: number
  /** with --routing on: looks for providers of the root and connects to them (bitswap asks connected peers) */
  findProviders?: (cid: CID, signal: AbortSignal) => Promise<unknown>
  /**
   * why content is denied: a pin whose root is denied is not fetched, and one
   * whose DAG holds a denied block is not committed (its staged blocks wait,
   * never served, as a stalled attempt's do), while the denial lasts; it
   * waits like an unreachable one, until the denial is lifted or its retry
   * window ends
   */
  refusal?: (cid: CID) => Refusal | undefined
}

/** a claim's lease: renewed every third of it, so a pin waits at most about this long plus half of it for another front end when its fetcher's dies */
export const FETCH_LEASE_MS = 60_000
const FIRST_BACKOFF_MS = 5_000
const MAX_BACKOFF_MS = 15 * 60_000
const PROGRESS_EVERY_MS = 1_000
/** how long before the end of the retry window the last attempt is due (see attempt) */
const LAST_ATTEMPT_BEFORE_MS = 1_000

/** the abort reason of a fetch whose pin another front end now holds */
class ClaimLostError extends Error {
  override name = 'ClaimLostError'
}

export class PinFetcher {
  private readonly running = new Map<string, { abort: AbortController, done: Promise<void> }>()
  private readonly staged = new Map<string, StagedImport>()
  /** the bytes all fetches want from the network at once (ipfs/fetch-budget.ts) */
  private readonly budget = new FetchBudget(WINDOW_BYTES)
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  private waking: Promise<void> | undefined
  private wakeAgain = false
  private readonly unwatch: Array<() => void> = []
  private readonly leaseMs: number

  constructor (private readonly o: PinFetcherOptions) {
    this.leaseMs = o.leaseMs ?? FETCH_LEASE_MS
  }

  /**
   * Picks up the queue as the ledger has it (after a restart: where it left off), then follows
   * the ledger: a pin queued wakes it, a pin removed or taken down stops its fetch.
   */
  async start (): Promise<void> {
    // claims under this holder are from an earlier run of this front end, whose fetches ended with it
    await this.o.ledger.releaseFetches(this.o.holder)
    const pending = await this.o.ledger.pendingFetches()
    if (pending.length > 0) this.o.log.info('resuming pin fetches', { count: pending.length })
    this.unwatch.push(this.o.ledger.watchQueued(() => { this.wake() }))
    this.unwatch.push(this.o.ledger.watchRemoved((requestid) => { this.cancel(requestid) }))
    const renewing = setInterval(() => { void this.renewClaims() }, this.leaseMs / 3)
    // pins whose claims lapsed (their front end died) are waited for by no watcher: look for them
    const looking = setInterval(() => { this.wake() }, this.leaseMs / 2)
    renewing.unref()
    looking.unref()
    this.unwatch.push(() => { clearInterval(renewing) }, () => { clearInterval(looking) })
    this.wake()
  }

  /** Keeps the claims of the pins being fetched; one lost (its lease lapsed and another front end took it) stops its fetch. */
  private async renewClaims (): Promise<void> {
    const held = [...this.running.keys()]
    if (held.length === 0 || this.stopped) return
    let kept: Set<string>
    try {
      kept = new Set(await this.o.ledger.renewFetches(this.o.holder, held, this.leaseMs))
    } catch (err) {
      // the next renewal may still come within the lease
      this.o.log.warn('could not renew pin fetch claims', { error: (err as Error).message })
      return
    }
    for (const id of held) {
      if (kept.has(id)) continue
      this.running.get(id)?.abort.abort(new ClaimLostError('another front end holds this pin'))
    }
  }

  /** The pin was removed: stop fetching it. */
  private cancel (requestid: string): void {
    this.running.get(requestid)?.abort.abort(new Error('pin removed'))
  }

  async queueDepth (): Promise<number> {
    return (await this.o.ledger.pendingFetches()).length
  }

  async stop (): Promise<void> {
    this.stopped = true
    for (const u of this.unwatch.splice(0)) u()
    clearTimeout(this.timer)
    await this.waking
    for (const r of this.running.values()) r.abort.abort(new Error('shutting down'))
    await Promise.all([...this.running.values()].map(async r => { await r.done }))
    await Promise.all([...this.staged.values()].map(async s => { await this.o.staging.discard(s) }))
    this.staged.clear()
  }

  /** one pass over the queue at a time; a wake during one runs another after it */
  private wake (): void {
    if (this.stopped) return
    if (this.waking != null) {
      this.wakeAgain = true
      return
    }
    this.waking = this.pass()
      .catch((err: unknown) => { this.o.log.warn('could not read the fetch queue', { error: (err as Error).message }) })
      .finally(() => {
        this.waking = undefined
        if (this.wakeAgain) {
          this.wakeAgain = false
          this.wake()
        }
      })
  }

  private async pass (): Promise<void> {
    clearTimeout(this.timer)
    const now = Date.now()
    const free = this.o.concurrency - this.running.size
    if (this.stopped || free <= 0) return
    const { ledger, holder } = this.o
    const claimed = await ledger.claimFetches(holder, free, this.leaseMs, new Date(now))
    const unused: string[] = []
    for (const id of claimed) {
      // claimed again after its lease lapsed while this fetcher still fetches it: that fetch goes on
      if (this.running.has(id)) continue
      const pin = this.stopped ? undefined : await ledger.get(id)
      if (pin == null || this.stopped || withdrawn(pin)) { unused.push(id); continue }
      this.launch(pin)
    }
    if (unused.length > 0) await ledger.releaseFetches(holder, unused)
    if (this.stopped || claimed.length >= free) return
    // nothing else due now: wake when the soonest pin waiting for its next attempt is due
    let nextDue = Infinity
    for (const id of await ledger.pendingFetches()) {
      if (this.stopped) return
      const pin = await ledger.get(id)
      const due = pin?.fetch?.nextAttemptAt != null ? Date.parse(pin.fetch.nextAttemptAt) : 0
      if (due > now) nextDue = Math.min(nextDue, due)
    }
    if (nextDue !== Infinity) {
      this.timer = setTimeout(() => { this.wake() }, Math.max(50, nextDue - now))
      this.timer.unref()
    }
  }

  private launch (pin: PinRecord): void {
    const abort = new AbortController()
    const done = this.attempt(pin, abort.signal)
      .catch((err: Error) => { this.o.log.error('pin fetch failed unexpectedly', { requestid: pin.requestid, error: err }) })
      // a pin left queued (to retry later, or on shutdown) is free for any front end at once; a finished, failed or lost one is no longer this holder's
      .then(async () => { await this.o.ledger.releaseFetches(this.o.holder, [pin.requestid]) })
      .catch((err: Error) => { this.o.log.warn('could not release a pin fetch claim', { requestid: pin.requestid, error: err.message }) })
      .finally(() => {
        this.running.delete(pin.requestid)
        this.wake()
      })
    this.running.set(pin.requestid, { abort, done })
  }

  private async attempt (queued: PinRecord, signal: AbortSignal): Promise<void> {
    const { ledger, log } = this.o
    const id = queued.requestid
    const now = new Date()
    const giveUpAt = Date.parse(queued.fetch?.giveUpAt ?? queued.created) || now.getTime()
    if (now.getTime() >= giveUpAt) {
      await this.fail(id, `could not be fetched within the retry window${queued.fetch?.lastError != null ? ` (last error: ${queued.fetch.lastError})` : ''}`)
      return
    }
    const attempts = (queued.fetch?.attempts ?? 0) + 1
    const refused = this.o.refusal?.(CID.parse(queued.cid))
    if (refused != null) {
      await this.retryLater(id, attempts, giveUpAt, `not fetched: the content is ${refused.message}`)
      return
    }
    const started = await ledger.update(id, p => ({ ...p, status: 'pinning', statusDetails: `attempt ${attempts}: connecting to origins and peers`, fetch: { ...(p.fetch ?? { giveUpAt: new Date(giveUpAt).toISOString() }), attempts } }))
    if (started == null || withdrawn(started)) return

    // routing-found providers are looked for beside the origins, not instead: whichever has the blocks serves them
    this.o.findProviders?.(CID.parse(started.cid), signal).catch(() => {})
    const tDial = Date.now()
    const dial = await this.o.network.dial(started.origins, AbortSignal.any([signal, AbortSignal.timeout(this.o.dialTimeoutMs ?? 10_000)]))
    let staged = this.staged.get(id)
    if (staged == null) {
      staged = await this.o.staging.begin()
      this.staged.set(id, staged)
    }
    let lastWrite = 0
    const t0 = Date.now()
    try {
      const r = await fetchDag({
        root: CID.parse(started.cid),
        staged,
        local: this.o.node.blockstore,
        network: this.o.network,
        helia: this.o.node,
        maxBytes: started.maxBytes ?? Number.MAX_SAFE_INTEGER,
        concurrency: this.o.blockConcurrency,
        budget: this.budget,
        stallMs: this.o.stallMs,
        signal,
        onProgress: (p) => {
          if (Date.now() - lastWrite < PROGRESS_EVERY_MS) return
          lastWrite = Date.now()
          void ledger.update(id, pin => pin.removed != null ? pin : ({ ...pin, statusDetails: `attempt ${attempts}: fetching, ${p.blocks} blocks / ${p.bytes} bytes received` }))
            .then(pin => { if (pin != null && withdrawn(pin)) this.cancel(id) })
            .catch(() => {})
        }
      })
      // a denied block is never committed (nor served); the staged DAG waits, as a stalled one does, for the next attempt
      const denied = this.o.refusal != null ? r.cids.find(c => this.o.refusal?.(c) != null) : undefined
      if (denied != null) {
        await this.retryLater(id, attempts, giveUpAt, `not committed: the DAG holds ${denied}, ${this.o.refusal?.(denied)?.message ?? 'denied'}`)
        return
      }
      const committed = staged
      const tFetched = Date.now()
      let tCommitted = 0
      const pinned = await this.o.lock.shared(async () => {
        await this.o.staging.commit(committed)
        tCommitted = Date.now()
        this.staged.delete(id)
        return await ledger.finishFetch(id, r.cids, r.bytes, `pinned: ${r.blocks} blocks, ${r.bytes} bytes`)
      }, r.cids)
      const tDone = Date.now()
      log.info('pin fetched', { requestid: id, cid: started.cid, blocks: r.blocks, bytes: r.bytes, ms: tDone - t0 })
      // where the time went: queued → attempt, dial, fetch (first block, window), commit, ledger
      log.debug('pin fetch phases', {
        requestid: id,
        pickupMs: tDial - Date.parse(queued.created),
        dialMs: t0 - tDial,
        fetchMs: tFetched - t0,
        firstBlockMs: r.timings.firstBlockMs,
        peakInFlight: r.timings.peakInFlight,
        window: r.timings.window,
        commitMs: tCommitted - tFetched,
        ledgerMs: tDone - tCommitted
      })
      if (pinned != null) this.announce(r.cids)
    } catch (err) {
      if (err instanceof PermanentFetchError) {
        // no later attempt would do better: fail now rather than retry for the whole window
        await this.fail(id, `failed: ${err.reason}; nothing was kept`)
        return
      }
      if (signal.aborted) {
        if (signal.reason instanceof ClaimLostError) {
          // another front end fetches it now: what was staged here is not needed
          log.info('pin fetch stopped: its claim was lost', { requestid: id })
          await this.dropStaged(id)
          return
        }
        // removed or shutting down: a removed pin's staging goes now; on shutdown the queue resumes at the next start
        const now = await ledger.get(id)
        if (now != null && withdrawn(now)) await this.dropStaged(id)
        return
      }
      const reason = err instanceof StalledError
        ? `${err.message}${dial.failed.length > 0 ? `; could not reach ${dial.failed.map(f => f.addr).join(', ')}` : ''}${dial.connected === 0 ? '; no peers connected' : ''}`
        : `${(err as Error).name}: ${(err as Error).message}`.slice(0, 300)
      await this.retryLater(id, attempts, giveUpAt, reason)
    }
  }

  private async retryLater (id: string, attempts: number, giveUpAt: number, reason: string): Promise<void> {
    // the last attempt starts inside the retry window: one due at its end would only be failed
    const retryAt = Math.min(Date.now() + backoff(attempts), giveUpAt - LAST_ATTEMPT_BEFORE_MS)
    this.o.log.info('pin fetch attempt failed; will retry', { requestid: id, attempt: attempts, reason })
    await this.o.ledger.update(id, p => p.removed != null
      ? p
      : {
          ...p,
          status: 'queued',
          statusDetails: `waiting to retry: attempt ${attempts} failed (${reason}); next attempt at ${new Date(retryAt).toISOString()}, gives up at ${new Date(giveUpAt).toISOString()}`,
          fetch: { ...(p.fetch ?? { giveUpAt: new Date(giveUpAt).toISOString() }), attempts, nextAttemptAt: new Date(retryAt).toISOString(), lastError: reason }
        })
  }

  private async fail (id: string, details: string): Promise<void> {
    await this.o.ledger.failFetch(id, details)
    await this.dropStaged(id)
    this.o.log.info('pin failed', { requestid: id, details })
  }

  private async dropStaged (id: string): Promise<void> {
    const s = this.staged.get(id)
    if (s == null) return
    this.staged.delete(id)
    await this.o.staging.discard(s)
  }

  /** Peers that asked for these blocks while we fetched them get them now (best effort). */
  private announce (cids: CID[]): void {
    void (async () => {
      for (const cid of cids) {
        if (this.stopped) return
        await this.o.network.announce(cid).catch(() => {})
      }
    })()
  }
}

function backoff (attempts: number): number {
  return Math.min(FIRST_BACKOFF_MS * 2 ** Math.min(attempts - 1, 20), MAX_BACKOFF_MS)
}
