/**
 * `pind serve` (from the bundle): start-up summary, /health, agent card,
 * persistent identity, the data dir lock, logs, graceful shutdown, usage errors.
 */
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runPind, startPind, tempDir } from '../helpers/pind.js'

const run = async (args: string[], env: Record<string, string> = {}): ReturnType<typeof runPind> => await runPind(args, { env })

describe('pind serve', () => {
  it('starts, reports real health checks and the agent card, keeps its peer id, and stops on SIGTERM', async () => {
    const dataDir = tempDir()
    const pind = await startPind({ dataDir, env: { PIND_LOG_LEVEL: 'info' } })
    expect(pind.peerId).toMatch(/^12D3KooW/)
    expect(pind.multiaddrs[0]).toMatch(new RegExp(`/p2p/${pind.peerId}$`))
    expect(pind.stdout()).toMatch(/data dir:\s+\S+/)
    expect(pind.stdout()).toMatch(/network:\s+eip155:167000/)

    const health = await fetch(`${pind.url}/health`)
    expect(health.status).toBe(200)
    const h = await health.json() as any
    expect(h.status).toBe('ok')
    expect(h.checks).toEqual({ ledger: { ok: true }, blockstore: { ok: true }, libp2p: { ok: true } })
    expect(typeof h.uptimeSeconds).toBe('number')
    expect(h.version).toMatch(/^\d+\.\d+\.\d+/)

    for (const path of ['/.well-known/agent.json', '/.well-known/agent-card.json']) {
      const card = await (await fetch(`${pind.url}${path}`)).json() as any
      expect(card).toMatchObject({ name: 'pind', url: pind.url, protocolVersion: '0.3.0', defaultInputModes: expect.any(Array), defaultOutputModes: expect.any(Array) })
      expect(card.skills.map((s: any) => s.id)).toEqual(['pin-by-cid', 'upload', 'retrieve', 'ipfs-network', 'mcp', 'manage-pins'])
      for (const s of card.skills) {
        expect(s.name && s.description && s.tags.length > 0 && s.examples.length > 0).toBeTruthy()
      }
      const x402 = card.capabilities.extensions[0]
      expect(x402.params).toMatchObject({ network: 'eip155:167000', scheme: 'exact', x402Version: 2 })
      expect(x402.params.pricing.formula).toMatch(/size_GB/)
    }

    const missing = await fetch(`${pind.url}/nope`)
    expect(missing.status).toBe(404)
    expect(await missing.json()).toEqual({ error: { reason: 'NOT_FOUND', details: 'no such endpoint: /nope' } })

    // a second serve on the same data dir refuses clearly
    const second = await run(['serve', '--data-dir', dataDir, '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0'])
    expect(second.code).toBe(1)
    expect(second.err).toMatch(new RegExp(`data dir ${dataDir} is in use by pind serve \\(pid ${pind.pid}\\)`))

    expect(await pind.stop('SIGTERM')).toBe(0)
    const lines = pind.stderr().trim().split('\n').map(l => JSON.parse(l) as Record<string, unknown>)
    const req = lines.find(l => l.msg === 'request' && l.path === '/health')
    expect(req).toMatchObject({ level: 'info', method: 'GET', status: 200 })
    expect(typeof req?.ms).toBe('number')
    expect(existsSync(join(dataDir, 'serve.lock'))).toBe(false)
    expect(statSync(join(dataDir, 'identity.key')).mode & 0o777).toBe(0o600)

    const again = await startPind({ dataDir })
    expect(again.peerId).toBe(pind.peerId)
    expect(await again.stop('SIGINT')).toBe(0)
  })

  it('takes over a lock left by a killed process', async () => {
    const dataDir = tempDir()
    const first = await startPind({ dataDir })
    await first.stop('SIGKILL')
    expect(existsSync(join(dataDir, 'serve.lock'))).toBe(true)
    const second = await startPind({ dataDir })
    expect(second.peerId).toBe(first.peerId)
    expect(await second.stop()).toBe(0)
  })

  it('refuses bad configuration with one message per value and exit code 2', async () => {
    const r = await run(['serve', '--port', 'eighty', '--max-months', '0'], { PIND_PAY_TO: 'nope' })
    expect(r.code).toBe(2)
    const lines = r.err.trim().split('\n')
    expect(lines).toHaveLength(3)
    expect(r.err).toMatch(/--port/)
    expect(r.err).toMatch(/--max-months/)
    expect(r.err).toMatch(/PIND_PAY_TO/)
  })

  it('has --help with examples for every subcommand; usage errors exit 2', async () => {
    for (const cmd of ['serve', 'gc', 'export-ledger', 'keys', 'settlements']) {
      const r = await run([cmd, '--help'])
      expect(r.code, cmd).toBe(0)
      expect(r.out).toMatch(new RegExp(`Usage: pind ${cmd}`))
    }
    for (const cmd of [['serve'], ['gc'], ['keys'], ['keys', 'mint'], ['settlements']]) {
      expect((await run([...cmd, '--help'])).out, cmd.join(' ')).toMatch(/Examples:|--owner/)
    }
    const badMint = await run(['keys', 'mint', '--owner', 'nope', '--data-dir', tempDir()])
    expect(badMint.code).toBe(1)
    const noOwner = await run(['keys', 'mint'])
    expect(noOwner.code).toBe(2)
    const unknown = await run(['frobnicate'])
    expect(unknown.code).toBe(2)
  })
})
