import { NotFoundError } from '../../kernel/errors.js'
import { sendJson } from '../../http/respond.js'
import type { Router } from '../../http/router.js'
import { routingReport } from '../../service/admin/routing-admin.js'
import type { AdminJsonRoutes } from '../api.js'
import type { AdminDeps } from '../deps.js'

/** POST /routing: `pind routing status` inside a running serve. */
export function routingRoutes (router: Router, d: AdminDeps): void {
  router.add('POST', '/routing', async ({ res }) => {
    if (d.routing == null) throw new NotFoundError('this serve has no routing status')
    const reply: AdminJsonRoutes['/routing']['reply'] = await routingReport(d.routing)
    sendJson(res, 200, reply)
  })
}
