/**
 * `pind import-ledger <file>`: loads a JSON Lines export into a stopped data
 * dir — a new or empty one (migration), or with --merge one that already has
 * pins. The whole file is checked before anything is written (see
 * src/service/admin/ledger-import.ts), so a refused file leaves the ledger as it was.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Command } from 'commander'
import { acquireLock, DataDirLockedError, lockHolder } from '../datadir/lock.js'
import { layout } from '../datadir/layout.js'
import { EXPORT_SCHEMA } from '../service/admin/ledger-export.js'
import { checkImport, fileLines, ImportError, writeImport, type ImportOptions } from '../service/admin/ledger-import.js'
import { configFromCli } from './config-from-cli.js'
import { CliError, fail } from './fail.js'
import { count, progressLine } from './progress.js'

export function importLedgerCommand (program: Command): void {
  program.command('import-ledger <file>')
    .description('load a JSON Lines export (pind export-ledger) into a stopped data dir: a new or empty ledger, or --merge')
    .option('--merge', 'add to a ledger that already holds pins (requestids, payments and tickets it already has are refused)')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', `
<file> is a JSON Lines export (schema ${EXPORT_SCHEMA}, version 1 or 2); "-" reads stdin (copied to a
temporary file first: the input is read twice). The whole input is checked first (header and
version, every line, the end line and its counts, ids already in the ledger) and nothing is
written unless all of it is good. Upload tickets come back as they were (an unused one can be
used once on this data dir, a used one stays used). The data dir is created (mode 0700) when it does not exist;
no pind serve may be running on it. Pins exported "pinned" without --with-blocks come back
"queued": the next pind serve walks their DAGs again (local blocks first, then the network).
Copy blocks/ (and keys/ if tokens must stay valid) from the old data dir for the content itself.

Examples:
  pind export-ledger --with-blocks -o ledger.jsonl --data-dir /var/lib/pind-old
  pind import-ledger ledger.jsonl --data-dir /var/lib/pind-new
  ssh old-host pind export-ledger --with-blocks | pind import-ledger - --data-dir /var/lib/pind
  pind import-ledger --merge other-instance.jsonl --json
`)
    .action(async (file: string, o: { merge?: boolean, json?: boolean }, cmd: Command) => { await runImport(file, o, cmd) })
}

async function runImport (file: string, o: { merge?: boolean, json?: boolean }, cmd: Command): Promise<void> {
  const config = configFromCli(cmd, 'admin')
  const paths = layout(config.dataDir)
  const progress = progressLine('import-ledger')
  let tempCopy: string | undefined
  try {
    const holder = lockHolder(paths.lock)
    if (holder != null) {
      if (holder.holder.startsWith('pind serve')) throw new CliError(`a pind serve (pid ${holder.pid}) is running on ${paths.root}: import-ledger works on a stopped data dir only; stop serve, import, then start it again`)
      throw new CliError(`data dir ${paths.root} is in use by ${holder.holder} (pid ${holder.pid}); try again when it has finished`)
    }
    let input = file
    if (file === '-') {
      tempCopy = join(existsSync(paths.root) ? paths.root : tmpdir(), `.import-ledger-${process.pid}.jsonl`)
      await copyStdin(tempCopy)
      input = tempCopy
    } else {
      let ok = false
      try { ok = statSync(file).isFile() } catch {}
      if (!ok) throw new CliError(`cannot read ${file}: no such file`)
    }
    const source = fileLines(input)
    const opts: ImportOptions = { merge: o.merge === true, onProgress: (phase, c) => { progress.update(phase === 'checking' ? `checking: ${count(c.lines)} lines` : `writing: ${count(c.pins)} pins, ${count(c.payments)} payments, ${count(c.tickets)} tickets`) } }

    const fresh = !existsSync(paths.ledger) && !existsSync(paths.ledgerRecord)
    // a new ledger is created only once the input has been checked
    if (fresh) await checkImport(source, undefined, opts)
    if (!existsSync(paths.root)) {
      try {
        mkdirSync(paths.root, { mode: 0o700 })
      } catch (err) {
        throw new CliError(`cannot create the data dir ${paths.root}: ${(err as Error).message}`)
      }
    }
    let lock
    try {
      lock = acquireLock(paths.lock, paths.root, 'pind import-ledger')
    } catch (err) {
      if (err instanceof DataDirLockedError) throw new CliError(err.message)
      throw err
    }
    let result
    try {
      // the core a serve would run on (admin-target.ts opens it so for the other commands)
      const { openCore } = await import('../app/core.js')
      const { ledgerSettingsOf } = await import('../app/open-ledger.js')
      const core = await openCore(paths, { ledger: ledgerSettingsOf(config), recordLedger: true })
      try {
        if (!fresh) await checkImport(source, core.ledger, opts)
        result = await writeImport(source, core.ledger, opts)
      } finally {
        await core.close()
      }
    } finally {
      lock.release()
    }
    progress.done()
    const where = `on the data dir ${paths.root} (no serve running)`
    if (o.json === true) process.stdout.write(JSON.stringify({ pins: result.pins, payments: result.payments, tickets: result.tickets, requeued: result.requeued, withBlocks: result.withBlocks, dataDir: paths.root, via: 'data-dir' }) + '\n')
    else {
      process.stdout.write(`imported ${result.pins} pins, ${result.payments} payments and ${result.tickets} upload tickets\n`)
      if (result.requeued > 0) process.stdout.write(`${result.requeued} pinned pins had no block list in the export: they are queued, and the next pind serve walks their DAGs again (local blocks first, then the network)\n`)
    }
    process.stderr.write(`pind import-ledger: done ${where}\n`)
  } catch (err) {
    progress.done()
    fail('import-ledger', err instanceof ImportError ? new CliError(err.message) : err)
  } finally {
    if (tempCopy != null) await rm(tempCopy, { force: true })
  }
}

/** stdin to a private file (mode 0600), so it can be read twice. */
async function copyStdin (path: string): Promise<void> {
  const fh = await open(path, 'wx', 0o600)
  try {
    for await (const chunk of process.stdin as AsyncIterable<Buffer>) await fh.write(chunk)
  } finally {
    await fh.close()
  }
}
