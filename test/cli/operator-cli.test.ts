/**
 * What an operator looks for on the command line (issue 15, item 6): usage
 * errors that show the error and where the help is, serve --help with the
 * global options and defaults, config show (values, sources, secrets
 * redacted), EIP-55 checksums, keys list / revoke / mint as scripts use them,
 * settlements --help as the README says; and the log lines: the start
 * banner, a request id and the client address on every line of a request.
 */
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BINARY, runPind, startPind, tempDir, type PindProcess } from '../helpers/pind.js'

const run = async (args: string[], env: Record<string, string | undefined> = {}): ReturnType<typeof runPind> => await runPind(args, { env: { PIND_CONFIG: undefined, PIND_SETTLER_KEY: undefined, ...env } })
const KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'
const CHECKSUMMED = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'

describe('usage and help', () => {
  it('a mistyped flag shows the error, a suggestion and where the help is — not the whole help (exit 2)', async () => {
    const r = await run(['serve', '--prot', '8080'])
    expect(r.code).toBe(2)
    expect(r.err).toMatch(/unknown option '--prot'/)
    expect(r.err).toMatch(/Did you mean --port\?/)
    expect(r.err).toMatch(/\(see: pind serve --help\)/)
    expect(r.err.trim().split('\n').length).toBeLessThanOrEqual(4)
    expect(r.out).toBe('')
    const sub = await run(['keys', 'mint', '--ownr', 'x'])
    expect(sub.code).toBe(2)
    expect(sub.err).toMatch(/\(see: pind keys mint --help\)/)
    expect(sub.err.trim().split('\n').length).toBeLessThanOrEqual(4)
  })

  it('help read by a pipe that closes early (| head) ends quietly, exit 0, no stack trace', async () => {
    const r = spawnSync('bash', ['-c', `"${BINARY}" serve --help | head -c 10 >/dev/null; echo "status \${PIPESTATUS[0]}"`], { encoding: 'utf8', timeout: 60_000 })
    expect(r.stdout.trim()).toBe('status 0')
    expect(r.stderr).not.toMatch(/EPIPE|Unhandled/)
  })

  it('serve --help lists the global options, and every option its environment variable and default', async () => {
    const r = await run(['serve', '--help'])
    expect(r.code).toBe(0)
    expect(r.out).toMatch(/Global Options:[\s\S]*--data-dir <dir>[\s\S]*default\s+\.\/pind-data/)
    expect(r.out).toMatch(/--log-level <level>[\s\S]*default\s+warn/)
    expect(r.out).toMatch(/--config <file>/)
    expect(r.out).toMatch(/--port <port>[\s\S]*\(env\s+PIND_PORT;\s+default\s+8080\)/)
    expect(r.out).toMatch(/--settler-min-balance <wei>/)
  })

  it('settlements --help says what the README says: paid notes are fulfilled automatically', async () => {
    const r = await run(['settlements', '--help'])
    expect(r.out).toMatch(/fulfilled automatically/)
    expect(r.out).toMatch(/unused-pending/)
    expect(r.out).toMatch(/paid-unfulfilled: refund or re-pin, then close it/)
    expect(r.out).not.toMatch(/used → paid-unfulfilled: the payer paid and\s+got\s+nothing/)
  })
})

