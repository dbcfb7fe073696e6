/**
 * Runs a command under the restrictions a systemd unit file asks for, without
 * systemd (there is none as PID 1 here): the harness reads the unit
 * (scripts/pind.service), refuses any directive it does not know how to
 * apply, and applies the rest the way systemd does —
 *   - a private mount namespace (PrivateMounts) where every mount is read-only
 *     (ProtectSystem=strict) except ReadWritePaths / StateDirectory, /home,
 *     /root and /run/user empty and closed (ProtectHome), fresh /tmp and
 *     /var/tmp (PrivateTmp), a minimal /dev (PrivateDevices), /sys and
 *     /proc/sys read-only (ProtectKernelTunables, ProtectControlGroups), the
 *     kernel's modules and logs closed (ProtectKernelModules, ProtectKernelLogs),
 *     a /proc that shows only the service's own processes (ProtectProc=invisible,
 *     ProcSubset=pid), a UTS namespace (ProtectHostname);
 *   - the unit's User (mapped to a test uid), no capabilities
 *     (CapabilityBoundingSet=), no_new_privs, UMask, LimitNOFILE, Environment=;
 *   - one seccomp filter built from the unit: SystemCallFilter= (the groups
 *     expanded by `systemd-analyze syscall-filter`, i.e. systemd's own lists)
 *     with SystemCallErrorNumber=, SystemCallArchitectures=native,
 *     RestrictAddressFamilies= (socket() of another family → EAFNOSUPPORT),
 *     RestrictNamespaces=, LockPersonality=, RestrictSUIDSGID= (chmod),
 *     RestrictRealtime=, ProtectClock/ProtectHostname/ProtectKernel* system calls;
 *   - Type=notify: a real NOTIFY_SOCKET (an abstract Unix datagram socket and a
 *     listener that answers sd_notify's barrier).
 * The unit's own paths are used verbatim: /etc/pind, /var/lib/pind and
 * /usr/local/bin are overlaid, inside the namespace only, with the test's files.
 * Needs root (to build the namespace), gcc, util-linux (unshare, setpriv) and
 * systemd-analyze.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { chmodSync, chownSync, copyFileSync, linkSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { tempDir } from './pind.js'
import { environmentAssignments } from '../../scripts/runtime-env.mjs'

export type Directives = Map<string, Array<[string, string]>>

/** Sections → [key, value] in order (a unit may repeat a key). Handles comments and backslash continuations. */
export function parseUnit (text: string): Directives {
  const out: Directives = new Map()
  let section = ''
  const lines = text.replace(/\\\n/g, ' ').split('\n')
  for (const raw of lines) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const s = /^\[(.+)\]$/.exec(line)
    if (s != null) { section = s[1] as string; out.set(section, out.get(section) ?? []); continue }
    const at = line.indexOf('=')
    if (at < 0) throw new Error(`unit line without "=": ${line}`)
    out.get(section)?.push([line.slice(0, at).trim(), line.slice(at + 1).trim()])
  }
  return out
}

/** Directives with no effect on the running process, or whose effect the harness applies elsewhere (stop, readiness). */
const LIFECYCLE = new Set(['Description', 'Documentation', 'After', 'Wants', 'Requires', 'WantedBy', 'KillSignal', 'TimeoutStopSec', 'TimeoutStartSec', 'Restart', 'RestartSec', 'RemoveIPC'])
/** Directives the harness applies (see the file comment); any other makes it refuse. */
const APPLIED = new Set([
  'Type', 'NotifyAccess', 'User', 'Group', 'ExecStart', 'Environment', 'StateDirectory', 'StateDirectoryMode', 'UMask', 'LimitNOFILE',
  'NoNewPrivileges', 'CapabilityBoundingSet', 'AmbientCapabilities', 'ProtectSystem', 'ProtectHome', 'ReadWritePaths', 'PrivateTmp',
  'PrivateDevices', 'PrivateMounts', 'ProtectKernelTunables', 'ProtectKernelModules', 'ProtectKernelLogs', 'ProtectControlGroups',
  'ProtectClock', 'ProtectHostname', 'ProtectProc', 'ProcSubset', 'RestrictSUIDSGID', 'RestrictNamespaces', 'RestrictRealtime',
  'LockPersonality', 'SystemCallArchitectures', 'SystemCallFilter', 'SystemCallErrorNumber', 'RestrictAddressFamilies'
])

