/**
 * scripts/bench-frontends.mjs --quick on the bundle (its own Ceph, dev chain and PostgreSQL):
 * every row is printed with its figure, baseline, ratio and target; the JSON line has a
 * rate for each configuration, round trips for each operation (none for a gateway read) and the GET /pins p99 on both
 * ledgers (bench-pins-list.mjs --ledger postgres). Figures are checked for sanity only: the
 * targets are the script's to judge, never a timed assertion here.
 */
import { describe, expect, it } from 'vitest'
import { runScript } from '../helpers/script.js'

interface Result {
  quick: boolean
  configs: Record<'lmdb' | 'pg1' | 'pg2', { writesPerS: number, gatewayMBps: number, writes: number, feCpuMsPerWrite: number }>
  roundTrips: Record<'write' | 'pin' | 'list' | 'read', { statements: number, ledgerCalls: number, top: Array<{ query: string, perOp: number }> }>
  pinsList: { pins: number, postgresP99: number, lmdbP99: number }
  rows: Array<{ name: string, figure: number, baseline: number, ratio: number, met?: boolean }>
}

const run = async (args: string[]): ReturnType<typeof runScript> => await runScript('bench-frontends.mjs', args)

describe('bench-frontends.mjs --quick', () => {
  it('prints each row against its baseline with its target, and the figures as JSON', async () => {
    const r = await run(['--quick', '--bundle', '--json'])
    expect(r.code, `${r.err}\n${r.out}`).toBe(0)
    const lines = r.out.trim().split('\n')
    const report = lines.slice(0, -1).join('\n')

    expect(report).toMatch(/where things run: .*(taskset -c 0|nothing pinned).*load generator unpinned/)
    const row = (label: string, unit: string, base: string, target: string): RegExp =>
      new RegExp(`^${label} +[\\d,.]+ ${unit} +vs ${base} [\\d,.]+ ${unit} +[\\d.]+(%|×) +target ${target} +(met|MISSED|info)$`, 'm')
    expect(report).toMatch(row('paid writes, PG 1 FE', 'writes/s', 'LMDB 1 FE', '≥ 80% of baseline'))
    expect(report).toMatch(row('paid writes, PG 2 FEs', 'writes/s', 'PG 1 FE', '≥ 1.6× baseline'))
    expect(report).toMatch(row('gateway, PG 1 FE', 'MB/s', 'LMDB 1 FE', '≥ 95% of baseline'))
    expect(report).toMatch(row('gateway, PG 2 FEs', 'MB/s', 'PG 1 FE', '\\(none\\)'))
    expect(report).toMatch(row('GET /pins p99, 1,000 pins, PG', 'ms', 'LMDB', '< 20 ms'))
    for (const what of ['paid write', 'pin by CID', 'listing', 'gateway read']) expect(report).toMatch(new RegExp(`^round trips per ${what}, PG +[\\d.]+ +\\([\\d.]+ ledger calls\\)`, 'm'))

    const j = JSON.parse(lines.at(-1)!) as Result
    expect(j.quick).toBe(true)
    for (const k of ['lmdb', 'pg1', 'pg2'] as const) {
      expect(j.configs[k].writes, k).toBe(12)
      expect(j.configs[k].writesPerS, k).toBeGreaterThan(0)
      expect(j.configs[k].gatewayMBps, k).toBeGreaterThan(0)
      expect(j.configs[k].feCpuMsPerWrite, k).toBeGreaterThan(0)
    }
    // a paid write commits (BEGIN … COMMIT at least); a listing reads; a pin by CID writes more than once
    expect(j.roundTrips.write.statements).toBeGreaterThanOrEqual(3)
    expect(j.roundTrips.write.top.map(s => s.query)).toEqual(expect.arrayContaining(['BEGIN', 'COMMIT']))
    expect(j.roundTrips.pin.statements).toBeGreaterThan(j.roundTrips.write.statements)
    expect(j.roundTrips.list.statements).toBeGreaterThanOrEqual(1)
    for (const x of [j.roundTrips.write, j.roundTrips.pin, j.roundTrips.list]) {
      expect(x.statements).toBeLessThan(500)
      expect(x.ledgerCalls).toBeGreaterThan(0)
    }
    // no database on the gateway's path: a statement in the reads' windows is a front end's beat or a
    // lease renewal (every 5 s and 10 s, coordination.ts), which fall in them now and then, or nothing
    expect(j.roundTrips.read.top.map(s => s.query).filter(q => !/\b(front_ends|leases)\b/.test(q))).toEqual([])
    expect(j.roundTrips.read.statements).toBeLessThan(5)
    expect(j.pinsList.pins).toBe(1000)
    expect(j.pinsList.postgresP99).toBeGreaterThan(0)
    expect(j.pinsList.lmdbP99).toBeGreaterThan(0)
    expect(j.rows.map(x => x.name)).toEqual(['pg1-writes', 'pg2-writes', 'pg1-gateway', 'pg2-gateway', 'pins-p99'])
    for (const x of j.rows) expect(x.ratio, x.name).toBeCloseTo(x.figure / x.baseline, 9)
  }, 400_000)
})
