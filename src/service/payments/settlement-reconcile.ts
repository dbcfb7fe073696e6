/**
 * Reconciles settlement notes left by requests that never recorded what
 * they paid for (the process died between settling and recording, or the
 * settlement failed in a way that may have moved the money) against
 * the token's EIP-3009 authorizationState:
 *   - unused, and it can no longer be used (validBefore has passed; notes
 *     without validBefore: older than an hour): the money never moved, the
 *     note is dropped;
 *   - unused but still usable: kept as `unused-pending`, checked again later
 *     (a settle transaction may still be pending somewhere);
 *   - used: the money moved and nothing was recorded. A note that says what
 *     the payment bought (a pin by CID) is fulfilled: the pin and payment
 *     are recorded now (settlement-fulfil.ts). Any other is
 *     `paid-unfulfilled`, warned about once and never read again; an
 *     operator closes it (`pind settlements close`).
 * Front ends sharing a ledger (SettlingRecord.by): a note another live front
 * end wrote is that one's to reconcile (its request may still be settling),
 * one whose writer died is reconciled by the front end holding the lease; an
 * upload's note waits for its writer, which alone holds the staged blocks,
 * unless they are all in the store already.
 * A chain that cannot be read leaves the notes as they are. Serve runs a pass
 * in the background at start and then every interval; `pind settlements
 * check` runs one at once.
 */
import type { SettlementNotes, SettlementVerdict, SettlingRecord } from '../../ledger/settlements.js'
import type { Logger } from '../../kernel/log.js'
import type { AuthorizationStateReader } from '../../payment/authorization-state.js'
import { formatUsdc } from '../../payment/pricing.js'
import { CannotFulfilError, type Fulfilled } from './settlement-fulfil.js'

/** a note without validBefore (older versions) is given up this long after it was written */
export const OLD_NOTE_MS = 3600_000
/** validBefore counts as passed by the local clock only with this margin (seconds) for clock skew */
export const CLOCK_SKEW_S = 300n
/** a note this process wrote less than this long ago may belong to a request still settling */
export const IN_FLIGHT_MS = 10 * 60_000
const READS_IN_FLIGHT = 4

export interface ReconcileOptions {
  /** when the process that writes notes started: its younger notes may still be in flight (skipped); absent = none are */
  liveSince?: Date
  /**
   * whether a request of this process is doing a payment's work now: its own younger notes are in
   * flight only while it is (one whose request is over, its record having failed, is read at once)
   */
  running?: (paymentId: string) => boolean
  /** this front end (SettlingRecord.by): notes without `by` are taken for its own */
  self?: string
  /** the front ends alive now: another one's notes are left to it (counted as in flight) */
  alive?: ReadonlySet<string>
  /** read only this front end's own notes (`by` is `self`): a pass by a front end that does not hold the reconciliation lease */
  ownOnly?: boolean
  now?: Date
  /** stops a pass between reads; nothing is written once it fires */
  signal?: AbortSignal
  /** records what a paid note bought (fulfilFromNote), with the settlement transaction when found; throws CannotFulfilError when it cannot. Absent: every paid note waits for an operator */
  fulfil?: (note: SettlingRecord, tx: `0x${string}` | undefined) => Promise<Fulfilled>
  /** frees what a note that will never be fulfilled kept on disk (releaseNote): called once it is dropped or found paid but unfulfillable */
  release?: (note: SettlingRecord) => Promise<void>
  /** the network of notes that name none (written before several networks): the first configured */
  legacyNetwork?: string
}

export interface ReconcileReport {
  /** notes whose authorization was read */
  checked: number
  dropped: SettlingRecord[]
  /** newly found paid but unfulfilled */
  confirmed: SettlingRecord[]
  /** found paid, and what they bought is now recorded */
  fulfilled: Array<{ note: SettlingRecord, pin: Fulfilled }>
  /** unused and still usable: kept */
  pending: number
  /** every paid-unfulfilled note, waiting for an operator */
  awaitingOperator: number
  /** notes of requests that may still be settling in this serve, or another live front end's (its own to reconcile): not read */
  inFlight: number
  /** notes of payments on other networks than this chain's: left to their own network's reconciler */
  elsewhere?: number
  /** the chain could not be read: the notes not read were left as they were */
  error?: string
}

