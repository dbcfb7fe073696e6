/**
 * A file holding a secret (a password, credentials): read only when nothing
 * but its owner may read it, as ssh does with a private key. `fail` makes the
 * caller's error from the message, which names the file, never its content.
 */
import { readFileSync, statSync } from 'node:fs'

export function readSecretFile (file: string, what: string, fail: (message: string) => Error): string {
  let mode: number
  try {
    mode = statSync(file).mode
  } catch (err) {
    throw fail(`cannot read ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`)
  }
  if ((mode & 0o077) !== 0) throw fail(`${what} ${file} must not be readable by group or others (chmod 600)`)
  try {
    return readFileSync(file, 'utf8')
  } catch (err) {
    throw fail(`cannot read ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`)
  }
}
