import { readJson } from '../../http/json-body.js'
import { sendJson } from '../../http/respond.js'
import type { Router } from '../../http/router.js'
import { runPinsOp } from '../../service/admin/pins-admin.js'
import { adminRequest, type AdminJsonRoutes } from '../api.js'
import type { AdminDeps } from '../deps.js'

/** POST /pins {op, …}: `pind pins` inside a running serve (a pin taken down also stops being fetched). */
export function pinsRoutes (router: Router, d: AdminDeps): void {
  router.add('POST', '/pins', async ({ req, res }) => {
    const reply: AdminJsonRoutes['/pins']['reply'] = await runPinsOp(adminRequest('/pins', await readJson(req)), {
      ledger: d.ledger.pins,
      ...(d.delegates != null ? { delegates: d.delegates } : {})
    })
    sendJson(res, 200, reply)
  })
}
