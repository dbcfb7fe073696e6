/**
 * `pind gc`: sweep expired pins, then remove every block no live pin
 * references. Through a running serve's admin socket, or on a stopped data dir.
 */
import type { Command } from 'commander'
import { AdminCallError, callAdminLines } from '../admin/client.js'
import { runGc, type GcProgress } from '../service/background/gc.js'
import { runAdmin, describeVia, writeResult } from './admin-target.js'
import { configFromCli } from './config-from-cli.js'
import { CliError, fail } from './fail.js'
import { openLocalBackend } from './local-backend.js'
import { mib, progressLine } from './progress.js'

export function gcCommand (program: Command): void {
  program.command('gc')
    .description('sweep expired pins, then remove every block no live pin references')
    .option('--dry-run', 'report what would be removed; change nothing')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', `
Runs inside a running serve (through its admin socket; uploads and fetches go on) or on a
stopped data dir. Safe to interrupt (Ctrl-C) and run again.

Examples:
  pind gc --dry-run
  pind gc --data-dir /var/lib/pind --json
`)
    .action(async (o: { dryRun?: boolean, json?: boolean }, cmd: Command) => {
      const config = configFromCli(cmd, 'admin')
      const progress = progressLine(o.dryRun === true ? 'gc (dry run)' : 'gc')
      const show = (p: GcProgress): void => { progress.update(`${p.phase}: ${p.scanned} blocks scanned, ${p.removed} ${o.dryRun === true ? 'to remove' : 'removed'} (${mib(p.freedBytes)})`) }
      const abort = new AbortController()
      const onSigint = (): void => { abort.abort(new Error('interrupted')) }
      process.once('SIGINT', onSigint)
      try {
        const out = await runAdmin(config, 'gc', {
          viaServe: async (socket) => await callAdminLines(socket, '/gc', { dryRun: o.dryRun === true }, show, abort.signal),
          locally: async ({ core }) => await runGc(core.gc, { dryRun: o.dryRun === true }, show, abort.signal),
          // the data dir's block store (blocks/, or the bucket it records), reached with this command's settings
          blocks: async (paths) => await openLocalBackend(config, paths)
        })
        progress.done()
        const where = describeVia(out.how, config.dataDir)
        writeResult(out, o.json === true, (res) =>
          `${res.expiredPins} expired pin(s) ${res.dryRun ? 'would be ' : ''}swept; ${res.dryRun ? 'would remove' : 'removed'} ${res.removedBlocks} of ${res.scannedBlocks} blocks, ${res.freedBytes} bytes (${mib(res.freedBytes)}); kept ${res.keptBlocks}; ${res.ms} ms`)
        process.stderr.write(`pind gc: done ${where}\n`)
      } catch (err) {
        progress.done()
        const interrupted = abort.signal.aborted && !(err instanceof CliError || err instanceof AdminCallError)
        fail('gc', interrupted ? new CliError('interrupted; nothing half-done — run it again to finish') : err)
      } finally {
        process.off('SIGINT', onSigint)
      }
    })
}
