/**
 * A small JSON record in the data dir, written so a crash leaves the old
 * record or the new one, never half of either: a temporary file, fsync,
 * rename, fsync of the folder.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'

/** The record's JSON (undefined: no such file); `fail` makes the caller's error from a message naming the file. */
export function readJsonRecord (path: string, fail: (message: string) => Error): unknown {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw fail(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  try {
    return JSON.parse(text)
  } catch {
    throw fail(`${path} is not valid JSON`)
  }
}

export function writeJsonAtomically (path: string, value: unknown): void {
  const tmp = `${path}.${process.pid}.tmp`
  const fd = openSync(tmp, 'w', 0o600)
  try {
    writeSync(fd, JSON.stringify(value, null, 2) + '\n')
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, path)
  const dir = openSync(dirname(path), 'r')
  try { fsyncSync(dir) } finally { closeSync(dir) }
}
