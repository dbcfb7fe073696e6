/**
 * `npm run bench` (scripts/bench.mjs) with --quick on five cheap rows against the built
 * binary: each printed row carries its figure, baseline, ratio and target; --json parses and
 * its ratios are figure / baseline; the production unit's runtime environment (here a unit
 * of the test's own, --env-from) is what pind runs with. And the unit parsing behind it
 * (productionRuntimeEnv, scripts/bench-lib.mjs) on both forms of Environment=.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { pindEnv, productionRuntimeEnv, ROOT, unitEnvironmentWords } from '../../scripts/bench-lib.mjs'

const dir = mkdtempSync(join(tmpdir(), 'pind-bench-summary-'))
afterAll(() => { rmSync(dir, { recursive: true, force: true }) })

const UNIT = `[Service]
ExecStart=/usr/local/bin/pind serve
Environment=PIND_DATA_DIR=/var/lib/pind
Environment="GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072" "NODE_OPTIONS=--max-semi-space-size=16 --max-old-space-size=512"
Environment=MALLOC_ARENA_MAX=2 PIND_RUNTIME_BENCH=1 OTHER=x
# Environment=NODE_OPTIONS=--commented-out
`

describe('productionRuntimeEnv', () => {
  it('reads both forms of Environment= and keeps only the runtime settings', () => {
    const unit = join(dir, 'a.service')
    writeFileSync(unit, UNIT)
    expect(productionRuntimeEnv(unit)).toEqual({
      GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072',
      NODE_OPTIONS: '--max-semi-space-size=16 --max-old-space-size=512',
      MALLOC_ARENA_MAX: '2',
      PIND_RUNTIME_BENCH: '1'
    })
    expect(unitEnvironmentWords(`"A=1 2" B=3 'C=x y' D=a\\ b`)).toEqual(['A=1 2', 'B=3', 'C=x y', 'D=a b'])
    // a later assignment wins; an empty Environment= resets the list
    writeFileSync(unit, 'Environment=NODE_OPTIONS=--a MALLOC_X=1\nEnvironment=NODE_OPTIONS=--b\n')
    expect(productionRuntimeEnv(unit)).toEqual({ NODE_OPTIONS: '--b', MALLOC_X: '1' })
    writeFileSync(unit, 'Environment=MALLOC_X=1\nEnvironment=\nEnvironment=GLIBC_TUNABLES=x\n')
    expect(productionRuntimeEnv(unit)).toEqual({ GLIBC_TUNABLES: 'x' })
    // the repository's unit parses, whatever it carries
    expect(productionRuntimeEnv()).toBeTypeOf('object')
  })

  it('appends BENCH_SERVE_NODE_OPTIONS to the production NODE_OPTIONS', () => {
    const saved = { e: process.env.BENCH_SERVE_ENV, n: process.env.BENCH_SERVE_NODE_OPTIONS }
    try {
      process.env.BENCH_SERVE_ENV = JSON.stringify({ NODE_OPTIONS: '--max-semi-space-size=16', MALLOC_ARENA_MAX: '2' })
      process.env.BENCH_SERVE_NODE_OPTIONS = '--cpu-prof'
      const env = pindEnv({ PIND_X: '1' })
      expect(env.NODE_OPTIONS).toBe('--max-semi-space-size=16 --cpu-prof')
      expect(env.MALLOC_ARENA_MAX).toBe('2')
      expect(env.PIND_X).toBe('1')
    } finally {
      for (const [k, v] of [['BENCH_SERVE_ENV', saved.e], ['BENCH_SERVE_NODE_OPTIONS', saved.n]] as const) {
        if (v == null) delete process.env[k]
        else process.env[k] = v
      }
    }
  })
})

describe('npm run bench --quick', () => {
  it('prints figure, baseline, ratio and target per row, and the same as JSON', () => {
    const unit = join(dir, 'pind.service')
    writeFileSync(unit, UNIT)
    // the benchmarks' temporary folders go here: the upload's baseline keeps its blocks until its run ends, then removes them
    const tmp = join(dir, 'tmp')
    mkdirSync(tmp)
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts/bench.mjs'), '--quick', '--only', 'health,unknown402,bazaar402,upload,keys-mint', '--json', '--env-from', unit],
      { cwd: ROOT, encoding: 'utf8', timeout: 100_000, env: { ...process.env, TMPDIR: tmp } })
    expect(r.status, `${r.stderr}\n${r.stdout}`).toBe(0)
    const report = r.stderr // with --json the table goes to stderr, the JSON to stdout

    // one line per row: the figure, "vs" the baseline, the ratio, the target, met or MISSED
    const lines = report.split('\n')
    const rowLine = (label: string): string => lines.find(l => l.startsWith(label)) ?? ''
    expect(rowLine('GET /health rate'), report).toMatch(/^GET \/health rate +[\d,.]+ req\/s +vs hello-world [\d,.]+ req\/s +\d+% +target ≥ 85% of baseline +(met|MISSED)$/)
    expect(rowLine('402 unknown CID'), report).toMatch(/^402 unknown CID +[\d,.]+ req\/s +vs hello-world [\d,.]+ req\/s +\d+% +target ≥ 60% of baseline +(met|MISSED)$/)
    // under it, for context: a bare node:http server answering the same 402 bytes (bench-rates checks they are pind's)
    expect(lines[lines.indexOf(rowLine('402 unknown CID')) + 1], report).toMatch(/^ +\(node:http answering the same 402 bytes: [\d,.]+ req\/s, \d+% of hello-world\)$/)
    // the same 402 from a second pind with --bazaar false is the baseline of the bazaar block's cost
    expect(rowLine('402 with the bazaar block'), report).toMatch(/^402 with the bazaar block +[\d,.]+ req\/s +vs 402 without \(--bazaar false\) [\d,.]+ req\/s +\d+% +target ≥ 90% of baseline +(met|MISSED)$/)
    expect(rowLine('paid upload 2 MB'), report).toMatch(/^paid upload 2 MB +[\d,.]+ MB\/s +vs UnixFS import alone [\d,.]+ MB\/s +\d+% +target ≥ 75% of baseline +(met|MISSED)$/)
    expect(readdirSync(tmp)).toEqual([])
    expect(rowLine('pind keys mint via serve'), report).toMatch(/^pind keys mint via serve +[\d,.]+ ms +vs pind --version [\d,.]+ ms +[\d.]+× +target < 200 ms +(met|MISSED)$/)
    expect(report).toMatch(/^5 rows: \d met, \d missed; \d+ s; load average at start [\d.]+ [\d.]+ [\d.]+, at end [\d.]+ [\d.]+ [\d.]+$/m)
    expect(report).toMatch(/runtime environment: from .*pind\.service: GLIBC_TUNABLES=\S+ NODE_OPTIONS=--max-semi-space-size=16 --max-old-space-size=512 MALLOC_ARENA_MAX=2 PIND_RUNTIME_BENCH=1$/m)

    const j = JSON.parse(r.stdout) as {
      quick: boolean
      productionEnv: Record<string, string>
      rows: Array<{ name: string, figure: number, baseline: number, ratio: number, met: boolean, target: { on: string, atLeast?: number, below?: number }, context?: { label: string, figure: number, ratio: number } }>
      met: number
      missed: number
      loadavg: { start: number[], end: number[] }
    }
    expect(j.quick).toBe(true)
    expect(j.productionEnv).toEqual({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072', NODE_OPTIONS: '--max-semi-space-size=16 --max-old-space-size=512', MALLOC_ARENA_MAX: '2', PIND_RUNTIME_BENCH: '1' })
    expect(j.rows.map(x => x.name)).toEqual(['health', 'unknown402', 'bazaar402', 'upload', 'keys-mint'])
    for (const row of j.rows) {
      expect(row.figure, row.name).toBeGreaterThan(0)
      expect(row.baseline, row.name).toBeGreaterThan(0)
      expect(row.ratio, row.name).toBeCloseTo(row.figure / row.baseline, 9)
      expect(row.met, row.name).toBe(row.target.on === 'ratio' ? row.ratio >= row.target.atLeast! : row.figure < row.target.below!)
    }
    expect(j.met + j.missed).toBe(5)
    const unknown = j.rows.find(x => x.name === 'unknown402')!
    expect(unknown.context?.figure).toBeGreaterThan(0)
    expect(unknown.context!.ratio).toBeCloseTo(unknown.context!.figure / unknown.baseline, 9)
    expect(j.rows.filter(x => x.context != null).map(x => x.name)).toEqual(['unknown402'])
    expect(j.loadavg.start).toHaveLength(3)
  }, 130_000)
})
