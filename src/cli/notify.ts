/**
 * Readiness for systemd (Type=notify): when the service manager gave us
 * $NOTIFY_SOCKET, tell it READY=1 once serve answers, and STOPPING=1 when it
 * begins to stop. The protocol is a datagram on a Unix socket, which Node
 * cannot send, so this runs systemd's own `systemd-notify` (present wherever
 * systemd is). It waits until the manager has read the message (its
 * barrier), so the unit needs NotifyAccess=all: the sender is this child, not
 * the main process.
 *
 * While serve starts, it also asks systemd to wait longer each time the start
 * moves on (startupReporter): under Type=notify a start that outlasts
 * TimeoutStartSec= (90 s by default) is killed, and the first start of a new
 * version on a large ledger upgrades it for minutes.
 */
import { spawn } from 'node:child_process'
import type { Logger } from '../kernel/log.js'

export async function notifyServiceManager (vars: Record<string, string>, log: Logger, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (env.NOTIFY_SOCKET == null || env.NOTIFY_SOCKET === '') return false
  const args = [...Object.entries(vars).map(([k, v]) => `${k}=${v.replace(/\n/g, ' ')}`), `MAINPID=${process.pid}`]
  return await new Promise<boolean>(resolve => {
    let err = ''
    const child = spawn('systemd-notify', args, { env, stdio: ['ignore', 'ignore', 'pipe'] })
    child.stderr?.on('data', (b: Buffer) => { err += b.toString() })
    const done = (ok: boolean, why?: string): void => {
      if (!ok) log.warn('could not notify the service manager (NOTIFY_SOCKET): is systemd-notify installed?', { vars: Object.keys(vars), error: why })
      resolve(ok)
    }
    child.on('error', (e) => { done(false, e.message) })
    child.on('exit', (code) => { code === 0 ? done(true) : done(false, err.trim().slice(0, 300) || `systemd-notify exited ${String(code)}`) })
  })
}

/** how long systemd is asked to wait for the next message, each time the start moves on (EXTEND_TIMEOUT_USEC) */
export const START_EXTEND_MS = 60_000
/** at most one message this often (each is a systemd-notify process) */
const START_REPORT_EVERY_MS = 1_000

export interface StartupReporter {
  /** the start has moved on (a step begins; a ledger upgrade has read more records): `status` says what it does now */
  report(status: string): void
  /** the start is over: resolves once the messages sent have been read (READY=1 then comes last, with its STATUS) */
  done(): Promise<void>
}

/**
 * Tells systemd, while serve starts, `EXTEND_TIMEOUT_USEC` (START_EXTEND_MS)
 * and `STATUS=` with what it is doing, at most every second and only when the
 * start has moved on since: systemd then waits past TimeoutStartSec= as long
 * as the start progresses, and still kills one silent for START_EXTEND_MS
 * beyond it (an extension only ever moves the deadline later: within
 * TimeoutStartSec= it changes nothing). Without $NOTIFY_SOCKET, or once
 * systemd-notify has failed (warned once), it does nothing.
 */
export function startupReporter (log: Logger, env: NodeJS.ProcessEnv = process.env, opts: { extendMs?: number, everyMs?: number } = {}): StartupReporter {
  if (env.NOTIFY_SOCKET == null || env.NOTIFY_SOCKET === '') return { report () {}, done: async () => {} }
  const extendUs = String((opts.extendMs ?? START_EXTEND_MS) * 1000)
  const everyMs = opts.everyMs ?? START_REPORT_EVERY_MS
  let last = -Infinity
  let over = false
  let sending: Promise<unknown> = Promise.resolve()
  return {
    report (status) {
      const now = performance.now()
      if (over || now - last < everyMs) return
      last = now
      const sent = notifyServiceManager({ EXTEND_TIMEOUT_USEC: extendUs, STATUS: status }, log, env).then(ok => { if (!ok) over = true })
      sending = Promise.all([sending, sent])
    },
    done: async () => {
      over = true
      await sending
    }
  }
}
