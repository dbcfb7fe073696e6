import type { HealthReport } from '../../service/health.js'
import { sendJson } from '../respond.js'
import type { Router } from '../router.js'

export function healthRoutes (router: Router, check: () => Promise<HealthReport>): void {
  router.add('GET', '/health', async ({ res }) => {
    const report = await check()
    sendJson(res, report.status === 'ok' ? 200 : 503, report)
  })
}
