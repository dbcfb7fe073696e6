import { readJson } from '../../http/json-body.js'
import { sendJson } from '../../http/respond.js'
import type { Router } from '../../http/router.js'
import { runKeysOp } from '../../service/admin/keys-admin.js'
import { adminRequest, type AdminJsonRoutes } from '../api.js'
import type { AdminDeps } from '../deps.js'

/** POST /keys {op, …}: `pind keys` inside a running serve. */
export function keysRoutes (router: Router, d: AdminDeps): void {
  router.add('POST', '/keys', async ({ req, res }) => {
    const reply: AdminJsonRoutes['/keys']['reply'] = await runKeysOp(adminRequest('/keys', await readJson(req)), d.keys)
    sendJson(res, 200, reply)
  })
}
