/**
 * The commander program: global options, one subcommand per admin task.
 * Heavy modules (lmdb, helia, x402) are imported only inside actions, after
 * the configuration is known, so `--help` and `--version` stay instant and
 * the native-addon cache path is set before lmdb loads.
 */
import { Command, Option } from 'commander'
import { SETTINGS } from '../config/settings.js'
import { secureDataDir } from '../datadir/secure.js'
import { VERSION } from '../version.js'
import { configFromCli, loggerFor } from './config-from-cli.js'
import { exportLedgerCommand } from './export-ledger.js'
import { gcCommand } from './gc.js'
import { importLedgerCommand } from './import-ledger.js'
import { keysCommand } from './keys.js'
import { settlementsCommand } from './settlements.js'

export function buildProgram (): Command {
  const program = new Command('pind')
    .description('A paid IPFS pinning service in one binary: Helia node, LMDB ledger, x402 payments.')
    .version(VERSION, '-V, --version', 'print the version')
    .option('--config <file>', 'JSON config file (env PIND_CONFIG); flags > environment > file > defaults')
    .showHelpAfterError()
    // before any subcommand is added, so they inherit it: usage errors reach main.ts (exit 2)
    .exitOverride()
  for (const s of SETTINGS.filter(s => s.global === true && s.flag != null)) {
    program.addOption(new Option(s.flag as string, `${s.description} (env ${s.env})`))
  }

  const serveCmd = program.command('serve')
    .description('run the pinning service (HTTP API, gateway, libp2p node)')
    .addHelpText('after', '\nExamples:\n  pind serve --data-dir /var/lib/pind --host 0.0.0.0 --port 8080\n  PIND_PAY_TO=0x... PIND_RPC_URL=https://rpc.mainnet.taiko.xyz PIND_SETTLER_KEY_FILE=/etc/pind/settler.key pind serve\n')
  for (const s of SETTINGS.filter(s => s.global !== true && s.flag != null)) {
    serveCmd.addOption(new Option(s.flag as string, `${s.description} (env ${s.env})`))
  }
  serveCmd.action(async (_opts, cmd: Command) => {
    const config = configFromCli(cmd, 'serve')
    const log = loggerFor(config)
    // before lmdb loads: the binary unpacks lmdb's native addon into the data dir
    const secured = secureDataDir(config.dataDir)
    for (const f of secured.fixed) log.warn('closed group and other access to the data dir', { path: f.path, was: f.mode })
    const { serve } = await import('./serve.js')
    await serve(config, log)
  })

  gcCommand(program)
  exportLedgerCommand(program)
  importLedgerCommand(program)
  keysCommand(program)
  settlementsCommand(program)

  return program
}
