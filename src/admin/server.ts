/**
 * The admin channel of a running `serve`: HTTP over a Unix socket in the
 * data dir (mode 0600, so only the operator's user can connect), never on
 * the public port. Admin subcommands send their operation here when a serve
 * holds the data dir, and run it themselves when none does. Each concern
 * adds its routes from src/admin/routes/.
 */
import type { Logger } from '../kernel/log.js'
import { sendJson } from '../http/respond.js'
import { Router } from '../http/router.js'
import { createHttpServer } from '../http/server.js'
import { exportRoutes } from './routes/export.js'
import { blocksRoutes } from './routes/blocks.js'
import { gcRoutes } from './routes/gc.js'
import { keysRoutes } from './routes/keys.js'
import { pinsRoutes } from './routes/pins.js'
import { statusRoutes } from './routes/status.js'
import { settlementsRoutes } from './routes/settlements.js'
import { routingRoutes } from './routes/routing.js'
import { denyRoutes } from './routes/deny.js'
import { metricsRoutes } from '../http/routes/metrics.js'
import type { AdminDeps } from './deps.js'

export interface AdminServer {
  close(): Promise<void>
}

export async function startAdminServer (socketPath: string, d: AdminDeps, log: Logger): Promise<AdminServer> {
  const router = new Router()
  router.add('GET', '/ping', ({ res }) => { sendJson(res, 200, { pid: process.pid }) })
  if (d.metrics != null) metricsRoutes(router, d.metrics)
  keysRoutes(router, d)
  gcRoutes(router, d)
  exportRoutes(router, d)
  settlementsRoutes(router, d)
  pinsRoutes(router, d)
  statusRoutes(router, d)
  routingRoutes(router, d)
  if (d.deny != null) denyRoutes(router, d.deny)
  blocksRoutes(router, d)
  const http = createHttpServer(router, log.child({ component: "admin" }), { idleTimeoutMs: 0 })
  await http.listenSocket(socketPath)
  return { close: async () => { await http.close(2000) } }
}
