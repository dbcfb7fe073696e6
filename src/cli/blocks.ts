/**
 * `pind blocks migrate --to s3`: moves a data dir's blocks from disk into an
 * S3 bucket, through a running serve (which switches to the bucket when
 * done, without a restart) or on a stopped data dir. Every block is read
 * back from the bucket and hash-checked before the data dir is switched;
 * an interrupted run resumes where it stopped.
 */
import type { Command } from 'commander'
import type { MigrateProgress } from '../ipfs/migrate.js'
import { AdminCallError, callAdminLines } from '../admin/client.js'
import { describeVia, runAdmin, writeResult } from './admin-target.js'
import { CliError } from './fail.js'
import { configFromCli, EXIT_USAGE } from './config-from-cli.js'
import { mib, progressLine } from './progress.js'

type Progress = MigrateProgress

export function blocksCommand (program: Command): void {
  const blocks = program.command('blocks').description('the block store: move the blocks into an S3 bucket')
  blocks.command('migrate')
    .description('copy every block from disk into an S3 bucket, verify each one, then switch the data dir to the bucket')
    .requiredOption('--to <store>', 'the store to move to: s3')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', `
The bucket is named by the S3 settings (--s3-bucket, --s3-endpoint, --s3-prefix, --s3-region,
--s3-force-path-style, or PIND_S3_*) and reached with the credentials of this command
(PIND_S3_ACCESS_KEY_ID + PIND_S3_SECRET_ACCESS_KEY, or --s3-credentials-file). The bucket must exist.

Each block is hash-checked on disk, PUT, read back from the bucket and hash-checked again.
Only when every block is in the bucket does the data dir switch (blockstore.json); a running
serve switches at that moment too and goes on without a restart (give it the same S3 settings
and credentials before its next start). Ctrl-C is safe: run it again and it goes on from the
last verified block. The files in blocks/ are left in place; remove them when satisfied.

Examples:
  PIND_S3_ACCESS_KEY_ID=… PIND_S3_SECRET_ACCESS_KEY=… pind blocks migrate --to s3 \\
    --s3-endpoint https://<account>.r2.cloudflarestorage.com --s3-region auto --s3-bucket pind-blocks
  pind blocks migrate --to s3 --s3-bucket pind-blocks --s3-credentials-file /etc/pind/s3.credentials --json
`)
    .action(async (o: { to: string, json?: boolean }, cmd: Command) => {
      const config = configFromCli(cmd, 'admin')
      if (o.to !== 's3') {
        process.stderr.write(`pind blocks migrate: --to ${o.to}: blocks can be moved to s3 only\n`)
        process.exitCode = EXIT_USAGE
        return
      }
      const { s3LocationOf, openS3Backend } = await import('../ipfs/open-backend.js')
      const { readS3Credentials } = await import('../ipfs/s3-settings.js')
      let location
      let credentials
      try {
        location = s3LocationOf(config)
        credentials = readS3Credentials(config)
      } catch (err) {
        process.stderr.write(`pind blocks migrate: ${(err as Error).message}\n`)
        process.exitCode = EXIT_USAGE
        return
      }
      const progress = progressLine('blocks migrate')
      const t0 = Date.now()
      const show = (p: Progress): void => {
        const s = (Date.now() - t0) / 1000
        progress.update(`${p.phase === 'copy' ? 'copying' : p.phase === 'final' ? 'copying what was added meanwhile' : 'switching'}: ${p.scanned} blocks seen, ${p.copied} copied and verified (${mib(p.bytes)}, ${mib(p.bytes / Math.max(s, 0.001))}/s), ${p.resumed} verified before`)
      }
      const abort = new AbortController()
      const onSigint = (): void => { abort.abort(new Error('interrupted')) }
      process.once('SIGINT', onSigint)
      try {
        const out = await runAdmin(config, 'blocks migrate', {
          viaServe: async (socket) => await callAdminLines(socket, '/blocks/migrate', { location, credentials }, show, abort.signal),
          locally: async ({ core }) => {
            const r = core
            const { FsBackend } = await import('../ipfs/fs-backend.js')
            const { migrateToS3 } = await import('../service/admin/blocks-migrate.js')
            const { readBlockstoreRecord } = await import('../datadir/blockstore-record.js')
            const { loggerFor } = await import('./config-from-cli.js')
            const recorded = readBlockstoreRecord(r.paths.blockstoreRecord)
            if (recorded?.backend === 's3') throw new CliError(`this data dir keeps its blocks in S3 already (bucket ${recorded.s3?.bucket ?? '?'}, prefix "${recorded.s3?.prefix ?? ''}")`)
            const source = new FsBackend(r.paths.blocks)
            await source.open()
            return await migrateToS3({
              current: () => source,
              openTarget: async (l) => await openS3Backend(l, { ...config, s3CacheSize: 0 }, { blocksDir: r.paths.blocks, cacheDir: r.paths.s3Cache, log: loggerFor(config), requireReachable: true }),
              lock: core.lock,
              paths: r.paths,
              pins: core.ledger.pins
            }, location, show, abort.signal)
          }
        })
        progress.done()
        writeResult(out, o.json === true, (res) => {
          const lines = [`moved ${String(res.blocks)} blocks into S3 bucket ${String(res.bucket)} (prefix "${String(res.prefix)}"): ${String(res.copied)} copied now (${mib(Number(res.bytes))}), ${String(res.resumed)} by an earlier run; every one read back and hash-checked; ${Number(res.seconds).toFixed(1)} s`,
            `the data dir now keeps its blocks in the bucket; ${String(res.blocksDir)} is no longer used: remove it when satisfied`]
          if (Number(res.missingReferenced) > 0) lines.push(`warning: ${String(res.missingReferenced)} block(s) the ledger references were not on disk before the migration (they were lost already)`)
          return lines.join('\n')
        })
        process.stderr.write(`pind blocks migrate: done ${describeVia(out.how, config.dataDir)}\n`)
      } catch (err) {
        progress.done()
        const e = err as Error
        const known = err instanceof CliError || err instanceof AdminCallError || ['MigrateError', 'BackendChoiceError', 'S3ConfigError', 'MaintenanceBusyError', 'StorageUnavailableError', 'StorageTimeoutError'].includes(e.name)
        process.stderr.write(`pind blocks migrate: ${abort.signal.aborted ? 'interrupted; nothing was switched — run it again to go on from the last verified block' : known ? e.message : `${e.name}: ${e.message}`}\n`)
        process.exitCode = 1
      } finally {
        process.off('SIGINT', onSigint)
      }
    })
}
