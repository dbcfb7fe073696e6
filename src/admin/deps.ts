/**
 * What the admin routes of a running serve can reach. The CLI builds the
 * same pieces itself when it works on a stopped data dir.
 */
import type { PinLedger } from '../ledger/pins.js'
import type { KeysAdminDeps } from '../service/keys-admin.js'
import type { GcDeps } from '../service/gc.js'
import type { Metrics } from '../metrics/registry.js'
import type { SettlementsAdminDeps } from '../service/settlements-admin.js'
import type { RoutingAdminDeps } from '../service/routing-admin.js'
import type { DenyAdminDeps } from '../service/deny-admin.js'
import type { StatusReport } from '../service/status.js'

export interface AdminDeps {
  keys: KeysAdminDeps
  pins: PinLedger
  gc: GcDeps
  settlements: SettlementsAdminDeps
  metrics?: Metrics
  /** stops the background fetch of a pin (taken down by `pind pins rm`) */
  cancelFetch?: (requestid: string) => void
  delegates?: () => string[]
  /** `pind status` of this serve */
  status?: () => Promise<StatusReport>
  routing?: RoutingAdminDeps
  deny?: DenyAdminDeps
}
