import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { FsBackend } from '../../../src/ipfs/fs-backend.js'
import { createLogger } from '../../../src/log.js'
import { checkHealth, HealthCheckError } from '../../../src/service/health.js'
import { tempDir } from '../../helpers/pind.js'

describe('health checks', () => {
  const blocksDir = (): string => { const d = join(tempDir(), 'blocks'); mkdirSync(d); return d }
  const file = (dir: string): string => { const f = join(dir, 'not-a-folder'); writeFileSync(f, ''); return f }

  it('is ok when the ledger reads, the blockstore takes a write and libp2p runs', async () => {
    const blocks = new FsBackend(blocksDir())
    const r = await checkHealth({ readLedger: () => 1, probeBlockstore: async () => { await blocks.probe() }, libp2pStatus: () => 'started', startedAt: Date.now() - 5000 })
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
      readLedger: () => { throw new Error('MDB_CORRUPTED: /secret/data/ledger.mdb') },
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
    await checkHealth({ ...deps, readLedger: () => 1 })
    expect(JSON.parse(lines[4] as string)).toMatchObject({ msg: 'health check passes again', check: 'ledger' })
  })

  it('with blocks in S3: names the bucket in the public message, and checks the local staging folder too', async () => {
    const staging = join(tempDir(), 'staging-missing', 'deeper')
    const r = await checkHealth({
      readLedger: () => 1,
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
})
