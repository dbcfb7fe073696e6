/**
 * Liveness with real checks: the ledger answers a read, the blockstore
 * directory takes a write, libp2p is started.
 */
import { randomBytes } from 'node:crypto'
import { unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { VERSION } from '../version.js'

export interface HealthDeps {
  readLedger(): unknown
  blocksDir: string
  libp2pStatus(): string
  startedAt: number
  /** reuse a passed blockstore write check for this long (a probe per request costs a file create + unlink); default 0 */
  diskCheckCacheMs?: number
}

export interface HealthReport {
  status: 'ok' | 'failing'
  version: string
  uptimeSeconds: number
  checks: Record<string, { ok: boolean, error?: string }>
}

let lastDiskOk = -Infinity
let diskProbe: Promise<void> | undefined

async function probeDisk (blocksDir: string, cacheMs: number): Promise<void> {
  if (cacheMs > 0 && Date.now() - lastDiskOk < cacheMs) return
  diskProbe ??= (async () => {
    const probe = join(blocksDir, `.health-${randomBytes(6).toString('hex')}`)
    await writeFile(probe, 'ok')
    await unlink(probe)
    lastDiskOk = Date.now()
  })().finally(() => { diskProbe = undefined })
  await diskProbe
}

export async function checkHealth (deps: HealthDeps): Promise<HealthReport> {
  const checks: HealthReport['checks'] = {}
  const run = async (name: string, fn: () => unknown): Promise<void> => {
    try {
      await fn()
      checks[name] = { ok: true }
    } catch (err) {
      checks[name] = { ok: false, error: (err as Error).message }
    }
  }
  await run('ledger', () => {
    if (deps.readLedger() === undefined) throw new Error('ledger metadata is missing')
  })
  await run('blockstore', async () => { await probeDisk(deps.blocksDir, deps.diskCheckCacheMs ?? 0) })
  await run('libp2p', () => {
    const status = deps.libp2pStatus()
    if (status !== 'started') throw new Error(`libp2p is ${status}`)
  })
  const ok = Object.values(checks).every(c => c.ok)
  return {
    status: ok ? 'ok' : 'failing',
    version: VERSION,
    uptimeSeconds: Math.floor((Date.now() - deps.startedAt) / 1000),
    checks
  }
}
