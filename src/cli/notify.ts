/**
 * Readiness for systemd (Type=notify): when the service manager gave us
 * $NOTIFY_SOCKET, tell it READY=1 once serve answers, and STOPPING=1 when it
 * begins to stop. The protocol is a datagram on a Unix socket, which Node
 * cannot send, so this runs systemd's own `systemd-notify` (present wherever
 * systemd is). It waits until the manager has read the message (its
 * barrier), so the unit needs NotifyAccess=all: the sender is this child, not
 * the main process.
 */
import { spawn } from 'node:child_process'
import type { Logger } from '../log.js'

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
