/**
 * The block backend of a stopped data dir, for admin commands that work on
 * blocks (gc, settlements check, blocks migrate): what its blockstore.json
 * records, reached with the settings and credentials of this command. A
 * bucket that does not answer is an error here (serve would wait for it).
 */
import type { Config } from '../config/settings.js'
import type { DataDirLayout } from '../datadir/layout.js'
import type { BlockBackend } from '../ipfs/block-backend.js'
import { CliError } from './fail.js'
import { loggerFor } from './config-from-cli.js'

export async function openLocalBackend (config: Readonly<Config>, paths: DataDirLayout): Promise<BlockBackend> {
  const { openDataDirBackend, BackendChoiceError } = await import('../ipfs/open-backend.js')
  const { S3ConfigError } = await import('../ipfs/s3-settings.js')
  const { BlockstoreRecordError } = await import('../datadir/blockstore-record.js')
  try {
    return await openDataDirBackend(config, paths, { log: loggerFor(config), record: false, requireReachable: true })
  } catch (err) {
    if (err instanceof BackendChoiceError || err instanceof S3ConfigError || err instanceof BlockstoreRecordError) throw new CliError(err.message)
    throw err
  }
}
