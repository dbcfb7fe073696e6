/**
 * Liveness with real checks: the ledger answers a read, the block store takes
 * a write (a file in blocks/, or an object in the S3 bucket; with S3 the local
 * staging folder too, where uploads wait for their payment), libp2p is
 * started (and any check added through `checks`: with --routing on, the
 * routing is started with a routing peer).
 *
 * What a client sees of a failing check is its name and a public message;
 * the error itself (a path in the data dir, an errno, a library's words) goes
 * to the log only. A check says what may be shown by throwing a
 * HealthCheckError; anything else it throws shows as its `failure` text.
 *
 * An answer never waits on a store that stopped answering: it waits for the
 * checks it starts for HEALTH_ANSWER_MS at most and then answers with each
 * check's last known outcome (the run goes on in the background, one at a
 * time per check); a check that has been running for HEALTH_STUCK_MS fails,
 * and a block store known to be down (`blockstoreWritable`) fails at once.
 */
import { z } from 'zod/v4'
import { count, text } from '../../kernel/api-shapes.js'
import { PindError } from '../../kernel/errors.js'
import { randomBytes } from 'node:crypto'
import { unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from '../../kernel/log.js'
import { VERSION } from '../../kernel/version.js'

/** A failure whose message is fit for clients; `detail` goes to the log only. */
export class HealthCheckError extends PindError {
  override name = 'HealthCheckError'
  constructor (publicMessage: string, readonly detail?: string) {
    super(publicMessage)
  }
}

export interface HealthCheck {
  name: string
  /** what clients are told when the check throws anything but a HealthCheckError */
  failure: string
  /** the check; an answer waits for it HEALTH_ANSWER_MS at most, then uses its last outcome */
  run(): unknown
  /** a synchronous part run on every answer, before the last outcome is used (a store known to be down fails at once) */
  now?(): void
  /** a pass is reused for this long (ms) before the check runs again; default 0 */
  reuseMs?: number
}

export interface HealthDeps {
  readLedger(): Promise<unknown>
  /** a write to the block store (the block backend's probe) */
  probeBlockstore(): Promise<void>
  /** what clients are told when it fails (default: the blockstore does not take writes) */
  blockstoreFailure?: string
  /** false while the block store is known to be unreachable (a remote one): fails the check at once, past the reused pass */
  blockstoreWritable?: () => boolean
  /** S3 backend: the local staging folder, checked too */
  stagingDir?: string
  libp2pStatus(): string
  startedAt: number
  /** reuse a passed blockstore write check for this long (a probe per request costs a file create + unlink); default 0 */
  diskCheckCacheMs?: number
  /** reuse a passed ledger read for this long (a read per request was ~5% of a /health answer's CPU); default 0 */
  ledgerCheckCacheMs?: number
  /** more checks, run after the built-in ones */
  checks?: readonly HealthCheck[]
  /** where the detail of a failing check goes (when it starts failing, then at most once a minute) */
  log?: Logger
}

/** one check's outcome (OpenAPI: HealthCheck, derived from this) */
export const CheckResult = z.object({ ok: z.boolean(), error: text('why the check failed').optional() })

/** the body of GET /health (OpenAPI: Health, derived from this) */
export const Health = z.object({
  status: z.enum(['ok', 'failing']),
  version: text('pind version'),
  uptimeSeconds: count('seconds since start'),
  checks: z.object({ ledger: CheckResult.optional(), blockstore: CheckResult.optional(), libp2p: CheckResult.optional() }).catchall(CheckResult)
})

export type HealthReport = z.output<typeof Health>

/** when each failing check was last logged: when it starts failing, then at most once a minute */
const logged = new Map<string, number>()
const RELOG_MS = 60_000

/**
 * GET /health waits this long at most for the checks it starts (a check a
 * request started earlier: until this long after that start); a check still
 * running then is answered from its last known outcome. No answer waits on a
 * block store that stopped answering.
 */
export const HEALTH_ANSWER_MS = 750
/** a check still running after this long fails, whatever it answered last (a store that does not answer) */
export const HEALTH_STUCK_MS = 5_000

type Outcome = { ok: true } | { ok: false, err: unknown }

/** a check's last outcome and its run under way, if any (one run at a time, however many ask) */
interface CheckState {
  last?: Outcome
  lastAt: number
  running?: { done: Promise<void>, since: number }
}

/** per check name: one serve per process (the module's `logged` is per process too) */
const states = new Map<string, CheckState>()

/** Starts a run of `check` unless one is under way or its pass is younger than `reuseMs`. */
function refresh (check: HealthCheck, reuseMs: number): CheckState {
  let state = states.get(check.name)
  if (state == null) {
    state = { lastAt: -Infinity }
    states.set(check.name, state)
  }
  const s = state
  if (s.running != null || (s.last?.ok === true && Date.now() - s.lastAt < reuseMs)) return s
  // a check that answers at once (the ledger's read, libp2p's state) is its outcome now: no run to wait for
  let ran: unknown
  let outcome: Outcome = { ok: true }
  try {
    ran = check.run()
  } catch (err) {
    outcome = { ok: false, err }
  }
  if (typeof (ran as PromiseLike<unknown> | undefined)?.then !== 'function') {
    s.last = outcome
    s.lastAt = Date.now()
    return s
  }
  const done = Promise.resolve(ran).then((): Outcome => ({ ok: true }), (err: unknown): Outcome => ({ ok: false, err })).then((outcome) => {
    s.last = outcome
    s.lastAt = Date.now()
    s.running = undefined
  })
  s.running = { done, since: Date.now() }
  return s
}

/** The outcome to answer with: the run's if it ended in time, else the last known one (none, or a run stuck for too long: failing). */
function outcomeOf (check: HealthCheck, reuseMs: number): Outcome | Promise<Outcome> {
  try {
    check.now?.()
  } catch (err) {
    return { ok: false, err }
  }
  const s = refresh(check, reuseMs)
  const running = s.running
  if (running == null) return lastOutcome(s)
  return (async () => {
    const waitMs = running.since + HEALTH_ANSWER_MS - Date.now()
    if (waitMs > 0) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([running.done, new Promise<void>(resolve => { timer = setTimeout(resolve, waitMs) })])
      clearTimeout(timer)
    }
    return lastOutcome(s)
  })()
}

