/**
 * `pind routing status`: where routing and the provide schedule stand. A
 * running serve adds the live routing state (mode, routing table, records
 * stored here) and the reprovider's counters; on a stopped data dir the
 * ledger still tells what is scheduled and how much is due.
 */
import type { RoutingStatus } from '../../ipfs/routing/index.js'
import type { ProvideKind, ProvideSchedule } from '../../ledger/provides.js'
import type { Reprovider, ReproviderStatus } from '../background/reprovider.js'

export interface RoutingAdminDeps {
  keys: Pick<ProvideSchedule, 'count' | 'countDue' | 'firstDue'>
  /** what a stopped data dir reports: the strategy and interval serve was last given */
  strategy: ProvideKind
  intervalMs: number
  /** running serve only */
  live?: {
    routing: string[]
    status: () => RoutingStatus
    reprovider?: Reprovider
  }
}

export interface RoutingReport {
  running: boolean
  routing: string[] | null
  network: RoutingStatus | null
  provides: Omit<ReproviderStatus, 'providedSinceStart' | 'failedSinceStart' | 'regionsSinceStart' | 'lookupsSinceStart' | 'running' | 'lastRegion' | 'pausedUntil'> & Partial<ReproviderStatus>
}

export async function routingReport (d: RoutingAdminDeps, now = Date.now()): Promise<RoutingReport> {
  const live = d.live
  if (live?.reprovider != null) return { running: true, routing: live.routing, network: live.status(), provides: await live.reprovider.status(now) }
  const [first, keys, pending] = await Promise.all([d.keys.firstDue(d.strategy), d.keys.count(d.strategy), d.keys.countDue(d.strategy, now)])
  return {
    running: live != null,
    routing: live?.routing ?? null,
    network: live?.status() ?? null,
    provides: {
      strategy: d.strategy,
      intervalSeconds: d.intervalMs / 1000,
      keys,
      pending,
      oldestPendingSeconds: first != null && first <= now ? Math.round((now - first) / 1000) : 0,
      nextDueSeconds: first == null ? null : Math.max(0, Math.round((first - now) / 1000)),
      cycleStart: null
    }
  }
}
