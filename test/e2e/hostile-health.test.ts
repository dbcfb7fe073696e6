/**
 * Issue 13, finding 12: a failing /health returned the raw error, data dir
 * path included (`EPERM … open '<data-dir>/blocks/.health-…'`). Here the
 * blockstore folder of the real server goes away under it; a client asking
 * /health learns which check fails, in words that say nothing about the
 * machine, and the operator finds the error itself in the log.
 */
import { renameSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPind, type PindProcess } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

let pind: PindProcess
beforeAll(async () => { pind = await startPind() })
afterAll(async () => { await pind?.stop() })

describe('a failing /health', () => {
  it('names the failing check with a public message; the path and errno go to the log only', async () => {
    const blocks = join(pind.dataDir, 'blocks')
    renameSync(blocks, `${blocks}.away`)
    try {
      const failing = await waitFor(async () => {
        const r = await fetch(`${pind.url}/health`)
        return r.status === 503 ? await r.text() : undefined
      }, '/health to fail')
      const body = JSON.parse(failing)
      expect(body.status).toBe('failing')
      expect(body.checks.blockstore).toEqual({ ok: false, error: 'the blockstore does not take writes' })
      expect(body.checks.ledger).toEqual({ ok: true })
      expect(failing).not.toContain(pind.dataDir)
      expect(failing).not.toMatch(/ENOENT|EPERM|EACCES|\.health-|open '|\/tmp\//)
      const logged = await waitFor(() => pind.stderr().split('\n').find(l => l.includes('health check failing')), 'the log line')
      const line = JSON.parse(logged)
      expect(line).toMatchObject({ level: 'warn', component: 'health', check: 'blockstore' })
      expect(line.error).toContain(blocks)
      expect(line.error).toMatch(/ENOENT/)
    } finally {
      renameSync(`${blocks}.away`, blocks)
    }
    await waitFor(async () => (await fetch(`${pind.url}/health`)).status === 200 ? true : undefined, '/health to pass again')
  })
})
