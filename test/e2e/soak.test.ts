/**
 * The soak (scripts/soak.mjs) at a small size against the packaged binary:
 * 2 paying clients and 1 asking for quotes for 30 s, a SIGTERM and restart
 * midway. Every acknowledged write reads back byte for byte (or is gone, if
 * its client deleted it), every payer's balance change equals what the ledger
 * charged, no request failed, and the samples carry real figures. The full
 * size (30 minutes, 16 + 8 clients) runs from the script.
 */
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runSoak } from '../../scripts/soak.mjs'

describe('soak', () => {
  it('keeps every acknowledged write and every payment straight through a restart under mixed paid load', async () => {
    const csv = join(tmpdir(), `pind-soak-test-${process.pid}.csv`)
    const lines: string[] = []
    try {
      const s = await runSoak({ minutes: 0.5, clients: 2, quoteClients: 1, restartAt: 0.5, sampleMs: 2000, idleSeconds: 2, gcEverySeconds: 10, csv, log: (l) => { lines.push(l) } })
      const report = lines.join('\n')

      // the restart was graceful and the service came back on the same port
      expect(s.restart?.exit, report).toBe(0)
      expect(s.restart?.downMs).toBeGreaterThan(0)
      expect(new Set(s.samples.map(x => x.pid)).size).toBe(2)

      // a mixed load really ran, and nothing failed
      expect(s.paidWrites, report).toBeGreaterThan(0)
      for (const op of ['upload', 'pin', 'read', 'range', 'list', 'quote']) expect(s.ops[op]?.n ?? 0, `${op}\n${report}`).toBeGreaterThan(0)
      expect(s.errors, s.errorSamples.join('\n')).toBe(0)
      expect(s.http5xx).toBe(0)

      // every acknowledged write is there byte for byte, or gone if its client deleted it
      expect(s.writes.ok, s.writes.failures.join('\n')).toBe(true)
      expect(s.writes.live + s.writes.deleted).toBe(s.writes.acknowledged)
      expect(s.writes.verified).toBe(s.writes.live)
      expect(s.writes.deletedGone).toBe(s.writes.deleted)

      // money: each payer's balance fell by exactly what the ledger charged it, and the payee got the sum
      expect(s.money.ok, s.money.mismatches.join('\n')).toBe(true)
      expect(s.money.reconciled).toBe(2)
      expect(BigInt(s.money.charged)).toBeGreaterThan(0n)
      expect(s.money.chainDelta).toBe(s.money.charged)
      expect(s.money.payToDelta).toBe(s.money.charged)

      // samples with real figures (the heap and ArrayBuffers come from /metrics on the admin socket), and a verdict
      const loaded = s.samples.filter(x => x.phase === 'load')
      expect(loaded.length).toBeGreaterThanOrEqual(5)
      for (const x of s.samples) {
        for (const k of ['rss', 'anon', 'ledgerMapped', 'heapUsed', 'external', 'arrayBuffers', 'fds', 'ledgerBytes'] as const) expect(x[k], `${k} at ${x.t}s`).toBeGreaterThan(0)
        // the two holders of transient buffers, from /metrics too: a count and a byte figure, zero when idle
        expect(Number.isInteger(x.chunkBuffers) && x.chunkBuffers >= 0, `chunkBuffers at ${x.t}s`).toBe(true)
        expect(Number.isFinite(x.sendBudget) && x.sendBudget >= 0, `sendBudget at ${x.t}s`).toBe(true)
        // V8's malloc'd memory, from /metrics: its peak since start is never below what it holds now
        expect(x.v8Malloced, `v8Malloced at ${x.t}s`).toBeGreaterThan(0)
        expect(x.v8PeakMalloced, `v8PeakMalloced at ${x.t}s`).toBeGreaterThanOrEqual(x.v8Malloced)
      }
      expect(Math.max(...s.samples.map(x => x.blocksBytes))).toBeGreaterThan(0)
      expect(['plateau', 'growing']).toContain(s.memory.verdict)
      expect(Number.isFinite(s.memory.growthPerHourMiB)).toBe(true)
      const rows = readFileSync(csv, 'utf8').trim().split('\n')
      expect(rows[0]).toMatch(/^t_s,phase,pid,rss_mib,.*,load1,send_budget_mib,chunk_buffers,ledger_rss_mib,v8_malloced_mib,v8_peak_malloced_mib,small_blocks_rss_mib$/)
      for (const row of rows.slice(1)) expect(row.split(',').length).toBe(rows[0]?.split(',').length)
      expect(rows.length).toBe(s.samples.length + 1)
      expect(report).toMatch(/memory verdict: (plateau|growing)/)
      // the ledger's mapped pages are part of the file-backed RSS, and the idle figure is given without them too
      for (const x of s.samples) expect(x.ledgerMapped, `ledgerMapped at ${x.t}s`).toBeLessThanOrEqual(x.file)
      expect(Number.isFinite(s.memory.idleEndVsStartWithoutLedgerPct)).toBe(true)
      expect(report).toMatch(/the ledger's mapped pages \d+ vs \d+ MiB: [+-]?\d+% without them/)
      // and the packed small blocks' (the soak's small files are read back through the gateway)
      for (const x of s.samples) expect(x.smallBlocksMapped >= 0 && x.smallBlocksMapped <= x.file, `smallBlocksMapped at ${x.t}s`).toBe(true)
      expect(s.memory.maxSmallBlocksMappedMiB).toBeGreaterThan(0)
      expect(report).toMatch(/small blocks' mapped pages max \d+ MiB, \d+ MiB idle after the load/)

      // where the ledger's bytes went, by sub-database, per paid write (read with serve stopped)
      expect(s.ledger.dbs.pins?.entries).toBeGreaterThanOrEqual(s.paidWrites)
      // x402 payments are kept under their 52 bytes in payments-binary (src/ledger/lmdb/stored.ts); payments holds any other id
      expect((s.ledger.dbs['payments-binary']?.entries ?? 0) + (s.ledger.dbs.payments?.entries ?? 0)).toBeGreaterThanOrEqual(s.paidWrites)
      for (const db of ['pins', 'payments-binary', 'pins-by-owner', 'file']) expect(s.ledger.bytesPerPaidWrite[db], db).toBeGreaterThan(0)
      expect(report).toMatch(/ledger\.mdb .* bytes per paid write over \d+/)
      expect(report).toMatch(/\n {2}pins +\d+/)
    } finally {
      rmSync(csv, { force: true })
    }
  }, 300_000)
})
