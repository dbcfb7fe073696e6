/**
 * What /metrics reads from the ledger, the blockstore and libp2p, with the
 * costly part cached: pin counts (a pass over the pins not removed) for 60 s. The
 * blockstore's usage is current (a walk kept up to date by commits and gc).
 */
import type { Usage } from '../../ipfs/blockstore-usage.js'
import type { PinLedger } from '../../ledger/pins.js'
import type { MetricsSources } from '../../metrics/registry.js'

export function metricsSources (pins: PinLedger, usage: () => Promise<Usage>, connections: () => number, payments?: MetricsSources['payments'], extra: Pick<MetricsSources, 'routing' | 'provides' | 's3Up' | 'sending' | 'uploadChunks' | 'gcUnreferencedBytes' | 'ledgerPool' | 'leases' | 'runtimeCollections' | 'runtimeMallocTrims' | 'runtimeMapTrims'> = {}): MetricsSources {
  const counts = cached(60_000, async () => await pins.countByStatus())
  return {
    pinCounts: counts,
    fetchQueueDepth: async () => (await pins.pendingFetches()).length,
    blockstoreUsage: usage,
    connections,
    ...(payments != null ? { payments } : {}),
    ...(extra.routing != null ? { routing: cached(1000, extra.routing) } : {}),
    ...(extra.provides != null ? { provides: cached(1000, extra.provides) } : {}),
    ...(extra.s3Up != null ? { s3Up: extra.s3Up } : {}),
    ...(extra.sending != null ? { sending: extra.sending } : {}),
    ...(extra.uploadChunks != null ? { uploadChunks: extra.uploadChunks } : {}),
    ...(extra.gcUnreferencedBytes != null ? { gcUnreferencedBytes: extra.gcUnreferencedBytes } : {}),
    ...(extra.ledgerPool != null ? { ledgerPool: extra.ledgerPool } : {}),
    ...(extra.leases != null ? { leases: extra.leases } : {}),
    ...(extra.runtimeCollections != null ? { runtimeCollections: extra.runtimeCollections } : {}),
    ...(extra.runtimeMallocTrims != null ? { runtimeMallocTrims: extra.runtimeMallocTrims } : {}),
    ...(extra.runtimeMapTrims != null ? { runtimeMapTrims: extra.runtimeMapTrims } : {})
  }
}

function cached<T> (ms: number, fn: () => T): () => T {
  let at = -Infinity
  let value: T | undefined
  return () => {
    if (value === undefined || Date.now() - at > ms) {
      const v = fn()
      value = v
      at = Date.now()
      // a failed read (the ledger's database away) is not kept: the next scrape reads again
      if (v instanceof Promise) v.catch(() => { if (value === v) at = -Infinity })
    }
    return value
  }
}
