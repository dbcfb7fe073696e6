/**
 * The packaged binary, copied alone into an empty directory with no
 * node_modules anywhere and a HOME it cannot write: --version, serve, /health,
 * the agent card, a paid upload with the embedded facilitator, SIGTERM → 0.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes, createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { chainArgs, payingFetch, uploadForm } from '../helpers/paying-client.js'
import { isolatedBinary, ROOT, startPind } from '../helpers/pind.js'
import pkg from '../../package.json' with { type: 'json' }

let dir: string
let bin: string
let home: string
let chain: DevChain

beforeAll(async () => {
  ({ dir, bin, home } = isolatedBinary())
  chain = await startDevChain()
})

afterAll(async () => { await chain?.stop() })

const env = (): Record<string, string | undefined> => ({ HOME: home, NODE_PATH: undefined, PIND_CONFIG: undefined })

describe('the binary', () => {
  it('is alone in its directory and prints its version', () => {
    expect(readdirSync(dir).sort()).toEqual(['home', 'pind'])
    const out = execFileSync(bin, ['--version'], { cwd: dir, env: { PATH: '/usr/bin:/bin', HOME: home } }).toString().trim()
    // version, the commit it was built from (stamped by scripts/bundle.mjs) and the build date
    const m = new RegExp(`^pind ${pkg.version.replace(/\./g, '\\.')} \\(commit ([0-9a-f]{12})(-dirty)?, built (\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ)\\)$`).exec(out)
    expect(m, out).not.toBeNull()
    execFileSync('git', ['cat-file', '-e', `${m?.[1] as string}^{commit}`], { cwd: ROOT }) // a commit of this repository
    expect(Date.parse(m?.[3] as string)).toBeLessThanOrEqual(Date.now())
    const help = execFileSync(bin, ['--help'], { cwd: dir, env: { PATH: '/usr/bin:/bin', HOME: home } }).toString()
    expect(help).toMatch(/Usage: pind/)
  })

  it('serves /health, the agent card and a paid upload, then stops on SIGTERM with exit 0', async () => {
    const dataDir = join(dir, 'data')
    const { args, env: chainEnv } = chainArgs(chain)
    const pind = await startPind({ binary: bin, cwd: dir, dataDir, args, env: { ...env(), ...chainEnv } })
    try {
      const health = await (await fetch(`${pind.url}/health`)).json() as any
      expect(health.status).toBe('ok')
      const card = await (await fetch(`${pind.url}/.well-known/agent.json`)).json() as any
      expect(card.name).toBe('pind')
      // lmdb's native addon was unpacked under the data dir, not the unwritable HOME
      expect(existsSync(join(dataDir, '.native'))).toBe(true)

      const bytes = randomBytes(1_500_000)
      const r = await payingFetch(chain, chain.payers[0]!.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes) })
      expect(r.status).toBe(201)
      expect(r.headers.get('x-wallet-auth-token')).toBeTruthy()
      const body = await r.json() as any
      const got = new Uint8Array(await (await fetch(body.gateway_url)).arrayBuffer())
      expect(createHash('sha256').update(got).digest('hex')).toBe(createHash('sha256').update(bytes).digest('hex'))
    } finally {
      expect(await pind.stop('SIGTERM')).toBe(0)
    }
  })
})
