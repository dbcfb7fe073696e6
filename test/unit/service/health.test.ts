import { chmodSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { checkHealth } from '../../../src/service/health.js'
import { tempDir } from '../../helpers/pind.js'

describe('health checks', () => {
  const blocksDir = (): string => { const d = join(tempDir(), 'blocks'); mkdirSync(d); return d }

  it('is ok when the ledger reads, the blockstore takes a write and libp2p runs', async () => {
    const r = await checkHealth({ readLedger: () => 1, blocksDir: blocksDir(), libp2pStatus: () => 'started', startedAt: Date.now() - 5000 })
    expect(r.status).toBe('ok')
    expect(r.uptimeSeconds).toBeGreaterThanOrEqual(4)
  })

  it('names each failing check', async () => {
    const dir = blocksDir()
    chmodSync(dir, 0o500)
    const asRoot = process.getuid?.() === 0
    const r = await checkHealth({
      readLedger: () => { throw new Error('MDB_CORRUPTED') },
      blocksDir: asRoot ? join(dir, 'missing', 'deeper') : dir,
      libp2pStatus: () => 'stopping',
      startedAt: Date.now()
    })
    expect(r.status).toBe('failing')
    expect(r.checks.ledger).toEqual({ ok: false, error: 'MDB_CORRUPTED' })
    expect(r.checks.blockstore?.ok).toBe(false)
    expect(r.checks.libp2p).toEqual({ ok: false, error: 'libp2p is stopping' })
  })
})
