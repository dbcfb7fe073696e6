/**
 * What the admin routes of a running serve can reach. The CLI builds the
 * same pieces itself when it works on a stopped data dir.
 */
import type { Ledger } from '../ledger/ledger.js'
import type { KeysAdminDeps } from '../service/admin/keys-admin.js'
import type { GcDeps } from '../service/background/gc.js'
import type { Metrics } from '../metrics/registry.js'
import type { SettlementsAdminDeps } from '../service/admin/settlements-admin.js'
import type { RoutingAdminDeps } from '../service/admin/routing-admin.js'
import type { DenyAdminDeps } from '../service/admin/deny-admin.js'
import type { StatusReport } from '../service/admin/status.js'
import type { BlocksMigrateDeps } from '../service/admin/blocks-migrate.js'
import type { Maintenance } from '../service/background/maintenance.js'
import type { S3Backend } from '../ipfs/s3-backend.js'
import type { S3Credentials, S3Location } from '../ipfs/s3-settings.js'

export interface AdminDeps {
  keys: KeysAdminDeps
  /** its pins (pind pins), and its snapshots (export-ledger) */
  ledger: Pick<Ledger, 'pins' | 'snapshot'>
  gc: GcDeps
  settlements: SettlementsAdminDeps
  metrics?: Metrics
  delegates?: () => string[]
  /** `pind status` of this serve */
  status?: () => Promise<StatusReport>
  routing?: RoutingAdminDeps
  deny?: DenyAdminDeps
  /** gc and blocks migrate, one at a time */
  maintenance?: Maintenance
  /** blocks migrate: all but the bucket, which the admin client names (with the credentials it holds) */
  blocks?: Omit<BlocksMigrateDeps, 'openTarget'> & { openTarget: (location: S3Location, credentials: S3Credentials) => Promise<S3Backend> }
}
