/**
 * Readiness for load balancers (GET /ready): the health checks plus whether
 * paid writes can work now. A node whose payments cannot work (no pay-to, an
 * RPC or facilitator that does not answer, a settler that cannot pay gas)
 * is alive (/health 200) but not ready (/ready 503), as is one draining
 * before a stop (http/routes/health.ts).
 */
import { z } from 'zod/v4'
import { text } from '../../kernel/api-shapes.js'
import { CheckResult, type HealthReport } from './health.js'
import type { PaymentsCheck } from '../admin/status.js'

/** the body of GET /ready: the health checks and `payments` (OpenAPI: Ready, derived from this) */
export const Ready = z.object({
  status: z.enum(['ready', 'not-ready']),
  checks: z.object({
    payments: z.object({
      ok: z.boolean(),
      state: z.enum(['ready', 'low-balance', 'starting', 'no-pay-to', 'no-facilitator', 'unreachable', 'unfunded', 'asset-misconfigured', 'degraded'] satisfies Array<PaymentsCheck['state']>),
      error: text('why paid writes cannot work now; degraded: the networks that cannot take payments now').optional(),
      networks: z.record(z.string(), z.object({
        ok: z.boolean(),
        state: z.enum(['ready', 'low-balance', 'starting', 'unreachable', 'unfunded', 'asset-misconfigured']),
        error: text('why payments on this network cannot work now').optional()
      })).optional().meta({ description: 'each accepted network (CAIP-2 id): whether payments on it work now (one network failing does not stop the others)' })
    })
  }).catchall(CheckResult)
})

export type ReadyReport = z.output<typeof Ready>

export async function checkReadiness (health: () => Promise<HealthReport>, payments: () => PaymentsCheck): Promise<ReadyReport> {
  const h = await health()
  const p = payments()
  const networks = 'networks' in p && p.networks.length > 0
    ? { networks: Object.fromEntries(p.networks.map(n => [n.network, { ok: n.ok, state: n.state, ...(n.ok ? {} : { error: n.message }) }])) }
    : {}
  const checks = { ...h.checks, payments: { ok: p.ok, state: p.state, ...(p.ok && p.state !== 'degraded' ? {} : { error: p.message }), ...networks } }
  return { status: Object.values(checks).every(c => c.ok) ? 'ready' : 'not-ready', checks }
}
