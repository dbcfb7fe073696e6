import { HttpError } from '../../errors.js'
import type { Router } from '../../http/router.js'
import type { AdminDeps } from '../deps.js'

/** POST /export-ledger: `pind export-ledger` inside a running serve (streams the export). */
export function exportRoutes (router: Router, _d: AdminDeps): void {
  router.add('POST', '/export-ledger', () => {
    throw new HttpError(501, 'NOT_IMPLEMENTED', 'export-ledger is not available yet')
  })
}