describe('configuration', () => {
  it('refuses a --pay-to whose EIP-55 checksum does not match (a typo), takes the checksummed and the all-lowercase forms', async () => {
    const typo = CHECKSUMMED.replace('CdDd', 'CdDD')
    const r = await run(['serve', '--data-dir', tempDir(), '--port', '0', '--pay-to', typo])
    expect(r.code).toBe(2)
    expect(r.err).toMatch(new RegExp(`invalid --pay-to: ${typo}: .*EIP-55 checksum`))
    for (const ok of [CHECKSUMMED, CHECKSUMMED.toLowerCase()]) {
      const shown = await run(['config', 'show', '--data-dir', tempDir(), '--pay-to', ok, '--json'])
      expect(shown.code, shown.err).toBe(0)
    }
  })

  it('refuses a settler key without --pay-to', async () => {
    const r = await run(['serve', '--data-dir', tempDir(), '--port', '0', '--rpc-url', 'http://127.0.0.1:1'], { PIND_SETTLER_KEY: KEY })
    expect(r.code).toBe(2)
    expect(r.err).toMatch(/settler key is set .* but no --pay-to/)
  })

  it('config show: every effective value, where it came from, and secrets redacted', async () => {
    const dir = tempDir()
    const file = join(dir, 'pind.json')
    writeFileSync(file, JSON.stringify({ port: 9000, payTo: CHECKSUMMED, corsOrigins: ['https://app.example.com'] }))
    const r = await run(['config', 'show', '--config', file, '--data-dir', join(dir, 'data'), '--port', '9100', '--json'], { PIND_RPC_URL: 'http://127.0.0.1:8545', PIND_SETTLER_KEY: KEY })
    expect(r.code, r.err).toBe(0)
    expect(r.out).not.toContain(KEY.slice(2))
    const rows = new Map((JSON.parse(r.out).settings as Array<{ key: string, value: unknown, from: string }>).map(s => [s.key, s]))
    expect(rows.get('port')).toMatchObject({ value: 9100, from: '--port' })
    expect(rows.get('rpcUrl')).toMatchObject({ value: 'http://127.0.0.1:8545', from: 'PIND_RPC_URL' })
    expect(rows.get('payTo')).toMatchObject({ value: CHECKSUMMED, from: `"payTo" in ${file}` })
    expect(rows.get('corsOrigins')).toMatchObject({ value: ['https://app.example.com'] })
    expect(rows.get('host')).toMatchObject({ value: '127.0.0.1', from: 'default' })
    expect(rows.get('priceRate')).toMatchObject({ value: '100000', from: 'default' })
    expect(rows.get('settlerKey')).toMatchObject({ value: '(set; hidden)', from: 'PIND_SETTLER_KEY' })
    expect(rows.get('facilitatorUrl')).toMatchObject({ value: null, from: 'unset' })
    const text = await run(['config', 'show', '--config', file, '--data-dir', join(dir, 'data')], { PIND_SETTLER_KEY: KEY, PIND_RPC_URL: 'http://127.0.0.1:8545' })
    expect(text.out).toMatch(/^port\s+9000\s+"port" in /m)
    expect(text.out).not.toContain(KEY.slice(2))
  })
})

