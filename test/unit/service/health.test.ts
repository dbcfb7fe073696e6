import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { createLogger } from '../../../src/kernel/log.js'
import { checkHealth, HEALTH_ANSWER_MS, HEALTH_STUCK_MS, HealthCheckError } from '../../../src/service/health/health.js'
import { tempDir } from '../../helpers/pind.js'

describe('health checks', () => {
  const blocksDir = (): string => { const d = join(tempDir(), 'blocks'); mkdirSync(d); return d }
  const file = (dir: string): string => { const f = join(dir, 'not-a-folder'); writeFileSync(f, ''); return f }

  it('is ok when the ledger reads, the blockstore takes a write and libp2p runs', async () => {
    const blocks = new FsBackend(blocksDir())
    const r = await checkHealth({ readLedger: async () => 1, probeBlockstore: async () => { await blocks.probe() }, libp2pStatus: () => 'started', startedAt: Date.now() - 5000 })
    expect(r.status).toBe('ok')
    expect(r.uptimeSeconds).toBeGreaterThanOrEqual(4)
  })

  it('names each failing check with a public message; the error itself goes to the log, not once per request', async () => {
    const dir = blocksDir()
    chmodSync(dir, 0o500)
    const asRoot = process.getuid?.() === 0
    const lines: string[] = []
    const log = createLogger({ level: 'info', write: (l) => { lines.push(l) } })
    const deps = {
      readLedger: async () => { throw new Error('MDB_CORRUPTED: /secret/data/ledger.mdb') },
      // root writes into a read-only folder: then the blocks "folder" is a file
      probeBlockstore: async () => { await new FsBackend(asRoot ? file(dir) : dir).probe() },
      libp2pStatus: () => 'stopping',
      startedAt: Date.now(),
      checks: [{ name: 'extra', failure: 'the extra check failed', run: () => { throw new HealthCheckError('extra is not ready', 'detail for the log') } }],
      log
    }
    const r = await checkHealth(deps)
    expect(r.status).toBe('failing')
    expect(r.checks).toEqual({
      ledger: { ok: false, error: 'the ledger could not be read' },
      blockstore: { ok: false, error: 'the blockstore does not take writes' },
      libp2p: { ok: false, error: 'libp2p is stopping' },
      extra: { ok: false, error: 'extra is not ready' }
    })
    expect(JSON.stringify(r)).not.toContain(dir)
    const logged = lines.map(l => JSON.parse(l))
    expect(logged.map(l => [l.msg, l.check])).toEqual([
      ['health check failing', 'ledger'], ['health check failing', 'blockstore'], ['health check failing', 'libp2p'], ['health check failing', 'extra']
    ])
    expect(logged[0].error).toMatch(/MDB_CORRUPTED: \/secret\/data\/ledger.mdb/)
    expect(logged[1].error).toContain(dir)
    expect(logged[3].error).toBe('detail for the log')
    // the same failures again within a minute are not logged again; a recovery is
    await checkHealth(deps)
    expect(lines.length).toBe(4)
    await checkHealth({ ...deps, readLedger: async () => 1 })
    expect(JSON.parse(lines[4] as string)).toMatchObject({ msg: 'health check passes again', check: 'ledger' })
  })

  it('with blocks in S3: names the bucket in the public message, and checks the local staging folder too', async () => {
    const staging = join(tempDir(), 'staging-missing', 'deeper')
    const r = await checkHealth({
      readLedger: async () => 1,
      probeBlockstore: async () => { throw new Error('PutObject: ECONNREFUSED 127.0.0.1:9000') },
      blockstoreFailure: 'the S3 bucket does not take writes',
      stagingDir: staging,
      libp2pStatus: () => 'started',
      startedAt: Date.now()
    })
    expect(r.checks).toEqual({
      ledger: { ok: true },
      blockstore: { ok: false, error: 'the S3 bucket does not take writes' },
      staging: { ok: false, error: 'the staging folder does not take writes' },
      libp2p: { ok: true }
    })
    expect(JSON.stringify(r)).not.toContain('127.0.0.1')
  })

  it('never waits on a store that does not answer: the last outcome after HEALTH_ANSWER_MS, failing once stuck for HEALTH_STUCK_MS or known down', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    const hanging: Array<() => void> = []
    let hang = false
    let writable = true
    const deps = {
      readLedger: async () => 1,
      probeBlockstore: async () => { if (hang) await new Promise<void>(resolve => { hanging.push(resolve) }) },
      blockstoreWritable: () => writable,
      libp2pStatus: () => 'started',
      startedAt: Date.now()
    }
    /** the report, and how long (fake) it took */
    const answer = async (): Promise<{ report: Awaited<ReturnType<typeof checkHealth>>, ms: number }> => {
      const t0 = Date.now()
      const pending = checkHealth(deps)
      await vi.advanceTimersByTimeAsync(HEALTH_ANSWER_MS + 10)
      return { report: await pending, ms: Date.now() - t0 }
    }
    try {
      expect((await answer()).report.status).toBe('ok')
      hang = true
      // the probe hangs: the answer comes after HEALTH_ANSWER_MS with the last outcome, and the run is not started twice
      const first = await answer()
      expect(first.report.checks.blockstore).toEqual({ ok: true })
      expect(first.ms).toBeLessThanOrEqual(HEALTH_ANSWER_MS + 10)
      expect((await answer()).report.checks.blockstore).toEqual({ ok: true })
      expect(hanging.length).toBe(1)
      // a run still going after HEALTH_STUCK_MS fails the check
      await vi.advanceTimersByTimeAsync(HEALTH_STUCK_MS)
      expect((await answer()).report.checks.blockstore).toEqual({ ok: false, error: 'the blockstore does not take writes' })
      // a store known to be down fails at once, whatever the last outcome
      for (const resolve of hanging.splice(0)) resolve()
      hang = false
      await vi.advanceTimersByTimeAsync(0) // the run ends
      expect((await answer()).report.checks.blockstore).toEqual({ ok: true })
      writable = false
      expect((await answer()).report.checks.blockstore).toEqual({ ok: false, error: 'the blockstore does not take writes' })
    } finally {
      for (const resolve of hanging) resolve()
      vi.useRealTimers()
    }
  })
})
