/**
 * Builds the frozen Config from flags > environment > config file > defaults,
 * and reports one clear message per bad value.
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import { checkNetworks } from './networks.js'
import { type Config, SETTINGS, type Setting } from './settings.js'

export interface ConfigSources {
  /** values from commander, keyed by setting key; undefined when the flag was not given */
  flags: Partial<Record<keyof Config, unknown>>
  env: Record<string, string | undefined>
  /** path of a JSON config file (from --config or PIND_CONFIG) */
  configFile?: string
  /** only global settings are read for admin subcommands */
  scope: 'serve' | 'admin'
  /** admin scope: serve settings this subcommand reads as well (e.g. the RPC for `settlements check`) */
  also?: ReadonlyArray<keyof Config>
}

export interface ConfigResult {
  config?: Readonly<Config>
  errors: string[]
  /** where each value came from: the flag, the environment variable, the config file, or "default" (unset settings are absent) */
  origins?: Partial<Record<keyof Config, string>>
}

export function loadConfig (sources: ConfigSources): ConfigResult {
  const errors: string[] = []
  const settings = SETTINGS.filter(s => sources.scope === 'serve' || s.global === true || sources.also?.includes(s.key) === true)
  const file = readConfigFile(sources.configFile, errors)
  const known = new Set(SETTINGS.map(s => s.key as string))
  for (const k of Object.keys(file)) {
    if (!known.has(k)) errors.push(`config file ${sources.configFile}: unknown setting "${k}"`)
    else if (SETTINGS.some(s => s.key === k && s.secret === true)) errors.push(`config file ${sources.configFile}: "${k}" is a secret and is read from the environment only (or use a key file)`)
  }
  const out: Record<string, unknown> = {}
  const origins: Partial<Record<keyof Config, string>> = {}
  for (const s of settings) {
    const picked = pick(s, sources, file)
    if (picked == null) {
      if (s.default !== undefined) {
        out[s.key] = s.default
        origins[s.key] = 'default'
      }
      continue
    }
    try {
      out[s.key] = s.parse(picked.raw)
      origins[s.key] = picked.where
    } catch (err) {
      const shown = s.secret === true ? '(hidden)' : JSON.stringify(withoutPassword(picked.raw))
      errors.push(s.quiet === true ? `invalid ${picked.where}: ${(err as Error).message}` : `invalid ${picked.where}: ${shown}: ${(err as Error).message}`)
    }
  }
  if (typeof out.dataDir === 'string') out.dataDir = resolve(out.dataDir)
  if (Array.isArray(out.denylist)) out.denylist = out.denylist.map(p => resolve(p as string))
  if (sources.scope === 'serve') {
    crossCheck(out as unknown as Config, errors)
    if (Array.isArray(out.networks)) checkNetworks(out as unknown as Config, sources.env, errors)
  }
  if (errors.length > 0) return { errors }
  return { config: Object.freeze(out as unknown as Config), errors, origins }
}

function pick (s: Setting, sources: ConfigSources, file: Record<string, unknown>): { raw: unknown, where: string } | undefined {
  const flagName = s.flag?.split(' ')[0]
  const fromFlag = sources.flags[s.key]
  if (fromFlag !== undefined && flagName != null) return { raw: fromFlag, where: `${flagName}` }
  const fromEnv = sources.env[s.env]
  if (fromEnv !== undefined && fromEnv !== '') return { raw: fromEnv, where: `${s.env}` }
  if (s.key in file && s.secret !== true) {
    return { raw: file[s.key], where: `"${s.key}" in ${sources.configFile}` }
  }
  return undefined
}

function readConfigFile (path: string | undefined, errors: string[]): Record<string, unknown> {
  if (path == null) return {}
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    errors.push(`cannot read config file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    return {}
  }
  try {
    const parsed: unknown = JSON.parse(text)
    if (parsed == null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object')
    return parsed as Record<string, unknown>
  } catch (err) {
    errors.push(`config file ${path} is not valid JSON: ${(err as Error).message}`)
    return {}
  }
}

function crossCheck (c: Config, errors: string[]): void {
  if (c.priceMin > c.priceMax) errors.push(`invalid prices: --price-min (${c.priceMin}) is above --price-max (${c.priceMax})`)
  if (c.settlerKey != null && c.settlerKeyFile != null) errors.push('set either PIND_SETTLER_KEY or --settler-key-file, not both')
  if (c.settlerKeyFile != null) {
    try {
      const st = statSync(c.settlerKeyFile)
      if ((st.mode & 0o077) !== 0) errors.push(`settler key file ${c.settlerKeyFile} must not be readable by group or others (chmod 600)`)
    } catch (err) {
      errors.push(`cannot read settler key file ${c.settlerKeyFile}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`)
    }
  }
  for (const p of c.denylist ?? []) {
    try {
      const st = statSync(p)
      if (!st.isFile() && !st.isDirectory()) errors.push(`--denylist ${p}: not a file or directory`)
      else accessSync(p, st.isDirectory() ? constants.R_OK | constants.X_OK : constants.R_OK)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      errors.push(`--denylist ${p}: ${code === 'ENOENT' ? 'no such file or directory' : code ?? 'cannot be read'}`)
    }
  }
  const embedded = c.settlerKey != null || c.settlerKeyFile != null
  if (embedded && c.rpcUrl == null) errors.push('the embedded facilitator (settler key) needs --rpc-url')
  if (embedded && c.payTo == null) errors.push('a settler key is set (the embedded facilitator) but no --pay-to: payments would have nowhere to go; set --pay-to <address> (or remove the settler key to run without paid writes)')
  // (a routing value that did not parse is reported already)
  if (c.routing?.includes('delegated') === true && c.delegatedRoutingUrl == null) errors.push('--routing delegated needs --delegated-routing-url')
}

/** a value as an error may show it: a URL's password (user:password@) masked */
function withoutPassword (raw: unknown): unknown {
  if (typeof raw !== 'string') return raw
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/:@]*):.*@/i, '$1:***@')
}
