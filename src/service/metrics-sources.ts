/**
 * What /metrics reads from the ledger, the blockstore and libp2p, with the
 * costly part cached: pin counts (a pass over the ledger) for 60 s. The
 * blockstore's usage is current (a walk kept up to date by commits and gc).
 */
import type { Usage } from '../ipfs/blockstore-usage.js'
import type { PinLedger } from '../ledger/pins.js'
import type { MetricsSources } from '../metrics/registry.js'

export function metricsSources (pins: PinLedger, usage: () => Promise<Usage>, connections: () => number, payments?: MetricsSources['payments'], extra: Pick<MetricsSources, 'routing' | 'provides' | 's3Up'> = {}): MetricsSources {
  const counts = cached(60_000, () => {
    const out: Record<string, number> = { queued: 0, pinning: 0, pinned: 0, failed: 0, removed: 0 }
    const now = new Date()
    for (const pin of pins.all()) {
      if (pin.removed != null) out.removed = (out.removed ?? 0) + 1
      else if (pin.status === 'failed' || pins.isLive(pin, now)) out[pin.status] = (out[pin.status] ?? 0) + 1
    }
    return out
  })
  return {
    pinCounts: counts,
    fetchQueueDepth: () => pins.pendingFetches().length,
    blockstoreUsage: usage,
    connections,
    ...(payments != null ? { payments } : {}),
    ...(extra.routing != null ? { routing: cached(1000, extra.routing) } : {}),
    ...(extra.provides != null ? { provides: cached(1000, extra.provides) } : {}),
    ...(extra.s3Up != null ? { s3Up: extra.s3Up } : {})
  }
}

function cached<T> (ms: number, fn: () => T): () => T {
  let at = -Infinity
  let value: T | undefined
  return () => {
    if (value === undefined || Date.now() - at > ms) {
      value = fn()
      at = Date.now()
    }
    return value
  }
}
