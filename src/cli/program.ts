/**
 * The commander program: global options, one subcommand per admin task.
 * Heavy modules (lmdb, helia, x402) are imported only inside actions, after
 * the configuration is known, so `--help` and `--version` stay instant and
 * the native-addon cache path is set before lmdb loads.
 */
import { Command, Option } from 'commander'
import { SETTINGS, type Setting } from '../config/settings.js'
import { secureDataDir } from '../datadir/secure.js'
import { versionLine } from '../kernel/version.js'
import { checksumErrors } from './checksums.js'
import { configFromCli, EXIT_USAGE, loggerFor } from './config-from-cli.js'
import { configCommand } from './config-show.js'
import { blocksCommand } from './blocks.js'
import { exportLedgerCommand } from './export-ledger.js'
import { gcCommand } from './gc.js'
import { denyCommand } from './deny.js'
import { importLedgerCommand } from './import-ledger.js'
import { ledgerCommand } from './ledger.js'
import { keysCommand } from './keys.js'
import { pinsCommand } from './pins.js'
import { routingCommand } from './routing.js'
import { settlementsCommand } from './settlements.js'
import { statusCommand } from './status.js'

/** A setting as a commander option: its description, environment variable and default in the help. */
export function settingOption (s: Setting): Option {
  const def = s.default === undefined ? '' : `; default ${Array.isArray(s.default) ? (s.default.length === 0 ? 'none' : s.default.join(',')) : String(s.default)}`
  return new Option(s.flag as string, `${s.description} (env ${s.env}${def})`)
}

function serveCommand (program: Command): void {
  const serveCmd = program.command('serve')
    .description('run the pinning service (HTTP API, gateway, libp2p node)')
    .addHelpText('after', '\nExamples:\n  pind serve --data-dir /var/lib/pind --host 0.0.0.0 --port 8080\n  PIND_PAY_TO=0x... PIND_RPC_URL=https://rpc.mainnet.taiko.xyz PIND_SETTLER_KEY_FILE=/etc/pind/settler.key pind serve\n')
  for (const s of SETTINGS.filter(s => s.global !== true && s.flag != null)) serveCmd.addOption(settingOption(s))
  serveCmd.action(async (_opts, cmd: Command) => {
    const config = configFromCli(cmd, 'serve')
    const bad = await checksumErrors(config)
    if (bad.length > 0) {
      for (const e of bad) process.stderr.write(`pind: ${e}\n`)
      process.exit(EXIT_USAGE)
    }
    const log = loggerFor(config)
    // before lmdb loads: the binary unpacks lmdb's native addon into the data dir
    const secured = secureDataDir(config.dataDir)
    for (const f of secured.fixed) log.warn('closed group and other access to the data dir', { path: f.path, was: f.mode })
    const { serve } = await import('./serve.js')
    await serve(config, log)
  })
}

/**
 * The command the arguments name, read as commander reads them: the first argument that is not
 * a program option or an option's value. Undefined when there is none before `--`, when it is not
 * a command, or when an argument is an option the program does not have (or asks for help or
 * the version), so that every command is built and commander answers as usual.
 */
export function commandNamed (args: readonly string[], options: readonly Option[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string
    if (a === '--') return undefined
    if (!a.startsWith('-') || a === '-') return Object.hasOwn(COMMANDS, a) ? a : undefined
    const eq = a.indexOf('=')
    const flag = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a
    const o = options.find(o => o.long === flag || o.short === flag)
    if (o == null || o.long === '--version' || o.long === '--help') return undefined
    if (flag !== a) continue // --flag=value
    const next = args[i + 1]
    // a required value is the next argument whatever it is; an optional one unless it looks like an option
    if (o.required || (o.optional && next != null && !next.startsWith('-'))) i++
  }
  return undefined
}

/** Each command, by name: adds itself (its subcommands, options and action) to the program. */
const COMMANDS: Record<string, (program: Command) => void> = {
  serve: serveCommand,
  gc: gcCommand,
  'export-ledger': exportLedgerCommand,
  'import-ledger': importLedgerCommand,
  ledger: ledgerCommand,
  keys: keysCommand,
  settlements: settlementsCommand,
  pins: pinsCommand,
  status: statusCommand,
  config: configCommand,
  routing: routingCommand,
  deny: denyCommand,
  blocks: blocksCommand
}

/**
 * The program for these arguments (without node's and the script's). A command named on the
 * command line is built alone: an admin command's start does not build the dozens of others'
 * options. Every command is built when none is named, or when what is named is not one
 * (help, a mistyped command: commander's listing and "did you mean" need them all).
 */
export function buildProgram (args: readonly string[] = process.argv.slice(2)): Command {
  const program = new Command('pind')
    .description('A paid IPFS pinning service in one binary: Helia node, LMDB ledger, x402 payments.')
    .version(versionLine(), '-V, --version', 'print the version, commit and build date')
    .option('--config <file>', 'JSON config file (env PIND_CONFIG); flags > environment > file > defaults')
    // every subcommand's help lists the global options too (--data-dir, --config, --log-level)
    .configureHelp({ showGlobalOptions: true })
    // before any subcommand is added, so they inherit it: usage errors reach main.ts (exit 2)
    .exitOverride()
  for (const s of SETTINGS.filter(s => s.global === true && s.flag != null)) program.addOption(settingOption(s))

  const named = commandNamed(args, program.options)
  for (const [name, add] of Object.entries(COMMANDS)) if (named == null || named === name) add(program)

  // a usage error shows the error, commander's "did you mean", and where the help is: not the whole help
  const hint = (cmd: Command, path: string): void => {
    cmd.showHelpAfterError(`(see: ${path} --help)`)
    for (const sub of cmd.commands) hint(sub, `${path} ${sub.name()}`)
  }
  hint(program, 'pind')
  return program
}
