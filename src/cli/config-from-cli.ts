/**
 * Turns commander's parsed options into a validated Config, or prints one
 * message per bad value and exits with code 2.
 */
import type { Command } from 'commander'
import { loadConfig } from '../config/load.js'
import { checkDataDirAccess, DataDirAccessError } from '../datadir/access.js'
import { type Config, SETTINGS } from '../config/settings.js'
import { createLogger, type Logger } from '../kernel/log.js'

export const EXIT_USAGE = 2

/** `also`: serve settings an admin subcommand reads besides the global ones */
export function configFromCli (cmd: Command, scope: 'serve' | 'admin', also: ReadonlyArray<keyof Config> = []): Readonly<Config> {
  return configWithOrigins(cmd, scope, also).config
}

/** The configuration and where each value came from (`pind config show`). */
export function configWithOrigins (cmd: Command, scope: 'serve' | 'admin', also: ReadonlyArray<keyof Config> = []): { config: Readonly<Config>, origins: Partial<Record<keyof Config, string>>, configFile?: string } {
  const opts = cmd.optsWithGlobals<Record<string, unknown>>()
  const flags: Partial<Record<keyof Config, unknown>> = {}
  for (const s of SETTINGS) {
    if (opts[s.key] !== undefined) flags[s.key] = opts[s.key]
  }
  const configFile = (opts.config as string | undefined) ?? process.env.PIND_CONFIG
  const { config, errors, origins } = loadConfig({ flags, env: process.env, configFile: configFile === '' ? undefined : configFile, scope, also })
  if (config == null) {
    for (const e of errors) process.stderr.write(`pind: ${e}\n`)
    process.exit(EXIT_USAGE)
  }
  // before anything touches the data dir (the binary unpacks lmdb's addon into it first):
  // it must be this user's, or the command stops here with one line saying what to do
  try {
    checkDataDirAccess(config.dataDir, { create: commandPath(cmd) === 'serve', command: commandPath(cmd) })
  } catch (err) {
    if (!(err instanceof DataDirAccessError)) throw err
    process.stderr.write(`pind: ${err.message}\n`)
    process.exit(1)
  }
  // pkg unpacks native addons (lmdb) into this folder before loading them; the
  // default (~/.cache) may not be writable for a service user.
  process.env.PKG_NATIVE_CACHE_PATH ??= `${config.dataDir}/.native`
  return { config, origins: origins ?? {}, ...(configFile != null && configFile !== '' ? { configFile } : {}) }
}

/** `keys mint`, `serve`: the subcommand as typed, without the program name */
function commandPath (cmd: Command): string {
  const names: string[] = []
  for (let c: Command | null = cmd; c?.parent != null; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

export function loggerFor (config: Readonly<Config>): Logger {
  return createLogger({ level: config.logLevel })
}
