/**
 * scripts/bench-pin.mjs at a small size on the built binary (its own dev chain, pind, an origin
 * peer A and a Helia peer B): a paid pin by CID against Helia's pins.add of a file of the same size
 * from the same origin, with the CPU each side cost. Figures are checked for form and for their
 * relations only: the target is bench.mjs's to judge, never a timed assertion here.
 */
import { describe, expect, it } from 'vitest'
import { runScript } from '../helpers/script.js'

interface Result {
  mib: number
  runs: number
  pindMs: number
  heliaMs: number
  pindMiBps: number
  heliaMiBps: number
  acceptedMs: number
  pindRuns: number[]
  heliaRuns: number[]
  pindCpuMs: number
  originCpuMs: number
  heliaCpuMs: number
  peakMiB: number
}

const run = async (args: string[]): ReturnType<typeof runScript> => await runScript('bench-pin.mjs', args)

describe('bench-pin.mjs', () => {
  it('prints pind against helia pins.add with both sides\' CPU, and the medians as JSON', async () => {
    const r = await run(['2', '--runs', '2', '--json'])
    expect(r.code, `${r.err}\n${r.out}`).toBe(0)
    const lines = r.out.trim().split('\n')
    const report = lines.slice(0, -1).join('\n')
    expect(report).toMatch(/^run 1\/2: pind \d+ ms \(202 after \d+ ms\), helia pins\.add \d+ ms$/m)
    expect(report).toMatch(/^ {2}pind \(paid POST → pinned\): +\d+ ms, [\d.]+ MiB\/s +\[\d+, \d+\]; of which POST → 202: \d+ ms$/m)
    expect(report).toMatch(/^ {2}baseline helia pins\.add: +\d+ ms, [\d.]+ MiB\/s +\[\d+, \d+\]$/m)
    expect(report).toMatch(/^ {2}this process's CPU \(the origin serving, the client polling\) while pind pins: \d+ ms \[\d+, \d+\]; while helia pins \(origin and fetcher\): \d+ ms \[\d+, \d+\]$/m)
    expect(report).toMatch(/^ {2}this process's event loop busy while pind pins \(the origin's main thread\): \d+% \[\d+, \d+\]$/m)

    const j = JSON.parse(lines.at(-1)!) as Result
    expect(j).toMatchObject({ mib: 2, runs: 2 })
    expect(j.pindRuns).toHaveLength(2)
    expect(j.heliaRuns).toHaveLength(2)
    // the medians are of the runs printed (two runs: the higher one)
    expect(j.pindMs).toBe(Math.max(...j.pindRuns))
    expect(j.heliaMs).toBe(Math.max(...j.heliaRuns))
    expect(j.pindMiBps).toBeCloseTo(2 / (j.pindMs / 1000), 6)
    expect(j.acceptedMs).toBeGreaterThan(0)
    expect(j.acceptedMs).toBeLessThan(j.pindMs)
    // the origin worked while pind pinned (it served the blocks), and the Helia side cost CPU here too
    expect(j.originCpuMs).toBeGreaterThan(0)
    expect(j.heliaCpuMs).toBeGreaterThan(0)
    expect(j.pindCpuMs).toBeGreaterThanOrEqual(0)
    expect(j.peakMiB).toBeGreaterThan(0)
  }, 120_000)
})
