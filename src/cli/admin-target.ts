/**
 * Where an admin subcommand runs: through a running `serve` (its admin
 * socket) when one holds the data dir, otherwise on the data dir directly
 * (taking the lock so that no serve starts meanwhile). Both paths end in the
 * same service functions; the caller is told which one ran.
 */
import { existsSync } from 'node:fs'
import { KeyStore } from '../auth/keystore.js'
import { TokenService } from '../auth/tokens.js'
import { acquireLock, lockHolder } from '../datadir/lock.js'
import { layout, type DataDirLayout } from '../datadir/layout.js'
import type { LedgerEnv } from '../ledger/open.js'
import { TokenLedger } from '../ledger/tokens.js'

export class CliError extends Error {
  override name = 'CliError'
}

export interface LocalResources {
  paths: DataDirLayout
  ledger: LedgerEnv
  keystore: KeyStore
  tokenLedger: TokenLedger
  /** undefined when no serve ever recorded its token issuer here */
  tokens?: TokenService
}

export type Via = { via: 'serve', pid: number } | { via: 'data-dir' }

/** Where an admin command did its work, for its closing line on stderr. */
export function describeVia (how: Via, dataDir: string): string {
  return how.via === 'serve' ? `via the running pind serve (pid ${how.pid})` : `on the data dir ${dataDir} (no serve running)`
}

/** An admin command's result on stdout: JSON with `via` added, or the command's text. */
export function writeResult<T extends object> (out: { result: T, how: Via }, json: boolean, text: (r: T) => string): void {
  process.stdout.write((json ? JSON.stringify({ ...out.result, via: out.how.via }) : text(out.result)) + '\n')
}

export async function runAdmin<T> (dataDir: string, label: string, ops: {
  viaServe: (socketPath: string) => Promise<T>
  locally: (r: LocalResources) => Promise<T>
}): Promise<{ result: T, how: Via }> {
  const paths = layout(dataDir)
  if (!existsSync(paths.root)) throw new CliError(`data dir ${paths.root} does not exist (set --data-dir or PIND_DATA_DIR)`)
  const holder = lockHolder(paths.lock)
  if (holder != null) {
    if (!holder.holder.startsWith('pind serve')) throw new CliError(`data dir ${paths.root} is in use by ${holder.holder} (pid ${holder.pid}); try again when it has finished`)
    if (!existsSync(paths.adminSocket)) throw new CliError(`pind serve (pid ${holder.pid}) holds ${paths.root} but its admin socket ${paths.adminSocket} is missing`)
    return { result: await ops.viaServe(paths.adminSocket), how: { via: 'serve', pid: holder.pid } }
  }
  if (!existsSync(paths.ledger)) throw new CliError(`${paths.root} is not a pind data dir (no ledger.mdb); run pind serve on it first`)
  const lock = acquireLock(paths.lock, paths.root, `pind ${label}`)
  try {
    const { openLedgerEnv } = await import('../ledger/open.js')
    const ledger = await openLedgerEnv(paths.ledger)
    try {
      const keystore = await KeyStore.open(paths.keys)
      const tokenLedger = new TokenLedger(ledger)
      const issuer = ledger.meta.get('tokenIssuer')
      const ttl = ledger.meta.get('tokenTtl')
      const tokens = typeof issuer === 'string' && typeof ttl === 'number'
        ? new TokenService({ keystore, issuer, audience: issuer, ttlSeconds: ttl, isRevoked: (c) => tokenLedger.isRevoked(c) })
        : undefined
      const result = await ops.locally({ paths, ledger, keystore, tokenLedger, ...(tokens != null ? { tokens } : {}) })
      return { result, how: { via: 'data-dir' } }
    } finally {
      await ledger.close()
    }
  } finally {
    lock.release()
  }
}
