/**
 * Readiness for load balancers (GET /ready): the health checks plus whether
 * paid writes can work now. A node whose payments cannot work (no pay-to, an
 * RPC or facilitator that does not answer, a settler that cannot pay gas)
 * is alive (/health 200) but not ready (/ready 503).
 */
import type { HealthReport } from './health.js'
import type { PaymentsCheck } from './status.js'

export interface ReadyReport {
  status: 'ready' | 'not-ready'
  checks: HealthReport['checks'] & { payments: { ok: boolean, state: string, error?: string } }
}

export async function checkReadiness (health: () => Promise<HealthReport>, payments: () => PaymentsCheck): Promise<ReadyReport> {
  const h = await health()
  const p = payments()
  const checks = { ...h.checks, payments: { ok: p.ok, state: p.state, ...(p.ok ? {} : { error: p.message }) } }
  return { status: Object.values(checks).every(c => c.ok) ? 'ready' : 'not-ready', checks }
}
