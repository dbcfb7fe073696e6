import { errorAnswer, errorBody } from '../../http/error-catalog.js'
import { readJson } from '../../http/json-body.js'
import type { Router } from '../../http/router.js'
import { runGc } from '../../service/background/gc.js'
import { adminRequest } from '../api.js'
import type { AdminDeps } from '../deps.js'
import { streamTask } from './lines.js'

/**
 * POST /gc {dryRun?}: `pind gc` inside a running serve. Answers a stream of
 * JSON lines — progress events, then {"result": …} or {"error": …}. If the
 * caller goes away (Ctrl-C), the run stops after the current batch.
 */
export function gcRoutes (router: Router, d: AdminDeps): void {
  router.add('POST', '/gc', async ({ req, res }) => {
    const body = adminRequest('/gc', await readJson(req) ?? {})
    await streamTask(res, 'gc', d.maintenance, async (progress, signal) => await runGc(d.gc, { dryRun: body.dryRun === true }, progress, signal))
  })
}
