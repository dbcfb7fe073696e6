/**
 * The ledger's metrics: the pool's connections, calls by operation, the
 * leases held; and a scrape that still answers while the ledger cannot be
 * read (its database away), reading it again at the next scrape.
 */
import { describe, expect, it } from 'vitest'
import { Metrics } from '../../../src/metrics/registry.js'
import { metricsSources } from '../../../src/service/health/metrics-sources.js'
import type { PinLedger } from '../../../src/ledger/pins.js'

describe('ledger metrics', () => {
  it('shows the pool, the calls by operation and the leases, and answers while the ledger cannot be read', async () => {
    let away = true
    let reads = 0
    const pins = {
      countByStatus: async () => { reads++; if (away) throw new Error('unreachable'); return { pinned: 3 } },
      pendingFetches: async () => { if (away) throw new Error('unreachable'); return [] }
    } as unknown as PinLedger
    const m = new Metrics()
    m.watch(metricsSources(pins, async () => ({ blocks: 0, bytes: 0 }), () => 0, undefined, {
      ledgerPool: () => ({ total: 4, idle: 1, waiting: 2 }),
      leases: () => ({ names: ['gc', 'expiry'], held: ['gc'] })
    }))
    m.ledgerCall('pins.get', 0.002, true)
    m.ledgerCall('pins.get', 0.003, false)
    const text = (await m.text()).body
    expect(text).toMatch(/^pind_ledger_pool_connections 4$/m)
    expect(text).toMatch(/^pind_ledger_pool_idle_connections 1$/m)
    expect(text).toMatch(/^pind_ledger_pool_waiting 2$/m)
    expect(text).toMatch(/^pind_ledger_call_duration_seconds_count\{operation="pins\.get"\} 2$/m)
    expect(text).toMatch(/^pind_ledger_call_failures_total\{operation="pins\.get"\} 1$/m)
    expect(text).toMatch(/^pind_leases_held\{lease="gc"\} 1$/m)
    expect(text).toMatch(/^pind_leases_held\{lease="expiry"\} 0$/m)
    expect(text).not.toMatch(/^pind_pins\{/m)
    // back: the failed count is not kept for the cache's minute
    away = false
    const again = (await m.text()).body
    expect(again).toMatch(/^pind_pins\{status="pinned"\} 3$/m)
    expect(reads).toBe(2)
  })
})