export interface Service {
  values: Map<string, string[]>
  one (key: string): string | undefined
  yes (key: string): boolean
}

export function serviceOf (unit: Directives): Service {
  const values = new Map<string, string[]>()
  for (const section of unit.keys()) {
    for (const [k, v] of unit.get(section) ?? []) {
      if (!LIFECYCLE.has(k) && !APPLIED.has(k)) throw new Error(`the sandbox harness does not know ${k}= (in [${section}]): teach test/helpers/systemd-sandbox.ts how systemd applies it`)
      // an empty assignment resets a list (systemd's rule)
      values.set(k, v === '' ? [''] : [...(values.get(k)?.filter(x => x !== '') ?? []), v])
    }
  }
  const one = (key: string): string | undefined => values.get(key)?.at(-1)
  return { values, one, yes: (key) => ['yes', 'true', '1', 'on'].includes(one(key) ?? '') }
}

// ---- seccomp -------------------------------------------------------------------------------

const SECCOMP_RET_ALLOW = 0x7fff0000
const SECCOMP_RET_ERRNO = 0x00050000
const SECCOMP_RET_KILL_PROCESS = 0x80000000
const AUDIT_ARCH_X86_64 = 0xc000003e
const X32_SYSCALL_BIT = 0x40000000
const LD_ABS_W = 0x20
const JEQ = 0x15
const JGE = 0x35
const JSET = 0x45
const RET = 0x06
const ERRNO: Record<string, number> = { EPERM: 1, ENOSYS: 38, EAFNOSUPPORT: 97, EACCES: 13 }
const AF: Record<string, number> = { AF_UNIX: 1, AF_LOCAL: 1, AF_INET: 2, AF_INET6: 10, AF_NETLINK: 16, AF_PACKET: 17 }
/** CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME */
const CLONE_NEW_ANY = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

type Insn = [code: number, jt: number, jf: number, k: number]