export async function reconcileSettlements (notes: SettlementNotes, chain: AuthorizationStateReader, log: Logger, opts: ReconcileOptions = {}): Promise<ReconcileReport> {
  const now = opts.now ?? new Date()
  const report: ReconcileReport = { checked: 0, dropped: [], confirmed: [], fulfilled: [], pending: 0, awaitingOperator: 0, inFlight: 0 }
  const todo: Array<{ note: SettlingRecord, authorizer: `0x${string}`, nonce: `0x${string}` }> = []
  for (const note of await notes.all()) {
    if (note.state === 'paid-unfulfilled') continue
    const mine = note.by == null || note.by === opts.self
    if (opts.ownOnly === true && (note.by == null || note.by !== opts.self)) continue
    // another live front end's note is its own to reconcile (its request may still be settling)
    const others = !mine && opts.alive?.has(note.by as string) === true
    if (others || (mine && note.settleFailedAt == null && opts.liveSince != null && Date.parse(note.at) >= opts.liveSince.getTime() && now.getTime() - Date.parse(note.at) < IN_FLIGHT_MS && opts.running?.(note.paymentId) !== false)) {
      report.inFlight++
      continue
    }
    // a payment made on another network than the one this chain reader reads is not read here: its
    // authorization state is on its own chain (that network's reconciler reads it; notes of versions
    // before several networks were made on `legacyNetwork`)
    const paidOn = note.network ?? opts.legacyNetwork
    if (paidOn != null && chain.network != null && paidOn !== chain.network) {
      report.elsewhere = (report.elsewhere ?? 0) + 1
      continue
    }
    const id = PAYMENT_ID.exec(note.paymentId)
    if (id == null) {
      log.warn('a settlement note has no payer:nonce payment id and cannot be checked against the chain', { payment: note.paymentId })
      continue
    }
    todo.push({ note, authorizer: id[1] as `0x${string}`, nonce: id[2] as `0x${string}` })
  }
  const verdicts: SettlementVerdict[] = []
  if (todo.length > 0) {
    try {
      const chainTime = await abortable(chain.chainTime(), opts.signal)
      let next = 0
      const worker = async (): Promise<void> => {
        while (next < todo.length && report.error == null) {
          const t = todo[next++] as typeof todo[number]
          const used = await abortable(chain.isUsed(t.authorizer, t.nonce), opts.signal)
          report.checked++
          verdicts.push({ read: t.note, next: verdictOf(t.note, used, chainTime, now) })
        }
      }
      await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, todo.length) }, async () => {
        try { await worker() } catch (err) { report.error ??= (err as Error).message }
      }))
    } catch (err) {
      report.error = (err as Error).message
    }
  }
  if (opts.signal?.aborted === true) return { ...report, error: 'stopped' }
  const rest: SettlementVerdict[] = []
  for (const v of verdicts) {
    if (v.next !== 'paid-unfulfilled' || v.read.fulfil == null || opts.fulfil == null) {
      rest.push(v)
      continue
    }
    try {
      const id = PAYMENT_ID.exec(v.read.paymentId) as RegExpExecArray
      // the transaction is for the record; a chain that will not say leaves it out
      const tx = await chain.usedIn(id[1] as `0x${string}`, id[2] as `0x${string}`).catch(() => undefined)
      const pin = await opts.fulfil(v.read, tx)
      report.fulfilled.push({ note: v.read, pin })
      log.warn('a payment was settled on chain but its request died before recording it: the pin it bought is recorded now', {
        payment: v.read.paymentId, payer: v.read.payer, amount: v.read.amount, purpose: v.read.purpose, requestid: pin.requestid, cid: pin.cid
      })
    } catch (err) {
      if (err instanceof CannotFulfilError && await notes.get(v.read.paymentId) == null) {
        // a retried request recorded it meanwhile (noted-retry.ts): nothing is left to do
        continue
      } else if (err instanceof CannotFulfilError && v.read.fulfil?.upload?.staging != null && v.read.by != null && opts.self != null && v.read.by !== opts.self) {
        // its staged blocks are on the disk of the front end that wrote it: left to that one's passes
        log.info('a paid upload\'s settlement note waits for the front end that staged it', { payment: v.read.paymentId, frontEnd: v.read.by })
        continue
      } else if (err instanceof CannotFulfilError) {
        log.warn(`a paid settlement note cannot be fulfilled: ${err.message}`, { payment: v.read.paymentId })
        rest.push(v)
      } else {
        // a failure of this process (the disk, the ledger): the note is left as it was and tried again at the next pass
        log.error('a paid settlement note could not be fulfilled; trying again later', { payment: v.read.paymentId, error: err })
      }
    }
  }
  for (const v of await notes.apply(rest, now)) {
    if (v.next !== 'unused-pending' && opts.release != null) {
      await opts.release(v.read).catch((err: Error) => { log.warn('could not remove what a settlement note kept', { payment: v.read.paymentId, error: err.message }) })
    }
    const fields = { payment: v.read.paymentId, payer: v.read.payer, amount: v.read.amount, amountUsdc: formatUsdc(BigInt(v.read.amount)), purpose: v.read.purpose, at: v.read.at }
    if (v.next === 'drop') {
      report.dropped.push(v.read)
      log.info('settlement note dropped: the authorization was never used and can no longer be', { ...fields, validBefore: v.read.validBefore })
    } else if (v.next === 'paid-unfulfilled') {
      report.confirmed.push({ ...v.read, state: 'paid-unfulfilled', checkedAt: now.toISOString() })
      log.warn('a payment was settled on chain but nothing was recorded for it: refund or re-pin, then `pind settlements close`', fields)
    } else {
      report.pending++
    }
  }
  for (const note of await notes.all()) if (note.state === 'paid-unfulfilled') report.awaitingOperator++
  return report
}

