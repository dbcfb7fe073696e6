/**
 * The dev setup (`npm start`, scripts/dev-start.mjs) as the tests that start
 * it run it: on a temp data dir, its output collected, its exit awaited, and
 * every process it started SIGKILLed after the file if it is still alive
 * (register `killLeftovers` with afterAll).
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './pind.js'
import { waitFor } from './ports.js'

export interface DevStart {
  out: () => string
  exited: Promise<number | null>
  kill: (sig: NodeJS.Signals) => void
}

const leftovers: number[] = []

/** these processes are killed by killLeftovers if still alive */
export function killLater (...pids: number[]): void {
  leftovers.push(...pids)
}

export function killLeftovers (): void {
  for (const pid of leftovers.splice(0)) { try { process.kill(pid, 'SIGKILL') } catch {} }
}

export function alive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch { return false }
}

/** runs `command` (npm start, or the dev-start script itself) from the repository root on `dataDir` */
export function startDev (command: string, args: string[], dataDir: string): DevStart {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, PIND_DATA_DIR: dataDir, PIND_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  killLater(child.pid as number)
  let out = ''
  child.stdout.on('data', (b: Buffer) => { out += b.toString() })
  child.stderr.on('data', (b: Buffer) => { out += b.toString() })
  const exited = new Promise<number | null>(resolve => child.on('exit', code => resolve(code)))
  return { out: () => out, exited, kill: (sig) => child.kill(sig) }
}

/** the URL dev-start prints once serve answers, and the pids of serve and anvil (both killed later) */
export async function served (dev: DevStart, dataDir: string, what: string, timeoutMs: number): Promise<{ url: string, servePid: number, chain: any }> {
  const url = await waitFor(() => /^\s+http:\s+(\S+)$/m.exec(dev.out())?.[1], what, timeoutMs)
  const servePid = (JSON.parse(readFileSync(join(dataDir, 'serve.lock'), 'utf8')) as { pid: number }).pid
  const chain = JSON.parse(readFileSync(join(dataDir, 'dev-chain.json'), 'utf8'))
  killLater(servePid, chain.pid as number)
  return { url, servePid, chain }
}
