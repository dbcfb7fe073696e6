import { readJson } from '../../http/json-body.js'
import { sendJson } from '../../http/respond.js'
import type { Router } from '../../http/router.js'
import { runDenyOp, type DenyAdminDeps } from '../../service/admin/deny-admin.js'
import { adminRequest, type AdminJsonRoutes } from '../api.js'

/** POST /deny {op, …}: `pind deny` inside a running serve; a change applies at once. */
export function denyRoutes (router: Router, d: DenyAdminDeps): void {
  router.add('POST', '/deny', async ({ req, res }) => {
    const reply: AdminJsonRoutes['/deny']['reply'] = await runDenyOp(adminRequest('/deny', await readJson(req)), d)
    sendJson(res, 200, reply)
  })
}
