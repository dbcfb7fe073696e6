import type { HealthReport } from '../../service/health.js'
import type { ReadyReport } from '../../service/readiness.js'
import { sendJson } from '../respond.js'
import type { Router } from '../router.js'

/** GET /health: liveness (ledger, blockstore, libp2p). GET /ready: and paid writes can work (for load balancers). */
export function healthRoutes (router: Router, check: () => Promise<HealthReport>, ready?: () => Promise<ReadyReport>): void {
  router.add('GET', '/health', async ({ res }) => {
    const report = await check()
    sendJson(res, report.status === 'ok' ? 200 : 503, report)
  })
  if (ready != null) {
    router.add('GET', '/ready', async ({ res }) => {
      const report = await ready()
      sendJson(res, report.status === 'ready' ? 200 : 503, report)
    })
  }
}
