/**
 * The admin channel's routes: what the CLI sends and what a running serve
 * answers. The routes (./routes/) and the client (./client.ts) both use these
 * types, and a command run on a stopped data dir returns the same reply from
 * the same service function.
 */
import { z } from 'zod/v4'
import { InvalidInputError } from '../kernel/errors.js'
import type { MigrateProgress } from '../ipfs/migrate.js'
import { S3Credentials, S3Location } from '../ipfs/s3-settings.js'
import type { MigrateReport } from '../service/admin/blocks-migrate.js'
import { DenyOp, type DenyReply } from '../service/admin/deny-admin.js'
import type { GcProgress, GcResult } from '../service/background/gc.js'
import { KeysOp, type KeysReply } from '../service/admin/keys-admin.js'
import { PinsOp, type PinsReply } from '../service/admin/pins-admin.js'
import type { RoutingReport } from '../service/admin/routing-admin.js'
import { SettlementsOp, type SettlementsReply } from '../service/admin/settlements-admin.js'
import type { StatusReport } from '../service/admin/status.js'

const Nothing = z.object({}).strict()
const GcRequest = z.object({ dryRun: z.boolean().optional() })
/** POST /blocks/migrate: where to copy the blocks, and the credentials for it (held in memory only) */
export const MigrateRequest = z.object({ location: S3Location, credentials: S3Credentials })

/** the request bodies of the routes that take JSON, as zod schemas: the routes validate with them */
export const ADMIN_REQUESTS = {
  '/keys': KeysOp,
  '/pins': PinsOp,
  '/settlements': SettlementsOp,
  '/deny': DenyOp,
  '/routing': Nothing,
  '/status': Nothing,
  '/gc': GcRequest
}

type Request<P extends keyof typeof ADMIN_REQUESTS> = z.output<(typeof ADMIN_REQUESTS)[P]>

/** A route's request body, validated with its schema: anything else is a 400 that names the first problem. */
export function adminRequest<P extends keyof typeof ADMIN_REQUESTS> (path: P, body: unknown): Request<P> {
  const r = ADMIN_REQUESTS[path].safeParse(body)
  if (!r.success) {
    const issue = r.error.issues[0]
    throw new InvalidInputError(`not a valid ${path} request${issue != null ? `: ${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}` : ''}`)
  }
  return r.data as Request<P>
}

/** POST routes answering one JSON reply */
export interface AdminJsonRoutes {
  '/keys': { request: Request<'/keys'>, reply: KeysReply }
  '/pins': { request: Request<'/pins'>, reply: PinsReply }
  '/settlements': { request: Request<'/settlements'>, reply: SettlementsReply }
  '/deny': { request: Request<'/deny'>, reply: DenyReply }
  '/routing': { request: Request<'/routing'>, reply: RoutingReport }
  '/status': { request: Request<'/status'>, reply: StatusReport }
}

/** POST routes answering JSON lines: `{progress}` events, then `{result}` or `{error}` */
export interface AdminLineRoutes {
  '/gc': { request: Request<'/gc'>, progress: GcProgress, reply: GcResult }
  '/blocks/migrate': { request: z.output<typeof MigrateRequest>, progress: MigrateProgress, reply: MigrateReport }
}

export type AdminJsonPath = keyof AdminJsonRoutes
export type AdminLinePath = keyof AdminLineRoutes
