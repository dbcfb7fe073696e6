/**
 * Errors an operator can act on (issue 15, item 5), with the built binary:
 * a busy p2p port, an HTTP port in use, an unwritable data dir (the binary
 * unpacks its native addon there first) and an admin command run as another
 * user (a real other uid, through setpriv). Each is one line on stderr that
 * names the setting or the fix; no library advice, no stack trace.
 */
import { execFileSync, spawn } from 'node:child_process'
import { chmodSync, copyFileSync, linkSync, mkdirSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BINARY, runPind, startPind, tempDir } from '../helpers/pind.js'

/** a uid that owns nothing here: "another user" */
const OTHER = 64124
let busy: Server
let busyPort: number
/** the binary where another user can run it (the checkout may sit in a folder closed to others) */
let bin: string

beforeAll(async () => {
  const dir = tempDir('pind-bin-')
  chmodSync(dir, 0o755)
  bin = join(dir, 'pind')
  try { linkSync(BINARY, bin) } catch { copyFileSync(BINARY, bin) }
  busy = createServer()
  await new Promise<void>(resolve => busy.listen(0, '127.0.0.1', resolve))
  busyPort = (busy.address() as { port: number }).port
})
afterAll(async () => { await new Promise(resolve => busy.close(resolve)) })

/** the binary as `uid`, with a HOME it cannot write (as a service user has) */
async function asUser (uid: number, args: string[]): Promise<{ code: number | null, out: string, err: string }> {
  const p = spawn('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', bin, ...args], { env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  p.stdout.on('data', (b: Buffer) => { out += b.toString() })
  p.stderr.on('data', (b: Buffer) => { err += b.toString() })
  const code = await new Promise<number | null>(resolve => p.on('exit', resolve))
  return { code, out, err }
}

/** one line, no stack trace, no library advice */
function oneLine (err: string): string {
  const lines = err.trim().split('\n')
  expect(lines, err).toHaveLength(1)
  expect(err).not.toMatch(/\n\s+at |faultTolerance|EACCES: permission denied|could not lock data dir/)
  return lines[0] as string
}

describe('start-up and admin errors name the setting or the fix', () => {
  it('a busy p2p port names --p2p-listen', async () => {
    const r = await runPind(['serve', '--data-dir', tempDir(), '--port', '0', '--p2p-listen', `/ip4/127.0.0.1/tcp/${busyPort}`], { binary: BINARY })
    expect(r.code).toBe(1)
    expect(oneLine(r.err)).toBe(`pind: the libp2p listen address /ip4/127.0.0.1/tcp/${busyPort} is in use by another process: stop it, or choose another address with --p2p-listen (PIND_P2P_LISTEN)`)
  })

  it('an HTTP port in use names --port', async () => {
    const r = await runPind(['serve', '--data-dir', tempDir(), '--port', String(busyPort), '--p2p-listen', '/ip4/127.0.0.1/tcp/0'], { binary: BINARY })
    expect(r.code).toBe(1)
    expect(oneLine(r.err)).toBe(`pind: the HTTP address 127.0.0.1:${busyPort} is in use by another process: stop it, or choose another address with --port (PIND_PORT) / --host (PIND_HOST)`)
  })

  it('a data dir the user cannot create says how to create it', async () => {
    const parent = tempDir()
    chmodSync(parent, 0o755) // reachable, not writable, by the other user
    const dataDir = join(parent, 'data')
    const r = await asUser(OTHER, ['serve', '--data-dir', dataDir, '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0'])
    expect(r.code).toBe(1)
    expect(oneLine(r.err)).toBe(`pind: cannot create data dir ${dataDir} (EACCES): ${parent} is not writable by uid ${OTHER}; create it for the service user (install -d -m 0700 -o <user> ${dataDir}) or choose another --data-dir`)
  })

  it('serve and admin commands run as another user than the data dir\'s owner say whom to run as', async () => {
    const parent = tempDir()
    chmodSync(parent, 0o755)
    const dataDir = join(parent, 'data')
    mkdirSync(dataDir, { mode: 0o700 })
    const owner = execFileSync('id', ['-un']).toString().trim()
    for (const cmd of [['serve', '--port', '0'], ['gc'], ['keys', 'list'], ['pins', 'ls'], ['status']]) {
      const r = await asUser(OTHER, [...cmd, '--data-dir', dataDir])
      expect(r.code, cmd.join(' ')).toBe(1)
      const sub = cmd[0] === 'keys' || cmd[0] === 'pins' ? `${cmd[0]} ${cmd[1] as string}` : cmd[0] as string
      expect(oneLine(r.err)).toBe(`pind: data dir ${dataDir} belongs to ${owner}, not to uid ${OTHER}: run as the data dir's owner: sudo -u ${owner} pind ${sub} --data-dir ${dataDir}`)
    }
  })

  it('the same admin commands work for the owner, through a running serve', async () => {
    const pind = await startPind()
    try {
      for (const cmd of [['keys', 'list'], ['pins', 'ls'], ['status']]) {
        const r = await runPind([...cmd, '--data-dir', pind.dataDir], { binary: BINARY })
        expect(r.code, `${cmd.join(' ')}: ${r.err}`).toBe(0)
      }
    } finally {
      await pind.stop()
    }
  })
})
