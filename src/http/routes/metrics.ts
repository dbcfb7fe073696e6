import type { Metrics } from '../../metrics/registry.js'
import type { Router } from '../router.js'

/** GET /metrics in the Prometheus text format (admin socket, or the --metrics-listen address). */
export function metricsRoutes (router: Router, metrics: Metrics): void {
  router.add('GET', '/metrics', async ({ res }) => {
    const { body, contentType } = await metrics.text()
    res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) })
    res.end(body)
  })
}