function lastOutcome (s: CheckState): Outcome {
  if (s.running != null) {
    const forMs = Date.now() - s.running.since
    if (forMs >= HEALTH_STUCK_MS || s.last == null) return { ok: false, err: new Error(`the check has not finished after ${(forMs / 1000).toFixed(1)} s`) }
  }
  return s.last ?? { ok: false, err: new Error('the check has not run') }
}

async function writeProbe (dir: string): Promise<void> {
  const probe = join(dir, `.health-${randomBytes(6).toString('hex')}`)
  await writeFile(probe, 'ok')
  await unlink(probe)
}

function builtinChecks (deps: HealthDeps): HealthCheck[] {
  return [
    {
      name: 'ledger',
      failure: 'the ledger could not be read',
      reuseMs: deps.ledgerCheckCacheMs ?? 0,
      run: async () => { if (await deps.readLedger() === undefined) throw new Error('ledger metadata is missing') }
    },
    {
      name: 'blockstore',
      failure: deps.blockstoreFailure ?? 'the blockstore does not take writes',
      now: () => { if (deps.blockstoreWritable?.() === false) throw new Error('the block store is marked unreachable') },
      reuseMs: deps.diskCheckCacheMs ?? 0,
      run: async () => { await deps.probeBlockstore() }
    },
    ...(deps.stagingDir != null
      ? [{
          name: 'staging',
          failure: 'the staging folder does not take writes',
          reuseMs: deps.diskCheckCacheMs ?? 0,
          run: async () => { await writeProbe(deps.stagingDir as string) }
        }]
      : []),
    {
      name: 'libp2p',
      failure: 'libp2p is not running',
      run: () => {
        const status = deps.libp2pStatus()
        if (status !== 'started') throw new HealthCheckError(`libp2p is ${status}`)
      }
    }
  ]
}

/** each deps' checks, made once (a serve passes the same deps on every request) */
const checksOf = new WeakMap<HealthDeps, HealthCheck[]>()
/** each deps' last report while every check passed: given again while nothing in it changed (its serialization with it, routes/health.ts) */
const lastPass = new WeakMap<HealthDeps, HealthReport>()

export async function checkHealth (deps: HealthDeps): Promise<HealthReport> {
  let all = checksOf.get(deps)
  if (all == null) {
    all = [...builtinChecks(deps), ...deps.checks ?? []]
    checksOf.set(deps, all)
  }
  // every check at once: the answer waits HEALTH_ANSWER_MS at most, not that per check
  const pending: Array<Outcome | Promise<Outcome>> = []
  let waits = false
  let passes = true
  for (const check of all) {
    const o = outcomeOf(check, check.reuseMs ?? 0)
    if (o instanceof Promise) waits = true
    else if (!o.ok) passes = false
    pending.push(o)
  }
  if (!waits && passes && logged.size === 0) {
    // every check passed, as before: the same report while the uptime reads the same
    const uptimeSeconds = Math.floor((Date.now() - deps.startedAt) / 1000)
    const last = lastPass.get(deps)
    if (last != null && last.uptimeSeconds === uptimeSeconds) return last
  }
  const outcomes = waits ? await Promise.all(pending) : pending as Outcome[]
  const checks: HealthReport['checks'] = {}
  for (const [i, check] of all.entries()) {
    const outcome = outcomes[i] as Outcome
    if (outcome.ok) {
      checks[check.name] = { ok: true }
      if (logged.delete(check.name)) deps.log?.info('health check passes again', { check: check.name })
    } else {
      const err = outcome.err
      const shown = err instanceof HealthCheckError ? err.message : check.failure
      checks[check.name] = { ok: false, error: shown }
      const detail = err instanceof HealthCheckError ? err.detail ?? err.message : err instanceof Error ? `${err.name}: ${err.message}` : String(err)
      const last = logged.get(check.name)
      if (last == null || Date.now() - last >= RELOG_MS) {
        logged.set(check.name, Date.now())
        deps.log?.warn('health check failing', { check: check.name, error: detail })
      }
    }
  }
  const ok = Object.values(checks).every(c => c.ok)
  const report: HealthReport = {
    status: ok ? 'ok' : 'failing',
    version: VERSION,
    uptimeSeconds: Math.floor((Date.now() - deps.startedAt) / 1000),
    checks
  }
  if (ok) lastPass.set(deps, report)
  else lastPass.delete(deps)
  return report
}
