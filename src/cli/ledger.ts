/**
 * `pind ledger migrate --to postgres|lmdb`: moves a stopped data dir's ledger
 * into PostgreSQL, or back into its own ledger.mdb (src/service/admin/ledger-migrate.ts
 * says what moves). The data dir switches only once the target reads back as
 * the source; a run that stopped part way is run again and resumes.
 */
import { existsSync } from 'node:fs'
import type { Command } from 'commander'
import { acquireLock, DataDirLockedError, lockHolder } from '../datadir/lock.js'
import { layout } from '../datadir/layout.js'
import { configFromCli } from './config-from-cli.js'
import { CliError, fail, usage } from './fail.js'
import { count, progressLine } from './progress.js'

export function ledgerCommand (program: Command): void {
  const ledger = program.command('ledger').description('the ledger: move it between LMDB and PostgreSQL')
  ledger.command('migrate')
    .description('move a stopped data dir\'s ledger into PostgreSQL (--to postgres) or back into its ledger.mdb (--to lmdb), verified')
    .requiredOption('--to <lmdb|postgres>', 'where the ledger goes')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', `
Moves pins with their block lists, payments (archived ones too), upload tickets, operator tokens and
every revocation, the operator's denials and the signing keys; the provide schedule is rebuilt from
the pins. Then the target is read back and compared with the source, and only then does the data
dir switch: --to postgres writes ledger.json and renames ledger.mdb (and its archive) to
*.moved-to-postgres-<time>, kept until you remove them; --to lmdb sets ledger.json aside. A run
that stopped part way is run again: it resumes. No pind serve may be running on the data dir, nor
on any other data dir sharing the database.

Examples:
  PIND_DATABASE_PASSWORD=… pind ledger migrate --to postgres --database-url postgres://pind@db:5432/pind --data-dir /var/lib/pind
  pind ledger migrate --to lmdb --data-dir /var/lib/pind
`)
    .action(async (o: { to: string, json?: boolean }, cmd: Command) => {
      if (o.to !== 'postgres' && o.to !== 'lmdb') usage('ledger migrate', `--to takes lmdb or postgres, not "${o.to}"`)
      await migrate(o.to as 'lmdb' | 'postgres', o.json === true, cmd)
    })
}

async function migrate (to: 'lmdb' | 'postgres', json: boolean, cmd: Command): Promise<void> {
  const config = configFromCli(cmd, 'admin')
  const paths = layout(config.dataDir)
  const progress = progressLine('ledger migrate')
  try {
    if (!existsSync(paths.root)) throw new CliError(`data dir ${paths.root} does not exist (set --data-dir or PIND_DATA_DIR)`)
    const holder = lockHolder(paths.lock)
    if (holder != null) throw new CliError(`data dir ${paths.root} is in use by ${holder.holder} (pid ${holder.pid}): the ledger moves on a stopped data dir only`)
    let lock
    try {
      lock = acquireLock(paths.lock, paths.root, 'pind ledger migrate')
    } catch (err) {
      if (err instanceof DataDirLockedError) throw new CliError(err.message)
      throw err
    }
    try {
      const { openMigration, ledgerSettingsOf, LedgerChoiceError } = await import('../app/open-ledger.js')
      const { migrateLedger, LedgerMigrateError } = await import('../service/admin/ledger-migrate.js')
      const sides = await openMigration(paths, ledgerSettingsOf(config), to).catch((err: unknown) => {
        throw err instanceof LedgerChoiceError ? new CliError(err.message) : err
      })
      let report
      try {
        report = await migrateLedger({ ...sides, onProgress: (step, done) => { progress.update(`${step}: ${count(done)}`) } }).catch((err: unknown) => {
          throw err instanceof LedgerMigrateError ? new CliError(err.message) : err
        })
        sides.switchOver()
      } finally {
        await sides.close()
      }
      progress.done()
      if (json) process.stdout.write(JSON.stringify({ to, ...report, dataDir: paths.root }) + '\n')
      else {
        process.stdout.write(`moved ${count(report.pins)} pins, ${count(report.payments)} payments, ${count(report.tickets)} upload tickets${report.skipped > 0 ? ` (${count(report.skipped)} were there already)` : ''}, ${report.tokens} operator tokens, ${report.revocations} revocations, ${report.denials} denials and ${report.keys} signing keys\n`)
        process.stdout.write(`verified: the ${to === 'postgres' ? 'database' : 'ledger.mdb'} reads back as the source; this data dir now uses it\n`)
      }
    } finally {
      lock.release()
    }
  } catch (err) {
    progress.done()
    fail('ledger migrate', err)
  }
}
