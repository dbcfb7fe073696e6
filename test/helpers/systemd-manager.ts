/**
 * A real systemd service manager for a test: systemd's user instance
 * (`systemd --user`, as root), with the test's unit files, driven with
 * `systemctl --user`. What systemd-sandbox.ts cannot show, because it only
 * applies a unit's restrictions, is how the manager itself treats a start:
 * TimeoutStartSec=, READY=1, EXTEND_TIMEOUT_USEC=, STATUS=.
 *
 * This machine did not boot with systemd (it is not PID 1), so:
 *   - the manager runs in a private mount namespace where /run/systemd/system
 *     exists (systemd refuses to start otherwise);
 *   - it starts in a cgroup of its own in every cgroup hierarchy: a manager
 *     moves everything in its cgroup and below into init.scope, and in the
 *     root cgroup that would be every process on the machine. Its units run
 *     below that cgroup, where close() finds whatever is left of them.
 * Its runtime directory (the notify socket, systemctl's private socket) and
 * its unit files are in a temp dir. Needs root, systemd (not running) and
 * util-linux's unshare.
 */
import { execFile, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync, chmodSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from './pind.js'
import { waitFor } from './ports.js'

const SYSTEMD = '/usr/lib/systemd/systemd'

export interface ServiceManager {
  /** `systemctl --user <args>`: its exit code and what it printed */
  systemctl(...args: string[]): Promise<{ code: number, out: string }>
  /** `systemctl --user show`: the unit's properties */
  show(unit: string, props: string[]): Promise<Record<string, string>>
  /** stops every unit and the manager, kills by pid whatever is left in its cgroup, removes the cgroups */
  close(): Promise<void>
}

/** whether this machine can run one (root, systemd installed, cgroups mounted) */
export function serviceManagerAvailable (): boolean {
  return process.getuid?.() === 0 && existsSync(SYSTEMD) && cgroupMounts().length > 0
}

function cgroupMounts (): string[] {
  const out: string[] = []
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    // … mount point (5th field) … " - " fstype
    const [left, right] = line.split(' - ')
    const fstype = right?.split(' ')[0]
    if (fstype === 'cgroup' || fstype === 'cgroup2') out.push((left?.split(' ')[4] as string).replace(/\\040/g, ' '))
  }
  return out
}

/** Starts a manager with `units` (file name → text) installed as its user units. */
export async function startServiceManager (units: Record<string, string>): Promise<ServiceManager> {
  const T = tempDir('pind-systemd-')
  chmodSync(T, 0o755)
  const runtime = join(T, 'run')
  mkdirSync(runtime, { mode: 0o700 })
  const unitDir = join(T, 'config', 'systemd', 'user')
  mkdirSync(unitDir, { recursive: true })
  for (const [name, text] of Object.entries(units)) writeFileSync(join(unitDir, name), text)
  mkdirSync(join(T, 'run-systemd', 'system'), { recursive: true })

  const group = `pind-test-systemd-${process.pid}-${Date.now()}`
  // (cpuset: a new cgroup takes no process until its cpus and mems are set; systemd does not use it)
  const hierarchies = cgroupMounts().filter(h => !h.endsWith('/cpuset'))
  const q = (s: string): string => `'${s.replace(/'/g, "'\\''")}'`
  const script = [
    'set -eu',
    'mount --make-rprivate /',
    `if [ -d /run/systemd ]; then mount --bind ${q(join(T, 'run-systemd'))} /run/systemd; else mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system; fi`,
    ...hierarchies.map(h => `mkdir ${q(join(h, group))} && { echo $$ > ${q(join(h, group, 'cgroup.procs'))} || rmdir ${q(join(h, group))}; }`),
    `exec ${SYSTEMD} --user`
  ].join('\n')
  writeFileSync(join(T, 'enter.sh'), script + '\n')
  const env = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', HOME: T, XDG_RUNTIME_DIR: runtime, XDG_CONFIG_HOME: join(T, 'config'), SYSTEMD_LOG_LEVEL: 'warning' }
  const proc = spawn('unshare', ['--mount', '--propagation', 'private', '--', 'sh', join(T, 'enter.sh')], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let log = ''
  proc.stdout?.on('data', (b: Buffer) => { log += b.toString() })
  proc.stderr?.on('data', (b: Buffer) => { log += b.toString() })
  let exited: number | string | null | undefined
  const exit = new Promise<void>(resolve => proc.on('exit', (code, signal) => { exited = code ?? signal; resolve() }))

  const systemctl = async (...args: string[]): Promise<{ code: number, out: string }> => await new Promise(resolve => {
    execFile('systemctl', ['--user', '--no-pager', ...args], { env }, (err, stdout, stderr) => {
      resolve({ code: err == null ? 0 : typeof err.code === 'number' ? err.code : 1, out: stdout + stderr })
    })
  })

  /** the pids still in the manager's cgroup (and below), in any hierarchy */
  const leftovers = (): number[] => {
    const pids = new Set<number>()
    const walk = (dir: string): void => {
      if (!existsSync(dir)) return
      try {
        for (const p of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (p !== '') pids.add(Number(p))
      } catch {}
      for (const e of readdirSync(dir)) if (statSync(join(dir, e)).isDirectory()) walk(join(dir, e))
    }
    for (const h of hierarchies) walk(join(h, group))
    return [...pids]
  }
  const removeGroups = (): void => {
    const rm = (dir: string): void => {
      if (!existsSync(dir)) return
      for (const e of readdirSync(dir)) if (statSync(join(dir, e)).isDirectory()) rm(join(dir, e))
      try { rmdirSync(dir) } catch {}
    }
    for (const h of hierarchies) rm(join(h, group))
  }

  const close = async (): Promise<void> => {
    if (exited === undefined) {
      const { out } = await systemctl('list-units', '--type=service', '--state=active,activating,deactivating', '--plain', '--no-legend')
      for (const line of out.split('\n')) {
        const unit = line.split(/\s+/)[0]
        if (unit != null && unit !== '' && Object.hasOwn(units, unit)) await systemctl('stop', unit)
      }
      proc.kill('SIGTERM')
      const timer = setTimeout(() => { proc.kill('SIGKILL') }, 10_000)
      await exit
      clearTimeout(timer)
    }
    for (const pid of leftovers()) {
      try { process.kill(pid, 'SIGKILL') } catch {}
    }
    await waitFor(() => leftovers().length === 0 ? true : undefined, 'the manager\'s cgroup to empty', 10_000).catch(() => {})
    removeGroups()
  }

  try {
    await waitFor(async () => {
      if (exited !== undefined) throw new Error(`systemd --user exited (${String(exited)}):\n${log}`)
      return existsSync(join(runtime, 'systemd', 'private')) && (await systemctl('is-system-running')).out.trim() !== '' ? true : undefined
    }, 'systemd --user to answer', 30_000)
  } catch (err) {
    await close()
    throw err
  }
  return {
    systemctl,
    show: async (unit, props) => {
      const { out } = await systemctl('show', unit, ...props.map(p => `--property=${p}`))
      const values: Record<string, string> = {}
      for (const line of out.split('\n')) {
        const at = line.indexOf('=')
        if (at > 0) values[line.slice(0, at)] = line.slice(at + 1)
      }
      return values
    },
    close
  }
}
