/**
 * `npm start` stopped with SIGTERM (a process manager, `timeout`, a CI job's
 * end), not only Ctrl-C: anvil and serve stop with it and free their ports
 * (issue 15, item 7).
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { MALLOC_TUNABLES } from '../../src/malloc.js'
import { ROOT, tempDir } from '../helpers/pind.js'
import { waitFor } from '../helpers/ports.js'

const leftovers: number[] = []
afterAll(() => { for (const pid of leftovers) { try { process.kill(pid, 'SIGKILL') } catch {} } })

const alive = (pid: number): boolean => {
  try { process.kill(pid, 0); return true } catch { return false }
}

describe('npm start', () => {
  it('stops anvil and serve when npm gets SIGTERM', async () => {
    const dataDir = tempDir()
    const npm = spawn('npm', ['start', '--', '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0'], {
      cwd: ROOT,
      env: { ...process.env, PIND_DATA_DIR: dataDir, PIND_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    leftovers.push(npm.pid as number)
    let out = ''
    npm.stdout.on('data', (b: Buffer) => { out += b.toString() })
    npm.stderr.on('data', (b: Buffer) => { out += b.toString() })
    const exited = new Promise<number | null>(resolve => npm.on('exit', code => resolve(code)))
    const url = await waitFor(() => /^\s+http:\s+(\S+)$/m.exec(out)?.[1], `npm start to serve:\n${out}`, 90_000)
    const servePid = (JSON.parse(readFileSync(join(dataDir, 'serve.lock'), 'utf8')) as { pid: number }).pid
    const anvilPid = (JSON.parse(readFileSync(join(dataDir, 'dev-chain.json'), 'utf8')) as { pid: number }).pid
    leftovers.push(servePid, anvilPid)
    expect((await fetch(`${url}/health`)).status).toBe(200)
    expect(alive(servePid) && alive(anvilPid)).toBe(true)
    // serve started itself again with glibc's malloc tunables (src/malloc.ts), keeping its pid
    expect(readFileSync(`/proc/${servePid}/environ`, 'utf8').split('\0')).toContain(`GLIBC_TUNABLES=${MALLOC_TUNABLES}`)

    npm.kill('SIGTERM')
    await exited
    await waitFor(() => !alive(servePid) && !alive(anvilPid) ? true : undefined, `serve (pid ${servePid}) and anvil (pid ${anvilPid}) to stop`, 20_000)
    await expect(fetch(`${url}/health`)).rejects.toThrow()
  })
})
