/**
 * The data dir holds every payer and payment (the ledger), the node's private
 * key and the token signing keys: only its owner may read it. `serve` runs
 * this before anything else touches the dir (the packaged binary unpacks
 * lmdb's native addon into `<data-dir>/.native` as lmdb loads):
 *
 *   - a missing data dir is created with mode 0700;
 *   - an existing one loses group and other access: the dir itself and
 *     everything at its top level and in `keys/` (the block files below
 *     `blocks/` need no visit: nobody else can reach them through a 0700 dir);
 *   - a dir pind cannot change (another owner) is refused with how to fix it.
 *
 * What pind creates afterwards is private anyway: it runs with umask 077
 * (src/main.ts), so files come out 0600 and folders 0700.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync, type Stats } from 'node:fs'
import { join } from 'node:path'
import { PindError } from '../kernel/errors.js'

export class DataDirAccessError extends PindError {
  override name = 'DataDirAccessError'
}

export interface SecuredDataDir {
  created: boolean
  /** paths whose mode was narrowed, with the mode they had */
  fixed: Array<{ path: string, mode: string }>
}

const OTHERS = 0o077

export function secureDataDir (root: string): SecuredDataDir {
  let st: Stats
  try {
    st = lstatSync(root)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    mkdirSync(root, { recursive: true, mode: 0o700 })
    chmodSync(root, 0o700) // whatever the umask was
    return { created: true, fixed: [] }
  }
  if (!st.isDirectory()) throw new DataDirAccessError(`data dir ${root} is not a directory`)
  const fixed: SecuredDataDir['fixed'] = []
  const narrow = (path: string, s: Stats): void => {
    if ((s.mode & OTHERS) === 0 || s.isSymbolicLink()) return
    try {
      chmodSync(path, s.mode & 0o7700)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code !== 'EPERM' && code !== 'EACCES') throw err
      throw new DataDirAccessError(`${path} is readable by other users (mode ${octal(s.mode)}) and pind, running as uid ${process.getuid?.() ?? '?'}, cannot change that (owner uid ${s.uid}): run pind as the data dir's owner, or chmod -R go-rwx ${root}`)
    }
    fixed.push({ path, mode: octal(s.mode) })
  }
  narrow(root, st)
  for (const dir of [root, join(root, 'keys')]) {
    let names: string[]
    try { names = readdirSync(dir) } catch { continue }
    for (const name of names) {
      const path = join(dir, name)
      try { narrow(path, lstatSync(path)) } catch (err) {
        if (err instanceof DataDirAccessError) throw err
        // gone meanwhile: nothing to narrow
      }
    }
  }
  return { created: false, fixed }
}

function octal (mode: number): string {
  return `0${(mode & 0o7777).toString(8)}`
}
