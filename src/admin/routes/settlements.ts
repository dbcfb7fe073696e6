import { readJson } from '../../http/json-body.js'
import { sendJson } from '../../http/respond.js'
import type { Router } from '../../http/router.js'
import { runSettlementsOp, type SettlementsOp } from '../../service/settlements-admin.js'
import type { AdminDeps } from '../deps.js'

/** POST /settlements {op, …}: `pind settlements` inside a running serve. */
export function settlementsRoutes (router: Router, d: AdminDeps): void {
  router.add('POST', '/settlements', async ({ req, res }) => {
    sendJson(res, 200, await runSettlementsOp(await readJson(req) as SettlementsOp, d.settlements))
  })
}
