import { sendJson } from '../../http/respond.js'
import type { Router } from '../../http/router.js'
import type { AdminJsonRoutes } from '../api.js'
import type { AdminDeps } from '../deps.js'

/** POST /status: `pind status` inside a running serve (with its peers and payments). */
export function statusRoutes (router: Router, d: AdminDeps): void {
  router.add('POST', '/status', async ({ res }) => {
    if (d.status == null) throw new Error('status is not available')
    const reply: AdminJsonRoutes['/status']['reply'] = await d.status()
    sendJson(res, 200, reply)
  })
}
