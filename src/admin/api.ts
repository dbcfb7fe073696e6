/**
 * The admin channel's routes: what the CLI sends and what a running serve
 * answers. The routes (./routes/) and the client (./client.ts) both use these
 * types, and a command run on a stopped data dir returns the same reply from
 * the same service function.
 */
import type { MigrateProgress } from '../ipfs/migrate.js'
import type { S3Credentials, S3Location } from '../ipfs/s3-client.js'
import type { MigrateReport } from '../service/blocks-migrate.js'
import type { DenyOp, DenyReply } from '../service/deny-admin.js'
import type { GcProgress, GcResult } from '../service/gc.js'
import type { KeysOp, KeysReply } from '../service/keys-admin.js'
import type { PinsOp, PinsReply } from '../service/pins-admin.js'
import type { RoutingReport } from '../service/routing-admin.js'
import type { SettlementsOp, SettlementsReply } from '../service/settlements-admin.js'
import type { StatusReport } from '../service/status.js'

/** POST routes answering one JSON reply */
export interface AdminJsonRoutes {
  '/keys': { request: KeysOp, reply: KeysReply }
  '/pins': { request: PinsOp, reply: PinsReply }
  '/settlements': { request: SettlementsOp, reply: SettlementsReply }
  '/deny': { request: DenyOp, reply: DenyReply }
  '/routing': { request: Record<string, never>, reply: RoutingReport }
  '/status': { request: Record<string, never>, reply: StatusReport }
}

/** POST routes answering JSON lines: `{progress}` events, then `{result}` or `{error}` */
export interface AdminLineRoutes {
  '/gc': { request: { dryRun: boolean }, progress: GcProgress, reply: GcResult }
  '/blocks/migrate': { request: { location: S3Location, credentials: S3Credentials }, progress: MigrateProgress, reply: MigrateReport }
}

export type AdminJsonPath = keyof AdminJsonRoutes
export type AdminLinePath = keyof AdminLineRoutes