describe('keys and logs against a running serve', () => {
  let pind: PindProcess
  beforeAll(async () => { pind = await startPind({ args: ['--trusted-proxies', '127.0.0.1'], env: { PIND_LOG_LEVEL: 'info' } }) })
  afterAll(async () => { await pind?.stop() })
  const keys = async (...args: string[]): ReturnType<typeof runPind> => await run(['keys', ...args, '--data-dir', pind.dataDir])

  it('keys list marks the key that signs new tokens', async () => {
    const first = await keys('list')
    expect(first.code, first.err).toBe(0)
    const marked = (out: string): string[] => out.split('\n').filter(l => l.startsWith('* ')).map(l => l.split(/\s+/)[1] as string)
    expect(marked(first.out)).toHaveLength(1)
    const rotated = JSON.parse((await keys('rotate', '--json')).out).rotated.kid as string
    const second = await keys('list')
    expect(marked(second.out)).toEqual([rotated])
    const json = JSON.parse((await keys('list', '--json')).out)
    expect(json.keys.filter((k: any) => k.signing === true).map((k: any) => k.kid)).toEqual([rotated])
  })

  it('keys mint prints only the token on stdout (T=$(pind keys mint …)), the rest on stderr', async () => {
    const r = await keys('mint', '--owner', '0x00000000000000000000000000000000000000c3')
    expect(r.code, r.err).toBe(0)
    expect(r.out).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/)
    expect(r.err).toMatch(/minted jti \S+ for 0x00000000000000000000000000000000000000c3/)
    const token = r.out.trim()
    expect((await fetch(`${pind.url}/pins`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
  })

  it('keys revoke --jti warns about an id nobody minted here, not about a known one', async () => {
    const unknown = await keys('revoke', '--jti', 'no-such-token-id')
    expect(unknown.code).toBe(0)
    expect(unknown.err).toMatch(/warning: no-such-token-id does not look like a pind token id/)
    const shaped = await keys('revoke', '--jti', 'AAAAAAAAAAAAAAAAAAAAAA')
    expect(shaped.err).toMatch(/warning: no operator token AAAAAAAAAAAAAAAAAAAAAA was minted here/)
    const minted = JSON.parse((await keys('mint', '--owner', '0x00000000000000000000000000000000000000c4', '--json')).out)
    const known = await keys('revoke', '--jti', minted.jti, '--json')
    expect(known.code).toBe(0)
    expect(known.err).not.toMatch(/warning/)
    expect(JSON.parse(known.out)).toMatchObject({ revokedJti: minted.jti, known: true })
  })

  it('every log line of a request carries its id and the client address; the start banner is a log line', async () => {
    const own = await fetch(`${pind.url}/health`)
    const id = own.headers.get('x-request-id') as string
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    // through a trusted proxy: its X-Forwarded-For and X-Request-Id are kept
    const proxied = await fetch(`${pind.url}/pins`, { method: 'POST', headers: { 'x-forwarded-for': '203.0.113.9', 'x-request-id': 'edge-42', 'content-type': 'application/json' }, body: '{"cid": 7}' })
    expect(proxied.status).toBe(400)
    expect(proxied.headers.get('x-request-id')).toBe('edge-42')
    const lines = (): Array<Record<string, unknown>> => pind.stderr().trim().split('\n').map(l => JSON.parse(l) as Record<string, unknown>)
    const { waitFor } = await import('../helpers/ports.js')
    await waitFor(() => lines().some(l => l.reqId === 'edge-42') ? true : undefined, 'the proxied request line')
    expect(lines().find(l => l.msg === 'request' && l.reqId === id)).toMatchObject({ client: '127.0.0.1', path: '/health', status: 200 })
    expect(lines().find(l => l.msg === 'request' && l.reqId === 'edge-42')).toMatchObject({ client: '203.0.113.9', status: 400 })
    const banner = lines().find(l => l.msg === 'serving')
    expect(banner).toMatchObject({ level: 'notice', url: pind.url, peerId: pind.peerId, dataDir: pind.dataDir, payments: 'no-pay-to' })
  })

  it('the start banner is logged at the default level too (warn), the request lines are not', async () => {
    const quiet = await startPind()
    try {
      await fetch(`${quiet.url}/health`)
      const lines = quiet.stderr().trim().split('\n').map(l => JSON.parse(l) as Record<string, unknown>)
      const serving = lines.find(l => l.msg === 'serving' && l.level === 'notice') as { startup?: { ms: number, loadMs: number, steps: Record<string, number> } } | undefined
      expect(serving).toBeDefined()
      expect(lines.some(l => l.msg === 'request')).toBe(false)
      // where the start's time went: the code's loading, then each step; a new data dir's ledger has nothing to upgrade
      const startup = serving?.startup
      expect(startup?.loadMs).toBeGreaterThan(0)
      expect(Object.keys(startup?.steps ?? {})).toEqual(expect.arrayContaining(['opening the block store', 'opening the ledger', 'starting the IPFS node', 'starting the services']))
      expect(Object.keys(startup?.steps ?? {}).filter(k => k.startsWith('upgrading'))).toEqual([])
      expect(startup!.ms).toBeGreaterThanOrEqual(startup!.loadMs + Object.values(startup!.steps).reduce((a, b) => a + b, 0) - 50)
    } finally {
      await quiet.stop()
    }
  })
})
