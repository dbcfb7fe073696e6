/**
 * Turns commander's parsed options into a validated Config, or prints one
 * message per bad value and exits with code 2.
 */
import type { Command } from 'commander'
import { loadConfig } from '../config/load.js'
import { type Config, SETTINGS } from '../config/settings.js'
import { createLogger, type Logger } from '../log.js'

export const EXIT_USAGE = 2

/** `also`: serve settings an admin subcommand reads besides the global ones */
export function configFromCli (cmd: Command, scope: 'serve' | 'admin', also: ReadonlyArray<keyof Config> = []): Readonly<Config> {
  const opts = cmd.optsWithGlobals<Record<string, unknown>>()
  const flags: Partial<Record<keyof Config, unknown>> = {}
  for (const s of SETTINGS) {
    if (opts[s.key] !== undefined) flags[s.key] = opts[s.key]
  }
  const configFile = (opts.config as string | undefined) ?? process.env.PIND_CONFIG
  const { config, errors } = loadConfig({ flags, env: process.env, configFile: configFile === '' ? undefined : configFile, scope, also })
  if (config == null) {
    for (const e of errors) process.stderr.write(`pind: ${e}\n`)
    process.exit(EXIT_USAGE)
  }
  // pkg unpacks native addons (lmdb) into this folder before loading them; the
  // default (~/.cache) may not be writable for a service user.
  process.env.PKG_NATIVE_CACHE_PATH ??= `${config.dataDir}/.native`
  return config
}

export function loggerFor (config: Readonly<Config>): Logger {
  return createLogger({ level: config.logLevel })
}
