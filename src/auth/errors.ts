/**
 * Errors of the auth folder. Token errors carry only a short client-safe
 * message (never the token, never key material) so the HTTP layer can put it
 * in a 401 as is; key store errors are for operators and name the file.
 */
import { PindError } from '../kernel/errors.js'

/** Anything wrong with a presented token. `message` is safe to show the client. */
export class InvalidTokenError extends PindError {
  override name = 'InvalidTokenError'
}

/** `issue()` was asked for a token whose subject is not a 0x address. */
export class InvalidOwnerError extends PindError {
  override name = 'InvalidOwnerError'
}

/** The key directory or a key file cannot be used as it is. */
export class KeyStoreError extends PindError {
  override name = 'KeyStoreError'
}

/** A key file or the key directory is accessible by group or other. */
export class KeyPermissionError extends KeyStoreError {
  override name = 'KeyPermissionError'
  constructor (readonly path: string, readonly mode: number, fix: string) {
    super(`${path} has mode ${(mode & 0o777).toString(8).padStart(4, '0')} but holds signing keys; ` +
      `it must be accessible by its owner only (${fix} ${path})`)
  }
}

/** `retire()` was given a kid that is not in the store. */
export class UnknownKeyError extends KeyStoreError {
  override name = 'UnknownKeyError'
  constructor (readonly kid: string, dir: string) {
    super(`no signing key ${JSON.stringify(kid)} in ${dir}`)
  }
}
