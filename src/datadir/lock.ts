/**
 * An exclusive lock on a data dir, so that two processes never open the same
 * ledger and blockstore for writing. The lock file names the holder's pid and
 * its kernel start time, so a lock left by a crashed process (kill -9) is
 * recognised as stale even if the pid was reused.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { PindError } from '../kernel/errors.js'

export class DataDirLockedError extends PindError {
  override name = 'DataDirLockedError'
  constructor (readonly dir: string, readonly pid: number, readonly holder: string) {
    super(`data dir ${dir} is in use by ${holder} (pid ${pid}); stop it first or use another --data-dir`)
  }
}

interface LockInfo { pid: number, start: string | null, holder: string }

export interface DataDirLock {
  release(): void
}

export function acquireLock (lockFile: string, dir: string, holder: string): DataDirLock {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lockFile, 'wx', 0o600)
      const info: LockInfo = { pid: process.pid, start: processStartTime(process.pid), holder }
      writeSync(fd, JSON.stringify(info))
      closeSync(fd)
      let released = false
      return {
        release () {
          if (released) return
          released = true
          try { unlinkSync(lockFile) } catch {}
        }
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    const existing = readLock(lockFile)
    if (existing != null && isAlive(existing)) throw new DataDirLockedError(dir, existing.pid, existing.holder)
    // stale (crashed holder) or unreadable half-written file: remove and retry
    try { unlinkSync(lockFile) } catch {}
  }
  throw new Error(`could not lock data dir ${dir}`)
}

/** The current holder of a data dir lock, if a live process holds it. */
export function lockHolder (lockFile: string): LockInfo | undefined {
  const info = readLock(lockFile)
  return info != null && isAlive(info) ? info : undefined
}

function readLock (lockFile: string): LockInfo | undefined {
  try {
    const parsed = JSON.parse(readFileSync(lockFile, 'utf8')) as Partial<LockInfo>
    if (typeof parsed.pid !== 'number') return undefined
    return { pid: parsed.pid, start: parsed.start ?? null, holder: parsed.holder ?? 'another pind process' }
  } catch {
    return undefined
  }
}

function isAlive (info: LockInfo): boolean {
  if (info.pid === process.pid) return true
  try {
    process.kill(info.pid, 0)
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
  const start = processStartTime(info.pid)
  return info.start == null || start == null || start === info.start
}

/** Linux: field 22 of /proc/<pid>/stat, the process start time in clock ticks since boot. */
function processStartTime (pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return fields[19] ?? null
  } catch {
    return null
  }
}
