/**
 * Runs the real `pind serve` as a child process — the esbuild bundle on the
 * pinned Node, or the packaged binary — waits until it answers /health, and
 * kills it by pid in teardown.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { waitFor } from './ports.js'
import { unitRuntimeEnv } from '../../scripts/runtime-env.mjs'

export const ROOT = resolve(import.meta.dirname, '../..')
export const BUNDLE = join(ROOT, 'dist/pind.cjs')
export const BINARY = join(ROOT, 'dist/pind')

export interface PindProcess {
  url: string
  peerId: string
  multiaddrs: string[]
  dataDir: string
  proc: ChildProcess
  pid: number
  stdout(): string
  stderr(): string
  /** SIGTERM (or the given signal) and wait for the exit code */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

export interface StartOptions {
  dataDir?: string
  args?: string[]
  env?: Record<string, string | undefined>
  binary?: string
  cwd?: string
}

const live = new Set<ChildProcess>()
process.on('exit', () => { for (const p of live) p.kill('SIGKILL') })

const dirs: string[] = []

/** A fresh temp dir, removed after the test file (test/helpers/setup.ts). */
export function tempDir (prefix = 'pind-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  dirs.push(dir)
  return dir
}

/**
 * After a test file: kills whatever it left running (by pid, and waits for
 * the exit) and removes every temp dir it made. Run by test/helpers/setup.ts.
 */
export async function cleanUpAfterFile (): Promise<void> {
  await Promise.all([...live].map(async p => {
    const exited = new Promise(resolve => p.once('exit', resolve))
    p.kill('SIGKILL')
    await exited
  }))
  for (const dir of dirs.splice(0)) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
    } catch (err) {
      // housekeeping: a dir that will not go is reported, never a test failure
      console.warn(`could not remove ${dir}: ${(err as Error).message}`)
    }
  }
}

/**
 * The packaged binary copied alone into a fresh directory, with a HOME it
 * cannot write (as a service user has): what an operator runs.
 */
export function isolatedBinary (prefix = 'pind-bin-'): { dir: string, bin: string, home: string } {
  if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run npm run build first`)
  const dir = tempDir(prefix)
  const bin = join(dir, 'pind')
  copyFileSync(BINARY, bin)
  chmodSync(bin, 0o755)
  const home = join(dir, 'home')
  mkdirSync(home)
  chmodSync(home, 0o555)
  return { dir, bin, home }
}

/** scripts/pind.service's runtime environment (GLIBC_TUNABLES, NODE_OPTIONS, PIND_RUNTIME_*) */
const PRODUCTION_RUNTIME = unitRuntimeEnv()

export function spawnPind (args: string[], opts: { env?: Record<string, string | undefined>, binary?: string, cwd?: string } = {}): ChildProcess {
  const cmd = opts.binary ?? process.execPath
  const argv = opts.binary != null ? args : [BUNDLE, ...args]
  // tests run their origins on loopback: they allow request-supplied origins to name any address
  // (a test of the default, public addresses only, sets PIND_ORIGIN_ADDRESSES=public); pind runs with the
  // production runtime environment of scripts/pind.service (docs/runtime.md), as a service would
  const proc = spawn(cmd, argv, { cwd: opts.cwd ?? ROOT, env: { ...process.env, ...PRODUCTION_RUNTIME, PIND_LOG_LEVEL: 'warn', PIND_ORIGIN_ADDRESSES: 'any', ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] })
  live.add(proc)
  proc.on('exit', () => live.delete(proc))
  return proc
}

/** how long a one-shot command may run, and a stopped serve may take to exit, before a test fails on it */
const EXIT_WAIT_MS = 60_000

/**
 * The exit code once `proc` exits; past `ms`, kills it (SIGKILL) and fails
 * with what it was and what it printed last, instead of hanging the test
 * until vitest's own timeout says nothing about which process it was.
 */
async function exitWithin (proc: ChildProcess, exit: Promise<number | null>, ms: number, what: string, output: () => string): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>(resolve => { timer = setTimeout(() => resolve('late'), ms) })
  const outcome = await Promise.race([exit, late])
  clearTimeout(timer)
  if (outcome !== 'late') return outcome
  proc.kill('SIGKILL')
  await exit
  throw new Error(`${what} had not exited after ${ms / 1000} s (killed); its last output:\n${output().slice(-4000)}`)
}

/** Runs a one-shot pind command (e.g. `keys mint`) to its exit. */
export async function runPind (args: string[], opts: { env?: Record<string, string | undefined>, binary?: string, timeoutMs?: number } = {}): Promise<{ code: number | null, out: string, err: string }> {
  const p = spawnPind(args, opts)
  let out = ''
  let err = ''
  p.stdout?.on('data', (b: Buffer) => { out += b.toString() })
  p.stderr?.on('data', (b: Buffer) => { err += b.toString() })
  const exit = new Promise<number | null>(resolve => p.on('exit', resolve))
  const code = await exitWithin(p, exit, opts.timeoutMs ?? EXIT_WAIT_MS, `pind ${args.join(' ')}`, () => out + err)
  return { code, out, err }
}

export async function startPind (opts: StartOptions = {}): Promise<PindProcess> {
  const dataDir = opts.dataDir ?? tempDir()
  const args = ['serve', '--data-dir', dataDir, '--port', '0', '--p2p-listen', '/ip4/127.0.0.1/tcp/0', ...(opts.args ?? [])]
  const proc = spawnPind(args, opts)
  let out = ''
  let err = ''
  proc.stdout?.on('data', (b: Buffer) => { out += b.toString() })
  proc.stderr?.on('data', (b: Buffer) => { err += b.toString() })
  let exited: number | null | undefined
  const exit = new Promise<number | null>(resolve => proc.on('exit', (code) => { exited = code; resolve(code) }))
  const url = await waitFor(() => {
    if (exited !== undefined) throw new Error(`pind exited (${exited}) before it was ready:\n${err}`)
    return /^\s+http:\s+(\S+)$/m.exec(out)?.[1]
  }, 'pind start-up summary')
  await waitFor(async () => {
    try {
      const r = await fetch(`${url}/health`)
      return r.status === 200 ? true : undefined
    } catch { return undefined }
  }, 'pind /health')
  const peerId = /peer id:\s+(\S+)/.exec(out)?.[1] ?? ''
  const multiaddrs = [...out.matchAll(/(\/ip4\/\S+\/p2p\/\S+)/g)].map(m => m[1] as string)
  return {
    url,
    peerId,
    multiaddrs,
    dataDir,
    proc,
    pid: proc.pid as number,
    stdout: () => out,
    stderr: () => err,
    stop: async (signal = 'SIGTERM') => {
      if (exited !== undefined) return exited
      proc.kill(signal)
      return await exitWithin(proc, exit, EXIT_WAIT_MS, `pind ${args.join(' ')} (sent ${signal})`, () => out + err)
    }
  }
}
