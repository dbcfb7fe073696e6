import { readJson } from '../../http/json-body.js'
import { sendJson } from '../../http/respond.js'
import type { Router } from '../../http/router.js'
import { runSettlementsOp } from '../../service/admin/settlements-admin.js'
import { adminRequest, type AdminJsonRoutes } from '../api.js'
import type { AdminDeps } from '../deps.js'

/** POST /settlements {op, …}: `pind settlements` inside a running serve. */
export function settlementsRoutes (router: Router, d: AdminDeps): void {
  router.add('POST', '/settlements', async ({ req, res }) => {
    const reply: AdminJsonRoutes['/settlements']['reply'] = await runSettlementsOp(adminRequest('/settlements', await readJson(req)), d.settlements)
    sendJson(res, 200, reply)
  })
}
