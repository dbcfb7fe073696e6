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
 */
import { z } from 'zod/v4'
import { count, text } from '../api-shapes.js'
import { PindError } from '../errors.js'
import { randomBytes } from 'node:crypto'
import { unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from '../log.js'
import { VERSION } from '../version.js'

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
  run(): unknown
}

export interface HealthDeps {
  readLedger(): unknown
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

/** a probe whose pass is reused for `cacheMs`, and that runs once however many ask at the same time */
function cachedProbe (): (fn: () => Promise<void>, cacheMs: number) => Promise<void> {
  let lastOk = -Infinity
  let running: Promise<void> | undefined
  return async (fn, cacheMs) => {
    if (cacheMs > 0 && Date.now() - lastOk < cacheMs) return
    running ??= fn().then(() => { lastOk = Date.now() }).finally(() => { running = undefined })
    await running
  }
}

const blockstoreProbe = cachedProbe()
const stagingProbe = cachedProbe()

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
      run: () => { if (deps.readLedger() === undefined) throw new Error('ledger metadata is missing') }
    },
    {
      name: 'blockstore',
      failure: deps.blockstoreFailure ?? 'the blockstore does not take writes',
      run: async () => {
        if (deps.blockstoreWritable?.() === false) throw new Error('the block store is marked unreachable')
        await blockstoreProbe(deps.probeBlockstore, deps.diskCheckCacheMs ?? 0)
      }
    },
    ...(deps.stagingDir != null
      ? [{
          name: 'staging',
          failure: 'the staging folder does not take writes',
          run: async () => { await stagingProbe(async () => { await writeProbe(deps.stagingDir as string) }, deps.diskCheckCacheMs ?? 0) }
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

export async function checkHealth (deps: HealthDeps): Promise<HealthReport> {
  const checks: HealthReport['checks'] = {}
  for (const check of [...builtinChecks(deps), ...deps.checks ?? []]) {
    try {
      await check.run()
      checks[check.name] = { ok: true }
      if (logged.delete(check.name)) deps.log?.info('health check passes again', { check: check.name })
    } catch (err) {
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
  return {
    status: ok ? 'ok' : 'failing',
    version: VERSION,
    uptimeSeconds: Math.floor((Date.now() - deps.startedAt) / 1000),
    checks
  }
}
