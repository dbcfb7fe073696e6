import { readJson } from '../../http/json-body.js'
import { sendJson } from '../../http/respond.js'
import type { Router } from '../../http/router.js'
import { runKeysOp, type KeysOp } from '../../service/keys-admin.js'
import type { AdminDeps } from '../deps.js'

/** POST /keys {op, …}: `pind keys` inside a running serve. */
export function keysRoutes (router: Router, d: AdminDeps): void {
  router.add('POST', '/keys', async ({ req, res }) => {
    sendJson(res, 200, await runKeysOp(await readJson(req) as KeysOp, d.keys))
  })
}
