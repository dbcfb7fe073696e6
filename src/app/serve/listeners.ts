/**
 * Serve's listeners beside its HTTP API, as components: the admin socket the
 * `pind` admin commands reach a running serve through, and the optional
 * Prometheus listener (--metrics-listen).
 */
import { rmSync } from 'node:fs'
import type { AdminDeps } from '../../admin/deps.js'
import { startAdminServer, type AdminServer } from '../../admin/server.js'
import type { DataDirLayout } from '../../datadir/layout.js'
import { Router } from '../../http/router.js'
import { metricsRoutes } from '../../http/routes/metrics.js'
import { createHttpServer } from '../../http/server.js'
import type { Logger } from '../../kernel/log.js'
import type { Metrics } from '../../metrics/registry.js'
import type { Component } from '../lifecycle.js'
import { listenFailure } from '../startup-errors.js'

/** the admin socket in the data dir (0600 by the data dir's umask); removed at the stop */
export function adminSocket (paths: DataDirLayout, deps: AdminDeps, log: Logger): Component {
  let server: AdminServer | undefined
  return {
    start: async () => { server = await startAdminServer(paths.adminSocket, deps, log) },
    stop: async () => {
      await server?.close()
      rmSync(paths.adminSocket, { force: true })
    }
  }
}

/** GET /metrics on its own address, apart from the API */
export function metricsListener (address: string, metrics: Metrics, log: Logger): Component {
  const router = new Router()
  metricsRoutes(router, metrics)
  const http = createHttpServer(router, log.child({ component: 'metrics' }))
  return {
    start: async () => {
      const at = address.lastIndexOf(':')
      await http.listen(address.slice(0, at).replace(/^\[|\]$/g, ''), Number(address.slice(at + 1))).catch((err: NodeJS.ErrnoException) => {
        throw listenFailure('the metrics address', { address, ...(err.code != null ? { code: err.code } : {}) }, '--metrics-listen (PIND_METRICS_LISTEN)')
      })
    },
    stop: async () => { await http.close(1000) }
  }
}