function verdictOf (note: SettlingRecord, used: boolean, chainTime: bigint, now: Date): SettlementVerdict['next'] {
  if (used) return 'paid-unfulfilled'
  if (note.validBefore != null && /^\d{1,78}$/.test(note.validBefore)) {
    // the token refuses the authorization from block time validBefore on; the chain's latest block
    // says so, or (an idle chain) the local clock does, with a margin for skew
    const validBefore = BigInt(note.validBefore)
    const nowS = BigInt(Math.floor(now.getTime() / 1000))
    return validBefore <= chainTime || validBefore + CLOCK_SKEW_S <= nowS ? 'drop' : 'unused-pending'
  }
  return now.getTime() - Date.parse(note.at) >= OLD_NOTE_MS ? 'drop' : 'unused-pending'
}

const PAYMENT_ID = /^(0x[0-9a-fA-F]{40}):(0x[0-9a-fA-F]{64})$/

async function abortable<T> (p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (signal == null) return await p
  signal.throwIfAborted()
  return await new Promise<T>((resolve, reject) => {
    const onAbort = (): void => { reject(signal.reason) }
    signal.addEventListener('abort', onAbort, { once: true })
    p.then(resolve, reject).finally(() => { signal.removeEventListener('abort', onAbort) })
  })
}

export interface SettlementReconciler {
  /** the summary line and a first pass at once, then one every interval */
  start(): void
  /** one pass now, after any pass under way (the admin `check`) */
  run(): Promise<ReconcileReport>
  stop(): Promise<void>
}

