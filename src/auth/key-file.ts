/**
 * One signing key on disk: `<kid>.json` in the keys dir, mode 0600. Writes are
 * atomic (temp file, fsync, rename, fsync of the dir) so neither a crash nor a
 * server reading concurrently from another process ever sees half a key, and
 * every change shows up as a change of the directory's mtime (see keystore.ts).
 * Reads refuse files that group or other can access: they hold private keys.
 */
import { constants } from 'node:fs'
import { open, rename, unlink } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import type { JWK } from 'jose'
import { KeyPermissionError, KeyStoreError } from './errors.js'

export type KeyStatus = 'active' | 'retired'

export interface KeyFile {
  kid: string
  alg: string
  /** ISO 8601 UTC */
  created: string
  status: KeyStatus
  retiredAt?: string
  privateJwk: JWK
  publicJwk: JWK
}

const SUFFIX = '.json'
const KID = /^[A-Za-z0-9_-]{1,64}$/

export const isValidKid = (kid: string): boolean => KID.test(kid)

/** The kid a directory entry names, or undefined for anything that is not a key file (temp files, notes). */
export function kidOfEntry (name: string): string | undefined {
  if (!name.endsWith(SUFFIX) || name.startsWith('.')) return undefined
  const kid = name.slice(0, -SUFFIX.length)
  return isValidKid(kid) ? kid : undefined
}

export const keyFilePath = (dir: string, kid: string): string => join(dir, kid + SUFFIX)

/** Throws unless `mode` grants nothing to group and other (skipped on Windows, which has no such bits). */
export function assertOwnerOnly (path: string, mode: number, fix: string): void {
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) throw new KeyPermissionError(path, mode, fix)
}

/** Reads and checks `<kid>.json`; returns undefined if it vanished since the directory was listed. */
export async function readKeyFile (dir: string, kid: string): Promise<KeyFile | undefined> {
  const path = keyFilePath(dir, kid)
  let fh
  try {
    fh = await open(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return undefined
    if (code === 'ELOOP') throw new KeyStoreError(`key file ${path} is a symlink; key files must be regular files`)
    throw new KeyStoreError(`cannot read key file ${path}: ${(err as Error).message}`)
  }
  try {
    const st = await fh.stat()
    if (!st.isFile()) throw new KeyStoreError(`key file ${path} is not a regular file`)
    assertOwnerOnly(path, st.mode, 'chmod 600')
    return parseKeyFile(`key file ${path}`, kid, await fh.readFile('utf8'))
  } finally {
    await fh.close()
  }
}

/** A key's JSON, checked; `where` names it in errors ("key file <path>"). */
export function parseKeyFile (where: string, kid: string, text: string): KeyFile {
  const bad = (why: string): KeyStoreError => new KeyStoreError(`${where} ${why}`)
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    throw bad('is not valid JSON')
  }
  if (typeof raw !== 'object' || raw === null) throw bad('is not a JSON object')
  const f = raw as Record<string, unknown>
  if (f.kid !== kid) throw bad(`has kid ${JSON.stringify(f.kid)}, which does not match its file name`)
  if (typeof f.alg !== 'string') throw bad('has no alg')
  if (typeof f.created !== 'string' || Number.isNaN(Date.parse(f.created))) throw bad('has no valid created date')
  if (f.status !== 'active' && f.status !== 'retired') throw bad(`has unknown status ${JSON.stringify(f.status)}`)
  if (f.retiredAt !== undefined && typeof f.retiredAt !== 'string') throw bad('has an invalid retiredAt')
  if (!isJwk(f.privateJwk) || typeof f.privateJwk.d !== 'string') throw bad('has no private key')
  if (!isJwk(f.publicJwk) || 'd' in f.publicJwk) throw bad('has no (or a non-public) public key')
  return {
    kid,
    alg: f.alg,
    created: f.created,
    status: f.status,
    ...(f.retiredAt !== undefined ? { retiredAt: f.retiredAt } : {}),
    privateJwk: f.privateJwk,
    publicJwk: f.publicJwk
  }
}

function isJwk (v: unknown): v is JWK {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as JWK).kty === 'string'
}

/** Atomically creates or replaces `<kid>.json` with mode 0600. */
export async function writeKeyFile (dir: string, file: KeyFile): Promise<void> {
  if (!isValidKid(file.kid)) throw new KeyStoreError(`invalid kid ${JSON.stringify(file.kid)}`)
  const target = keyFilePath(dir, file.kid)
  const tmp = join(dir, `.${file.kid}.${randomBytes(6).toString('hex')}.tmp`)
  const fh = await open(tmp, 'wx', 0o600)
  try {
    try {
      await fh.writeFile(JSON.stringify(file, null, 2) + '\n')
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(tmp, target)
  } catch (err) {
    await unlink(tmp).catch(() => {})
    throw err
  }
  await syncDir(dir)
}

/** Makes the rename durable. Some platforms cannot fsync a directory; that is not an error there. */
async function syncDir (dir: string): Promise<void> {
  let fh
  try {
    fh = await open(dir, 'r')
    await fh.sync()
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM' && code !== 'EBADF') throw err
  } finally {
    await fh?.close()
  }
}
