/**
 * Where the signing keys are kept, as keystore.ts reads and writes them: the
 * data dir's keys/ folder (one file per key), or the ledger, when several
 * front ends share it (src/ledger/signing-keys.ts).
 */
import { mkdir, readdir, stat } from 'node:fs/promises'
import { KeyStoreError } from './errors.js'
import { assertOwnerOnly, isValidKid, kidOfEntry, keyFilePath, parseKeyFile, readKeyFile, writeKeyFile, type KeyFile } from './key-file.js'
import type { SigningKeyRecords } from '../ledger/signing-keys.js'

export interface KeySource {
  /** where the keys are, for messages */
  readonly where: string
  /** where one key is, for messages */
  whereIs(kid: string): string
  /** makes the place ready (the folder, created 0700) */
  open(): Promise<void>
  /** what changes whenever a key is written; undefined: read the keys again (a change may not show in it yet) */
  stamp(): Promise<string | undefined>
  load(): Promise<KeyFile[]>
  write(file: KeyFile): Promise<void>
}

/** mtimes are coarse (a kernel tick): a folder changed this recently is read again at every check */
const SETTLE_MS = 2000

/**
 * The keys/ folder: every write is a rename into it, which always bumps its
 * mtime, so a stat tells whether to read it again (unlike fs.watch, it cannot
 * miss an event and needs no handle to close).
 */
export function folderKeySource (dir: string): KeySource {
  const statDir = async (): Promise<import('node:fs').BigIntStats> => {
    const st = await stat(dir, { bigint: true })
    if (!st.isDirectory()) throw new KeyStoreError(`key folder ${dir} is not a directory`)
    assertOwnerOnly(dir, Number(st.mode), 'chmod 700')
    return st
  }
  return {
    where: dir,
    whereIs: (kid) => `key file ${keyFilePath(dir, kid)}`,
    open: async () => { await mkdir(dir, { recursive: true, mode: 0o700 }) },
    stamp: async () => {
      const st = await statDir()
      if (Date.now() - Number(st.mtimeMs) < SETTLE_MS) return undefined
      return `${st.ino}:${st.mtimeNs}:${st.ctimeNs}`
    },
    load: async () => {
      await statDir()
      const files: KeyFile[] = []
      for (const name of await readdir(dir)) {
        const kid = kidOfEntry(name)
        if (kid === undefined) continue
        const file = await readKeyFile(dir, kid)
        if (file !== undefined) files.push(file)
      }
      return files
    },
    write: async (file) => { await writeKeyFile(dir, file) }
  }
}

/** The keys in a ledger several front ends share: read again when its version changes. */
export function ledgerKeySource (records: SigningKeyRecords, where: string): KeySource {
  return {
    where,
    whereIs: (kid) => `signing key ${kid} in ${where}`,
    open: async () => {},
    stamp: async () => await records.version(),
    load: async () => (await records.all()).map(r => parseKeyFile(`signing key ${r.kid} in ${where}`, r.kid, r.json)),
    write: async (file) => {
      if (!isValidKid(file.kid)) throw new KeyStoreError(`invalid kid ${JSON.stringify(file.kid)}`)
      await records.put(file.kid, JSON.stringify(file))
    }
  }
}
