/**
 * Where an admin subcommand runs: through a running `serve` (its admin
 * socket) when one holds the data dir, otherwise on the data dir directly
 * (taking the lock so that no serve starts meanwhile). Both paths end in the
 * same service functions; the caller is told which one ran.
 */
import { existsSync } from 'node:fs'
import type { AssemblySettings, Components } from '../app/components.js'
import type { Config } from '../config/settings.js'
import { acquireLock, lockHolder } from '../datadir/lock.js'
import { layout, type DataDirLayout } from '../datadir/layout.js'
import type { BlockBackend } from '../ipfs/block-backend.js'
import { CliError } from './fail.js'

export type Via = { via: 'serve', pid: number } | { via: 'data-dir' }

/** Where an admin command did its work, for its closing line on stderr. */
export function describeVia (how: Via, dataDir: string): string {
  return how.via === 'serve' ? `via the running pind serve (pid ${how.pid})` : `on the data dir ${dataDir} (no serve running)`
}

/** An admin command's result on stdout: JSON with `via` added, or the command's text. */
export function writeResult<T extends object> (out: { result: T, how: Via }, json: boolean, text: (r: T) => string): void {
  process.stdout.write((json ? JSON.stringify({ ...out.result, via: out.how.via }) : text(out.result)) + '\n')
}

export async function runAdmin<T> (config: Readonly<Config>, label: string, ops: {
  viaServe: (socketPath: string) => Promise<T>
  /** on the components a serve would run on (app/components.ts), assembled here */
  locally: (c: Components) => Promise<T>
  /** the data dir's block store, for commands that work on blocks (default: blocks/ on disk, not read) */
  blocks?: (paths: DataDirLayout) => Promise<BlockBackend>
}): Promise<{ result: T, how: Via }> {
  const paths = layout(config.dataDir)
  if (!existsSync(paths.root)) throw new CliError(`data dir ${paths.root} does not exist (set --data-dir or PIND_DATA_DIR)`)
  const holder = lockHolder(paths.lock)
  if (holder != null) {
    if (!holder.holder.startsWith('pind serve')) throw new CliError(`data dir ${paths.root} is in use by ${holder.holder} (pid ${holder.pid}); try again when it has finished`)
    if (!existsSync(paths.adminSocket)) throw new CliError(`pind serve (pid ${holder.pid}) holds ${paths.root} but its admin socket ${paths.adminSocket} is missing`)
    return { result: await ops.viaServe(paths.adminSocket), how: { via: 'serve', pid: holder.pid } }
  }
  if (!existsSync(paths.ledger) && !existsSync(paths.ledgerRecord)) throw new CliError(`${paths.root} is not a pind data dir (no ledger.mdb), nor one whose ledger is in PostgreSQL (no ledger.json); run pind serve on it first`)
  // lmdb and the rest of the core load only now (--help stays instant), and before the lock: the
  // binary's CLI bundle has none of them and hands the command over here (fail.ts, wholeProgramNeeded)
  const { assemble } = await import('../app/components.js')
  const { ledgerSettingsOf, LedgerChoiceError } = await import('../app/open-ledger.js')
  const { LedgerRecordError } = await import('../datadir/ledger-record.js')
  const { silentLogger } = await import('../kernel/log.js')
  const lock = acquireLock(paths.lock, paths.root, `pind ${label}`)
  try {
    const blocks = await ops.blocks?.(paths)
    try {
      const settings: AssemblySettings = { denylist: config.denylist ?? [], rpcUrl: config.rpcUrl, network: config.network, asset: config.asset, ...ledgerSettingsOf(config) }
      const c = await assemble(paths, settings, { log: silentLogger, ...(blocks != null ? { blocks } : {}) }).catch((err: unknown) => {
        // which ledger, and whether it opens, is the operator's to fix: the message says how
        if (err instanceof LedgerChoiceError || err instanceof LedgerRecordError) throw new CliError(err.message)
        throw err
      })
      try {
        return { result: await ops.locally(c), how: { via: 'data-dir' } }
      } finally {
        await c.stop()
      }
    } finally {
      await blocks?.close()
    }
  } finally {
    lock.release()
  }
}
