/**
 * The data dir must be the running user's before anything touches it: the
 * binary unpacks lmdb's native addon into `<data-dir>/.native` first thing,
 * and a command run as another user (root included) would fail deep inside
 * ("EACCES … mkdir", "could not lock data dir") or leave files the service
 * user cannot open. One line says what to do instead.
 */
import { accessSync, constants, mkdirSync, readFileSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { DataDirAccessError } from './secure.js'

export { DataDirAccessError }

/**
 * `create`: make a missing data dir (mode 0700), as serve does; otherwise a
 * missing one is left for the command to report. `command`: how the user ran
 * it (for the `sudo -u <owner>` hint).
 */
export function checkDataDirAccess (dir: string, opts: { create: boolean, command: string }): void {
  const uid = process.getuid?.()
  let st
  try {
    st = statSync(dir)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EACCES') throw new DataDirAccessError(`cannot reach data dir ${dir}: a folder above it is closed to ${who(uid)}; run as the data dir's owner, or choose another --data-dir`)
    if (code !== 'ENOENT' || !opts.create) return
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 })
    } catch (err2) {
      throw new DataDirAccessError(`cannot create data dir ${dir} (${(err2 as NodeJS.ErrnoException).code ?? 'error'}): ${dirname(dir)} is not writable by ${who(uid)}; create it for the service user (install -d -m 0700 -o <user> ${dir}) or choose another --data-dir`)
    }
    return
  }
  if (!st.isDirectory()) throw new DataDirAccessError(`data dir ${dir} is not a directory; choose another --data-dir`)
  if (uid != null && st.uid !== uid) {
    const owner = userName(st.uid)
    // (a dir left open to others holds every payer and payment for anyone to read: say so too)
    const open = (st.mode & 0o077) !== 0 ? `; and ${dir} is readable by other users (mode 0${(st.mode & 0o777).toString(8)}): chmod -R go-rwx ${dir}` : ''
    throw new DataDirAccessError(`data dir ${dir} belongs to ${owner ?? `uid ${st.uid}`}, not to ${who(uid)}: run as the data dir's owner: sudo -u ${owner ?? `'#${st.uid}'`} pind ${opts.command} --data-dir ${dir}${open}`)
  }
  try {
    accessSync(dir, constants.W_OK | constants.X_OK)
  } catch {
    throw new DataDirAccessError(`data dir ${dir} is not writable (mode ${(st.mode & 0o777).toString(8)}): chmod 700 ${dir}`)
  }
}

function who (uid: number | undefined): string {
  if (uid == null) return 'this user'
  const name = userName(uid)
  return name != null ? `${name} (uid ${uid})` : `uid ${uid}`
}

/** The account name of a uid from /etc/passwd (no Node API maps uids to names), if it has one. */
function userName (uid: number): string | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':')
      if (f.length >= 3 && Number(f[2]) === uid && f[0] !== '') return f[0]
    }
  } catch {}
  return undefined
}
