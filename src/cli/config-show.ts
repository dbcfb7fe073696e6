/**
 * `pind config show`: the configuration serve would run with — every
 * setting's effective value and where it came from (flag, environment,
 * config file, default) — with secrets redacted. Takes the same options as
 * `serve`, and refuses what serve would refuse (exit 2).
 */
import type { Command } from 'commander'
import { SETTINGS } from '../config/settings.js'
import { checksumErrors } from './checksums.js'
import { configWithOrigins, EXIT_USAGE } from './config-from-cli.js'
import { settingOption } from './program.js'

export const REDACTED = '(set; hidden)'

export function configCommand (program: Command): void {
  const config = program.command('config').description('the effective configuration')
  const show = config.command('show')
    .description('print the configuration serve would run with, where each value came from, secrets redacted')
    .option('--json', 'print JSON: {settings: [{key, flag, env, value, from}]}')
    .addHelpText('after', `
Takes the same options as serve, so "pind config show <serve options>" shows what they add up to.
Sources, by precedence: the flag, the PIND_* environment variable, the config file (--config or
PIND_CONFIG), the default. Secrets (PIND_SETTLER_KEY) are shown only as set or not.

Examples:
  pind config show --config /etc/pind/pind.json
  sudo -u pind env $(cat /etc/pind/env) pind config show --json | jq '.settings[] | select(.from != "default")'
`)
  for (const s of SETTINGS.filter(s => s.global !== true && s.flag != null)) show.addOption(settingOption(s))
  show.action(async (o: { json?: boolean }, cmd: Command) => {
    const { config: c, origins, configFile } = configWithOrigins(cmd, 'serve')
    const bad = await checksumErrors(c)
    if (bad.length > 0) {
      for (const e of bad) process.stderr.write(`pind: ${e}\n`)
      process.exit(EXIT_USAGE)
    }
    const rows = SETTINGS.map(s => {
      const v = c[s.key]
      // the networks (config/networks.ts) hold keys only by reference; their bigints as decimal strings
      const value = v === undefined ? null : s.secret === true ? REDACTED : typeof v === 'bigint' ? v.toString() : s.key === 'networks' ? JSON.parse(JSON.stringify(v, (_k, x: unknown) => typeof x === 'bigint' ? x.toString() : x)) as unknown : v
      return { key: s.key, flag: s.flag?.split(' ')[0] ?? null, env: s.env, value, from: origins[s.key] ?? (v === undefined ? 'unset' : 'default') }
    })
    if (o.json === true) {
      process.stdout.write(JSON.stringify({ configFile: configFile ?? null, settings: rows }) + '\n')
      return
    }
    const shown = (v: unknown): string => v === null ? '-' : Array.isArray(v) ? (v.length === 0 ? '(none)' : v.map(x => typeof x === 'object' ? (x as { network?: string }).network : x).join(',')) : String(v)
    const width = Math.max(...rows.map(r => r.key.length))
    const valueWidth = Math.min(48, Math.max(...rows.map(r => shown(r.value).length)))
    const lines = [`${'setting'.padEnd(width)}  ${'value'.padEnd(valueWidth)}  from`]
    for (const r of rows) lines.push(`${r.key.padEnd(width)}  ${shown(r.value).padEnd(valueWidth)}  ${r.from}`)
    if (configFile != null) lines.push('', `config file: ${configFile}`)
    process.stdout.write(lines.join('\n') + '\n')
  })
}