export interface ReconcilerOptions {
  intervalMs: number
  log: Logger
  /** see ReconcileOptions.fulfil */
  fulfil?: ReconcileOptions['fulfil']
  /** see ReconcileOptions.release */
  release?: ReconcileOptions['release']
  /** when serve started: its own younger notes may still be settling */
  startedAt: Date
  /** this front end's id (SettlingRecord.by) */
  self?: string
  /** the front ends alive now (each reconciles its own notes) */
  alive?: () => Promise<ReadonlySet<string>>
  /** see ReconcileOptions.running */
  running?: (paymentId: string) => boolean
  /** passes on the schedule happen only while it says so (this front end holds the lease: src/service/background/lease-keeper.ts); run() always runs */
  when?: () => boolean
  /** see ReconcileOptions.legacyNetwork */
  legacyNetwork?: string
}

/**
 * Serve's background reconciliation: a summary line at start, a first pass
 * at once (without delaying start-up), then one every interval (a pass with
 * nothing to check reads nothing from the chain). Failures are warned about
 * and retried at the next interval.
 */
export function settlementReconciler (notes: SettlementNotes, chain: AuthorizationStateReader, o: ReconcilerOptions): SettlementReconciler {
  const abort = new AbortController()
  let queue: Promise<unknown> = Promise.resolve()
  let timer: NodeJS.Timeout | undefined
  let started = false
  const run = async (ownOnly = false): Promise<ReconcileReport> => {
    const pass = queue.then(async () => await reconcileSettlements(notes, chain, o.log, {
      liveSince: o.startedAt,
      signal: abort.signal,
      ownOnly,
      ...(o.self != null ? { self: o.self } : {}),
      ...(o.running != null ? { running: o.running } : {}),
      ...(o.alive != null ? { alive: await o.alive() } : {}),
      ...(o.fulfil != null ? { fulfil: o.fulfil } : {}),
      ...(o.release != null ? { release: o.release } : {})
    }))
    queue = pass.catch(() => {})
    return await pass
  }
  const tick = (): void => {
    // without the lease, only this front end's own notes: another holds the pass over all, but an
    // upload's note can be fulfilled only where its blocks were staged
    const ownOnly = o.when?.() === false
    if (ownOnly && o.self == null) {
      timer = setTimeout(tick, o.intervalMs)
      timer.unref()
      return
    }
    run(ownOnly).then((r) => {
      if (r.error != null && !abort.signal.aborted) {
        o.log.warn('settlement notes could not be reconciled; retrying later', { error: r.error, retryInSeconds: Math.round(o.intervalMs / 1000) })
      }
    }, (err: Error) => { o.log.error('settlement reconciliation failed', { error: err }) })
      .finally(() => {
        if (abort.signal.aborted) return
        timer = setTimeout(tick, o.intervalMs)
        timer.unref()
      })
  }
  return {
    start: () => {
      if (started || abort.signal.aborted) return
      started = true
      void logSummary(notes, o.log).catch((err: unknown) => { o.log.warn('could not read the settlement notes', { error: (err as Error).message }) })
      timer = setTimeout(tick, 0)
      timer.unref()
    },
    run: async () => await run(),
    stop: async () => {
      abort.abort(new Error('stopped'))
      clearTimeout(timer)
      await queue
    }
  }
}

/** One line at start when earlier runs left notes: how many to reconcile, how many wait for an operator. */
export async function logSummary (notes: SettlementNotes, log: Logger, cannotCheck?: string): Promise<void> {
  let open = 0
  let paid = 0
  for (const n of await notes.all()) {
    if (n.state === 'paid-unfulfilled') paid++
    else open++
  }
  if (open + paid === 0) return
  const why = cannotCheck != null && open > 0 ? ` (${cannotCheck})` : ''
  log.warn(`${open} settlement notes to reconcile${why}, ${paid} paid but unfulfilled waiting for an operator (pind settlements list)`, { toReconcile: open, paidUnfulfilled: paid })
}
