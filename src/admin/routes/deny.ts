import { readJson } from '../../http/json-body.js'
import { sendJson } from '../../http/respond.js'
import type { Router } from '../../http/router.js'
import { runDenyOp, type DenyAdminDeps, type DenyOp } from '../../service/deny-admin.js'

/** POST /deny {op, …}: `pind deny` inside a running serve; a change applies at once. */
export function denyRoutes (router: Router, d: DenyAdminDeps): void {
  router.add('POST', '/deny', async ({ req, res }) => {
    sendJson(res, 200, await runDenyOp(await readJson(req) as DenyOp, d))
  })
}
