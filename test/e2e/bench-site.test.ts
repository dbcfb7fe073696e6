/**
 * scripts/bench-site.mjs --quick on the bundle (its own dev chain and pind): a paid CAR upload
 * against the same size as a file, and a paid directory upload against @helia/unixfs's addAll
 * of the same files (the script fails when the two roots differ). Figures are checked for
 * form only: the targets are the script's to judge (scripts/bench.mjs), never a timed
 * assertion here.
 */
import { describe, expect, it } from 'vitest'
import { runScript } from '../helpers/script.js'

interface Result {
  quick: boolean
  runs: number
  mb: number
  fileMBps: number
  carMBps: number
  carRatio: number
  fileMs: number[]
  carMs: number[]
  files: number
  fileBytes: number
  dirMB: number
  dirMBps: number
  dirBaselineMBps: number
  dirRatio: number
  dirMs: number[]
  dirBaselineMs: number[]
}

const run = async (args: string[]): ReturnType<typeof runScript> => await runScript('bench-site.mjs', args)

describe('bench-site.mjs --quick', () => {
  it('prints both measurements against their baselines with their targets, and the figures as JSON', async () => {
    const r = await run(['--quick', '--json'])
    expect(r.code, `${r.err}\n${r.out}`).toBe(0)
    const lines = r.out.trim().split('\n')
    const report = lines.slice(0, -1).join('\n')
    const figure = (label: string): RegExp => new RegExp(`^${label} +median +\\d+ ms +[\\d.]+ MB/s +\\(\\d+\\)$`, 'm')
    expect(report).toMatch(figure('paid upload, 2 MB as a file'))
    expect(report).toMatch(figure('paid upload, 2 MB as a CAR \\(\\?format=car\\)'))
    expect(report).toMatch(/^ratio CAR \/ file: [\d.]+ \(target >= 0\.90\); per run [\d.]+$/m)
    expect(report).toMatch(figure('paid directory upload, 200 files of 5000 bytes'))
    expect(report).toMatch(figure('baseline: @helia/unixfs addAll into FsBlockstore, no HTTP'))
    expect(report).toMatch(/^ratio directory \/ baseline: [\d.]+ \(target >= 0\.70\); per run [\d.]+$/m)

    const j = JSON.parse(lines.at(-1)!) as Result
    expect(j).toMatchObject({ quick: true, runs: 1, mb: 2, files: 200, fileBytes: 5000, dirMB: 1 })
    for (const xs of [j.fileMs, j.carMs, j.dirMs, j.dirBaselineMs]) {
      expect(xs).toHaveLength(1)
      expect(xs[0]).toBeGreaterThan(0)
    }
    expect(j.fileMBps).toBeCloseTo(2 / (j.fileMs[0]! / 1000), 6)
    expect(j.carMBps).toBeCloseTo(2 / (j.carMs[0]! / 1000), 6)
    expect(j.carRatio).toBeCloseTo(j.carMBps / j.fileMBps, 6)
    expect(j.dirMBps).toBeCloseTo(1 / (j.dirMs[0]! / 1000), 6)
    expect(j.dirRatio).toBeCloseTo(j.dirMBps / j.dirBaselineMBps, 6)
  }, 120_000)
})