/** x86_64 system call numbers, from the kernel headers (linux-libc-dev). */
function syscallNumbers (): Map<string, number> {
  const header = '/usr/include/x86_64-linux-gnu/asm/unistd_64.h'
  const out = new Map<string, number>()
  for (const m of readFileSync(header, 'utf8').matchAll(/^#define __NR_(\w+) (\d+)$/gm)) out.set(m[1] as string, Number(m[2]))
  return out
}

/** systemd's own system call groups (`systemd-analyze syscall-filter`), expanded. */
function syscallGroups (): Map<string, string[]> {
  const text = execFileSync('systemd-analyze', ['syscall-filter'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  const groups = new Map<string, string[]>()
  let current: string[] | undefined
  for (const line of text.split('\n')) {
    const g = /^(@[\w-]+)$/.exec(line)
    if (g != null) { current = []; groups.set(g[1] as string, current); continue }
    const item = /^\s+([@\w-]+)$/.exec(line)
    if (item != null && current != null) current.push(item[1] as string)
    else if (!line.startsWith(' ')) current = undefined
  }
  return groups
}

function expand (items: string[], groups: Map<string, string[]>, seen = new Set<string>()): Set<string> {
  const out = new Set<string>()
  for (const i of items) {
    if (!i.startsWith('@')) { out.add(i); continue }
    if (seen.has(i)) continue
    seen.add(i)
    const members = groups.get(i)
    if (members == null) throw new Error(`unknown system call group ${i}`)
    for (const m of expand(members, groups, seen)) out.add(m)
  }
  return out
}

/** The unit's system call restrictions as one classic-BPF seccomp program (struct sock_filter[], little-endian). */
export function seccompProgram (svc: Service): { program: Buffer, allowed: Set<string>, families: string[] } {
  const nr = syscallNumbers()
  const groups = syscallGroups()
  const filters = svc.values.get('SystemCallFilter') ?? []
  if (filters.length === 0 || filters[0]?.startsWith('~') === true) throw new Error('the harness applies an allow-list SystemCallFilter= (first line without ~) only')
  const allow = new Set<string>()
  const deny = new Set<string>()
  for (const line of filters) {
    const negative = line.startsWith('~')
    for (const s of expand(line.replace(/^~/, '').split(/\s+/).filter(x => x !== ''), groups)) (negative ? deny : allow).add(s)
  }
  // systemd adds @default to every allow list
  for (const s of expand(['@default'], groups)) allow.add(s)
  for (const s of deny) allow.delete(s)
  const errno = svc.one('SystemCallErrorNumber')
  const otherwise = errno != null ? SECCOMP_RET_ERRNO | (ERRNO[errno] ?? Number(errno)) : SECCOMP_RET_KILL_PROCESS
  if (errno != null && ERRNO[errno] == null && !/^\d+$/.test(errno)) throw new Error(`SystemCallErrorNumber=${errno}: add it to ERRNO`)

  const prog: Insn[] = []
  const ret = (k: number): void => { prog.push([RET, 0, 0, k]) }
  const ldNr = (): void => { prog.push([LD_ABS_W, 0, 0, 0]) }
  /** `body` runs for system call `name` and either returns or falls through to what follows */
  const forCall = (name: string, body: Insn[]): void => {
    const n = nr.get(name)
    if (n == null) return
    ldNr()
    prog.push([JEQ, 0, body.length, n])
    prog.push(...body)
  }
  const errnoOf = (e: string): number => SECCOMP_RET_ERRNO | (ERRNO[e] as number)

  // SystemCallArchitectures=native: other ABIs (i386, x32) are killed, as systemd does
  if (svc.one('SystemCallArchitectures') != null && svc.one('SystemCallArchitectures') !== 'native') throw new Error('the harness applies SystemCallArchitectures=native only')
  prog.push([LD_ABS_W, 0, 0, 4])
  prog.push([JEQ, 1, 0, AUDIT_ARCH_X86_64])
  ret(SECCOMP_RET_KILL_PROCESS)
  if (svc.one('SystemCallArchitectures') === 'native') {
    ldNr()
    prog.push([JGE, 0, 1, X32_SYSCALL_BIT])
    ret(SECCOMP_RET_KILL_PROCESS)
  }

  // RestrictAddressFamilies=: socket() of any other family fails with EAFNOSUPPORT
  const families = (svc.values.get('RestrictAddressFamilies') ?? []).flatMap(l => l.split(/\s+/)).filter(x => x !== '')
  if (families.length > 0) {
    if (families.some(f => f.startsWith('~'))) throw new Error('the harness applies an allow-list RestrictAddressFamilies= only')
    const codes = families.map(f => { const c = AF[f]; if (c == null) throw new Error(`add ${f} to AF`); return c })
    const body: Insn[] = [[LD_ABS_W, 0, 0, 16]]
    codes.forEach((c, i) => body.push([JEQ, codes.length - i, 0, c]))
    body.push([RET, 0, 0, errnoOf('EAFNOSUPPORT')])
    forCall('socket', body)
  }
  // RestrictNamespaces=yes: no new namespaces (clone3 answers ENOSYS so that libc falls back to clone, as under systemd)
  if (svc.yes('RestrictNamespaces')) {
    for (const name of ['unshare', 'setns']) forCall(name, [[RET, 0, 0, errnoOf('EPERM')]])
    forCall('clone', [[LD_ABS_W, 0, 0, 16], [JSET, 0, 1, CLONE_NEW_ANY], [RET, 0, 0, errnoOf('EPERM')]])
    forCall('clone3', [[RET, 0, 0, errnoOf('ENOSYS')]])
  }
  // LockPersonality=yes: personality() may only read it or keep PER_LINUX
  if (svc.yes('LockPersonality')) forCall('personality', [[LD_ABS_W, 0, 0, 16], [JEQ, 2, 0, 0], [JEQ, 1, 0, 0xffffffff], [RET, 0, 0, errnoOf('EPERM')]])
  // RestrictSUIDSGID=yes: no set-user/group-ID bits by chmod
  if (svc.yes('RestrictSUIDSGID')) {
    for (const [name, arg] of [['chmod', 1], ['fchmod', 1], ['fchmodat', 2]] as const) forCall(name, [[LD_ABS_W, 0, 0, 16 + 8 * arg], [JSET, 0, 1, 0o6000], [RET, 0, 0, errnoOf('EPERM')]])
  }
  // RestrictRealtime=yes: no SCHED_FIFO, SCHED_RR, SCHED_DEADLINE
  if (svc.yes('RestrictRealtime')) forCall('sched_setscheduler', [[LD_ABS_W, 0, 0, 24], [JEQ, 3, 0, 1], [JEQ, 2, 0, 2], [JEQ, 1, 0, 6], [JEQ, 1, 0, 0xffffffff], [RET, 0, 0, errnoOf('EPERM')]])
  // what the Protect* settings deny (systemd adds these filters whatever SystemCallFilter= says)
  const denied = new Set<string>()
  if (svc.yes('ProtectClock')) for (const s of expand(['@clock'], groups)) denied.add(s)
  if (svc.yes('ProtectKernelModules')) for (const s of expand(['@module'], groups)) denied.add(s)
  if (svc.yes('ProtectKernelLogs')) denied.add('syslog')
  if (svc.yes('ProtectHostname')) { denied.add('sethostname'); denied.add('setdomainname') }
  for (const s of denied) forCall(s, [[RET, 0, 0, errnoOf('EPERM')]])

  // SystemCallFilter=: the allow list, then SystemCallErrorNumber= (or kill) for the rest
  ldNr()
  const numbers = [...new Set([...allow].filter(s => !denied.has(s)).map(s => nr.get(s)).filter((n): n is number => n != null))].sort((a, b) => a - b)
  for (const n of numbers) {
    prog.push([JEQ, 0, 1, n])
    ret(SECCOMP_RET_ALLOW)
  }
  ret(otherwise)
  if (prog.length > 4096) throw new Error(`seccomp program too long (${prog.length})`)
  const buf = Buffer.alloc(prog.length * 8)
  prog.forEach(([code, jt, jf, k], i) => {
    buf.writeUInt16LE(code, i * 8)
    buf.writeUInt8(jt, i * 8 + 2)
    buf.writeUInt8(jf, i * 8 + 3)
    buf.writeUInt32LE(k >>> 0, i * 8 + 4)
  })
  return { program: buf, allowed: allow, families }
}

// ---- running -------------------------------------------------------------------------------

const HELPER_SOURCE = resolve(import.meta.dirname, 'sandbox/sandbox-exec.c')
let helperBinary: string | undefined

/** Compiles test/helpers/sandbox/sandbox-exec.c once per test file. */
export function sandboxHelper (): string {
  if (helperBinary != null) return helperBinary
  const out = join(tempDir('pind-sandbox-helper-'), 'sandbox-exec')
  execFileSync('gcc', ['-O2', '-Wall', '-o', out, HELPER_SOURCE], { stdio: 'pipe' })
  helperBinary = out
  return out
}

export interface UnitRun {
  proc: ChildProcess
  pid: number
  /** lines the service wrote */
  stdout(): string
  stderr(): string
  /** what the service told NOTIFY_SOCKET, one message per entry */
  notifications(): string[]
  /** KillSignal=, then the exit code (or signal name), within TimeoutStopSec= */
  stop(): Promise<number | string | null>
}

export interface UnitRunOptions {
  /** the unit file's text */
  unit: string
  /** files the unit's paths show inside the sandbox: path → content (string or a file to copy), with owner and mode */
  files: Array<{ path: string, content?: string, copyFrom?: string, mode: number, owned?: boolean }>
  /** the unit's User= and Group= run as this uid/gid */
  uid: number
  gid: number
  /** environment on top of the unit's Environment= (the test's own RPC, ports…) */
  env?: Record<string, string>
  /** run this argv instead of ExecStart= (a probe of the sandbox itself) */
  command?: string[]
}

/** Writes the sandbox for `unit` and starts its ExecStart= (or `command`) inside it. */
export async function runUnit (o: UnitRunOptions): Promise<UnitRun> {
  const svc = serviceOf(parseUnit(o.unit))
  const T = tempDir('pind-unit-')
  chmodSync(T, 0o755)
  const helper = sandboxHelper()
  const { program } = seccompProgram(svc)

  // the unit's paths, overlaid inside the namespace: /etc, /usr/local/bin, /var/lib get the test's files
  const overlays = ['/etc', '/usr/local/bin', '/var/lib']
  const layer = (dir: string): string => join(T, 'layers', dir.replace(/\//g, '_'))
  for (const d of overlays) mkdirSync(layer(d), { recursive: true, mode: 0o755 })
  const under = (p: string): string => {
    const base = overlays.find(d => p === d || p.startsWith(`${d}/`))
    if (base == null) throw new Error(`${p}: the harness overlays only ${overlays.join(', ')}`)
    return join(layer(base), p.slice(base.length))
  }
  // the harness's own files (filter, helper) travel in the /etc overlay: /tmp is covered by PrivateTmp
  const files = [
    ...o.files,
    { path: '/etc/pind-sandbox/filter.bpf', copyFrom: undefined as string | undefined, content: undefined as string | undefined, mode: 0o644 },
    { path: '/etc/pind-sandbox/sandbox-exec', copyFrom: helper, mode: 0o755 }
  ]
  for (const f of files) {
    const at = under(f.path)
    mkdirSync(join(at, '..'), { recursive: true, mode: 0o755 })
    let linked = false
    if (f.path === '/etc/pind-sandbox/filter.bpf') writeFileSync(at, program)
    else if (f.copyFrom != null) {
      // a hard link where it can (the 135 MiB binary is not copied; a symlink could point into the /tmp that PrivateTmp hides)
      try { linkSync(f.copyFrom, at); linked = true } catch { copyFileSync(f.copyFrom, at) }
    } else writeFileSync(at, f.content ?? '')
    if (linked) {
      if ((statSync(at).mode & 0o777) !== f.mode) throw new Error(`${f.copyFrom as string} is linked, not copied: it needs mode ${f.mode.toString(8)} itself`)
      continue
    }
    chmodSync(at, f.mode)
    if ('owned' in f && f.owned === true) chownSync(at, o.uid, o.gid)
  }
  // StateDirectory= (and its mode), owned by the service user; mounted writable at /var/lib/<name>
  const stateDirs = (svc.values.get('StateDirectory') ?? []).flatMap(l => l.split(/\s+/)).filter(x => x !== '')
  const stateMode = Number.parseInt(svc.one('StateDirectoryMode') ?? '0755', 8)
  const writable: Array<[string, string]> = []
  for (const s of stateDirs) {
    const src = join(T, 'state', s)
    mkdirSync(src, { recursive: true })
    chmodSync(src, stateMode)
    chownSync(src, o.uid, o.gid)
    mkdirSync(under(`/var/lib/${s}`), { recursive: true, mode: 0o755 })
    writable.push([src, `/var/lib/${s}`])
  }
  for (const p of (svc.values.get('ReadWritePaths') ?? []).flatMap(l => l.split(/\s+/)).filter(x => x !== '')) {
    if (!writable.some(([, dst]) => dst === p)) throw new Error(`ReadWritePaths=${p}: the harness makes only StateDirectory= paths writable; add a source for it`)
  }

  const notifyName = `pind-notify-${process.pid}-${Date.now()}`
  const type = svc.one('Type') ?? 'simple'
  let notifications: string[] = []
  let listener: ChildProcess | undefined
  if (type === 'notify') {
    if (svc.one('NotifyAccess') !== 'all') throw new Error('pind tells readiness through systemd-notify (a child process): the unit needs NotifyAccess=all')
    listener = spawn(helper, ['--notify-listen', notifyName], { stdio: ['ignore', 'pipe', 'inherit'] })
    let buf = ''
    await new Promise<void>((resolve, reject) => {
      listener?.once('error', reject)
      listener?.stdout?.on('data', (b: Buffer) => {
        buf += b.toString()
        const lines = buf.split('\n')
        buf = lines.pop() as string
        for (const l of lines) { if (l === 'listening') resolve(); else notifications.push(l) }
      })
    })
  } else if (type !== 'simple' && type !== 'exec') {
    throw new Error(`Type=${type}: the harness knows simple, exec and notify`)
  }

  // the environment systemd gives a service: PATH, the user's HOME, Environment=, NOTIFY_SOCKET
  const env: Record<string, string> = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin', HOME: '/var/lib/pind', USER: svc.one('User') ?? 'root', LOGNAME: svc.one('User') ?? 'root' }
  for (const e of svc.values.get('Environment') ?? []) Object.assign(env, environmentAssignments(e))
  if (type === 'notify') env.NOTIFY_SOCKET = `@${notifyName}`
  Object.assign(env, o.env)
  const argv = o.command ?? (svc.one('ExecStart') ?? '').split(/\s+/).filter(x => x !== '')
  if (argv.length === 0) throw new Error('no ExecStart=')

  const q = (s: string): string => `'${s.replace(/'/g, "'\\''")}'`
  const sh: string[] = ['set -eu', 'mount --make-rprivate /']
  if (svc.one('ProtectSystem') != null) {
    if (svc.one('ProtectSystem') !== 'strict') throw new Error('the harness applies ProtectSystem=strict only')
    // every mount read-only, but the API file systems (PrivateDevices, ProtectKernelTunables… handle those)
    sh.push("findmnt -rn -o TARGET | while read -r m; do case \"$m\" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue;; esac; mount -o remount,bind,ro \"$(printf '%b' \"$m\")\" 2>/dev/null || true; done")
  }
  for (const d of overlays) sh.push(`mount -t overlay overlay -o ${q(`lowerdir=${layer(d)}:${d}`)} ${q(d)}`)
  // (a bind mount inherits the read-only flag of the mount it comes from: make it writable again)
  for (const [src, dst] of writable) sh.push(`mount --bind ${q(src)} ${q(dst)} && mount -o remount,bind,rw ${q(dst)}`)
  if (svc.one('ProtectHome') != null) {
    if (!svc.yes('ProtectHome')) throw new Error('the harness applies ProtectHome=yes only')
    for (const d of ['/home', '/root', '/run/user']) sh.push(`if [ -d ${d} ]; then mount -t tmpfs -o ro,mode=000 tmpfs ${d}; fi`)
  }
  if (svc.yes('ProtectKernelModules')) for (const d of ['/usr/lib/modules', '/lib/modules']) sh.push(`if [ -d ${d} ]; then mount -t tmpfs -o ro,mode=000 tmpfs ${d}; fi`)
  if (svc.yes('PrivateDevices')) {
    sh.push(`mount -t tmpfs -o mode=755,nosuid,noexec tmpfs ${q(join(T, 'dev'))} || true`)
    sh.push(`D=${q(join(T, 'dev'))}; for n in null zero full random urandom tty; do touch $D/$n; mount --bind /dev/$n $D/$n; done; mkdir -m 1777 $D/shm; ln -s /proc/self/fd $D/fd; ln -s /proc/self/fd/0 $D/stdin; ln -s /proc/self/fd/1 $D/stdout; ln -s /proc/self/fd/2 $D/stderr; mount --rbind $D /dev; mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm`)
  }
  if (svc.yes('ProtectKernelTunables')) sh.push('mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys; mount -o remount,bind,ro /sys')
  if (svc.yes('ProtectControlGroups')) sh.push('if mountpoint -q /sys/fs/cgroup; then mount -o remount,bind,ro /sys/fs/cgroup; fi')
  if (svc.yes('ProtectKernelLogs')) sh.push('if [ -e /proc/kmsg ]; then mount --bind /dev/null /proc/kmsg; fi')
  if (svc.one('ProtectProc') != null || svc.one('ProcSubset') != null) {
    const opts = ['nosuid', 'nodev', 'noexec']
    if (svc.one('ProtectProc') != null) opts.push(`hidepid=${svc.one('ProtectProc') as string}`)
    if (svc.one('ProcSubset') != null) opts.push(`subset=${svc.one('ProcSubset') as string}`)
    sh.push(`mount -t proc -o ${opts.join(',')} proc /proc`)
  }
  if (svc.yes('PrivateTmp')) sh.push('mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp; mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /var/tmp')
  // (up to the hard limit this machine allows: raising it needs CAP_SYS_RESOURCE, which a container may not have)
  if (svc.one('LimitNOFILE') != null) sh.push(`L=${Number(svc.one('LimitNOFILE'))}; H=$(ulimit -Hn); if [ "$H" != unlimited ] && [ "$H" -lt "$L" ]; then L=$H; fi; ulimit -n "$L"`)
  if (svc.one('UMask') != null) sh.push(`umask ${svc.one('UMask') as string}`)
  // User=, Group=, no capabilities, no_new_privs; then the seccomp filter, installed last, right before exec
  const caps = svc.one('CapabilityBoundingSet')
  if (caps != null && caps !== '') throw new Error('the harness applies an empty CapabilityBoundingSet= only')
  const setpriv = ['setpriv', `--reuid=${o.uid}`, `--regid=${o.gid}`, '--clear-groups', '--inh-caps=-all', '--ambient-caps=-all', ...(caps === '' ? ['--bounding-set=-all'] : []), ...(svc.yes('NoNewPrivileges') ? ['--no-new-privs'] : [])]
  const envArgs = Object.entries(env).map(([k, v]) => q(`${k}=${v}`))
  sh.push(`cd /; exec ${setpriv.join(' ')} -- env -i ${envArgs.join(' ')} /etc/pind-sandbox/sandbox-exec /etc/pind-sandbox/filter.bpf ${argv.map(q).join(' ')}`)
  const script = join(T, 'enter.sh')
  writeFileSync(script, sh.join('\n') + '\n', { mode: 0o755 })
  mkdirSync(join(T, 'dev'), { mode: 0o755 })

  const ns = ['--mount', '--propagation', 'private', ...(svc.yes('ProtectHostname') ? ['--uts'] : [])]
  const proc = spawn('unshare', [...ns, '--', 'sh', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  proc.stdout?.on('data', (b: Buffer) => { out += b.toString() })
  proc.stderr?.on('data', (b: Buffer) => { err += b.toString() })
  let exited: number | string | null | undefined
  const exit = new Promise<number | string | null>(resolve => proc.on('exit', (code, signal) => { exited = code ?? signal; listener?.kill('SIGKILL'); resolve(exited) }))
  const killSignal = (svc.one('KillSignal') ?? 'SIGTERM') as NodeJS.Signals
  const stopMs = Number(svc.one('TimeoutStopSec') ?? 90) * 1000
  return {
    proc,
    pid: proc.pid as number,
    stdout: () => out,
    stderr: () => err,
    notifications: () => notifications,
    stop: async () => {
      if (exited !== undefined) return exited
      proc.kill(killSignal)
      const timer = setTimeout(() => { proc.kill('SIGKILL') }, stopMs)
      try { return await exit } finally { clearTimeout(timer) }
    }
  }
}

/** `systemd-analyze security --offline=true <unit>`: the overall exposure score (0 = locked down, 10 = exposed). */
export function securityScore (unitPath: string): { score: number, text: string } {
  let text: string
  try {
    text = execFileSync('systemd-analyze', ['security', '--offline=true', '--no-pager', unitPath], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (err) {
    text = String((err as { stdout?: string }).stdout ?? '')
  }
  const m = /Overall exposure level for .*?: (\d+(?:\.\d+)?)/.exec(text)
  if (m == null) throw new Error(`systemd-analyze security printed no score:\n${text}`)
  return { score: Number(m[1]), text }
}
