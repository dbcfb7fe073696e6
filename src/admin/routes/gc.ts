import { errorAnswer, errorBody } from '../../http/error-catalog.js'
import { readJson } from '../../http/json-body.js'
import type { Router } from '../../http/router.js'
import { runGc } from '../../service/gc.js'
import type { AdminLineRoutes } from '../api.js'
import type { AdminDeps } from '../deps.js'

/**
 * POST /gc {dryRun?}: `pind gc` inside a running serve. Answers a stream of
 * JSON lines — progress events, then {"result": …} or {"error": …}. If the
 * caller goes away (Ctrl-C), the run stops after the current batch.
 */
export function gcRoutes (router: Router, d: AdminDeps): void {
  router.add('POST', '/gc', async ({ req, res }) => {
    const body = await readJson(req) as Partial<AdminLineRoutes['/gc']['request']> | null
    const abort = new AbortController()
    res.on('close', () => { if (!res.writableFinished) abort.abort(new Error('the admin client went away')) })
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' })
    let last = 0
    try {
      const result: AdminLineRoutes['/gc']['reply'] = await runGc(d.gc, { dryRun: body?.dryRun === true }, (p) => {
        if (Date.now() - last < 100) return
        last = Date.now()
        res.write(JSON.stringify({ progress: p }) + '\n')
      }, abort.signal)
      res.end(JSON.stringify({ result }) + '\n')
    } catch (err) {
      // the operator's own channel: a fault's message is shown too
      const a = errorAnswer(err)
      res.end(JSON.stringify(errorBody(a.reason, a.fault === true ? (err as Error).message : a.details)) + '\n')
    }
  })
}
