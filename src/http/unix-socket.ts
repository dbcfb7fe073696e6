/**
 * A Unix socket's path must fit in sun_path: 107 bytes on Linux. A longer
 * one (a deep data dir) is reached through a short alias of the same file,
 * /proc/self/fd/<fd of its folder>/<name>, so the socket stays where its
 * users look for it (`<data-dir>/admin.sock`) however long that path is.
 */
import { closeSync, existsSync, openSync } from 'node:fs'
import { basename, dirname } from 'node:path'

export const SUN_PATH_MAX = 107

export interface SocketPath {
  /** what to pass to listen() or connect() */
  path: string
  /** call once the socket is bound or connected */
  close(): void
}

export function socketPath (path: string): SocketPath {
  if (Buffer.byteLength(path) <= SUN_PATH_MAX) return { path, close () {} }
  if (!existsSync('/proc/self/fd')) {
    throw new Error(`the socket path ${path} is longer than ${SUN_PATH_MAX} bytes, and without /proc it cannot be shortened: use a shorter --data-dir`)
  }
  const fd = openSync(dirname(path), 'r')
  let open = true
  return {
    path: `/proc/self/fd/${fd}/${basename(path)}`,
    close () {
      if (!open) return
      open = false
      closeSync(fd)
    }
  }
}
