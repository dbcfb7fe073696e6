/**
 * Start-up failures an operator can act on: one line naming the setting to
 * change or the fix, instead of a library's advice and a stack trace.
 */
import { PindError } from '../kernel/errors.js'

export class StartupError extends PindError {
  override name = 'StartupError'
}

/** A listen address that could not be bound, and why (the errno code). */
export interface ListenFailure { address: string, code?: string }

/** listen failed with `code` on `address`; `setting`: the flag and variable that choose it */
export function listenFailure (what: string, f: ListenFailure, setting: string): StartupError {
  const fix = f.code === 'EADDRINUSE'
    ? `is in use by another process: stop it, or choose another address with ${setting}`
    : f.code === 'EACCES'
      ? `needs privileges this user lacks (ports below 1024): choose a port from 1024 up with ${setting} (and put a reverse proxy in front), or grant CAP_NET_BIND_SERVICE`
      : f.code === 'EADDRNOTAVAIL'
        ? `is not an address of this machine: fix ${setting}`
        : `could not be listened on${f.code != null ? ` (${f.code})` : ''}: check ${setting}`
  return new StartupError(`${what} ${f.address} ${fix}`)
}
