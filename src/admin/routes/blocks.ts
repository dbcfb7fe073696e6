import { readJson } from '../../http/json-body.js'
import type { Router } from '../../http/router.js'
import { migrateToS3 } from '../../service/admin/blocks-migrate.js'
import { MigrateRequest } from '../api.js'
import type { AdminDeps } from '../deps.js'
import { streamTask } from './lines.js'

/**
 * POST /blocks/migrate {location, credentials}: `pind blocks migrate --to s3`
 * inside a running serve, which switches to the bucket when done. Answers a
 * stream of JSON lines — progress events, then {"result": …} or {"error": …}.
 * The credentials come from the admin client (over this 0600 socket) and are
 * held in memory only. If the caller goes away (Ctrl-C), the copy stops;
 * what was verified is journalled and not copied again by the next run.
 */
export function blocksRoutes (router: Router, d: AdminDeps): void {
  const blocks = d.blocks
  if (blocks == null) return
  router.add('POST', '/blocks/migrate', async ({ req, res }) => {
    const body = await readJson(req)
    await streamTask(res, 'blocks migrate', d.maintenance, async (progress, signal) => {
      const r = MigrateRequest.safeParse(body)
      if (!r.success) throw new Error('the request names no bucket or no credentials')
      const { location, credentials } = r.data
      return await migrateToS3({ ...blocks, openTarget: async (l) => await blocks.openTarget(l, credentials) }, location, progress, signal)
    })
  })
}
