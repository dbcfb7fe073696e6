/**
 * The payment networks serve accepts (issue 38, docs/networks.md). The
 * single-network settings (--network, --asset, --pay-to, --rpc-url, the settler
 * key, --facilitator-url) make the first entry when --pay-to is set; the
 * `networks` setting (a JSON array: the config file, or PIND_NETWORKS) adds
 * more. Each entry names how it is settled: its own RPC and settler key (a
 * 0600 file, or an environment variable named by `settlerKeyEnv`: never the
 * key itself), or a facilitator URL.
 */
import { statSync } from 'node:fs'
import type { AcceptedNetwork } from '../kernel/accepted-network.js'
import { address, atomic, caip2, ConfigValueError, httpUrl, type Parser, str } from './parse.js'

/** one entry of the `networks` setting, as parsed: the terms, and how it is settled */
export interface NetworkEntry extends AcceptedNetwork<`0x${string}`> {
  rpcUrl?: string
  /** embedded facilitator: a file (mode 0600) holding the settler key */
  settlerKeyFile?: string
  /** embedded facilitator: the name of an environment variable holding the settler key */
  settlerKeyEnv?: string
  facilitatorUrl?: string
  /** warn below this settler balance (wei); default --settler-min-balance */
  settlerMinBalance?: bigint
}

const FIELDS: Record<string, Parser<unknown>> = {
  network: caip2,
  asset: address,
  assetName: str,
  assetVersion: str,
  payTo: address,
  rpcUrl: httpUrl,
  settlerKeyFile: str,
  settlerKeyEnv: (raw) => {
    const s = str(raw)
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(s)) throw new ConfigValueError('expected the name of an environment variable, such as PIND_BASE_SETTLER_KEY')
    return s
  },
  facilitatorUrl: httpUrl,
  settlerMinBalance: atomic()
}
const REQUIRED = ['network', 'asset', 'payTo'] as const

/** `networks`: a JSON array of entries (a JSON string in the environment); each error names its entry */
export const networkEntries: Parser<NetworkEntry[]> = (raw) => {
  let value = raw
  if (typeof raw === 'string') {
    try { value = JSON.parse(raw) } catch { throw new ConfigValueError('expected a JSON array of network entries ([{"network":"eip155:8453","asset":"0x…","payTo":"0x…","rpcUrl":"https://…","settlerKeyFile":"/etc/pind/base.key"}])') }
  }
  if (!Array.isArray(value)) throw new ConfigValueError('expected a JSON array of network entries')
  return value.map((item, i) => networkEntry(item, i))
}

function networkEntry (item: unknown, i: number): NetworkEntry {
  const label = (): string => {
    const n = (item as Record<string, unknown>)?.network
    return `entry ${i + 1}${typeof n === 'string' ? ` (${n.slice(0, 40)})` : ''}`
  }
  if (item == null || typeof item !== 'object' || Array.isArray(item)) throw new ConfigValueError(`${label()}: expected an object such as {"network":"eip155:8453","asset":"0x…","payTo":"0x…",…}`)
  const o = item as Record<string, unknown>
  const out: Record<string, unknown> = { assetName: 'USD Coin', assetVersion: '2' }
  for (const [k, v] of Object.entries(o)) {
    if (k === 'settlerKey') throw new ConfigValueError(`${label()}: "settlerKey" is a secret and is never read from configuration: put the key in a file (mode 0600) named by "settlerKeyFile", or in an environment variable named by "settlerKeyEnv"`)
    const parse = FIELDS[k]
    if (parse == null) throw new ConfigValueError(`${label()}: unknown field "${k.slice(0, 40)}" (known: ${Object.keys(FIELDS).join(', ')})`)
    try { out[k] = parse(v) } catch (err) { throw new ConfigValueError(`${label()}: ${k}: ${(err as Error).message}`) }
  }
  for (const k of REQUIRED) if (out[k] == null) throw new ConfigValueError(`${label()}: "${k}" is required`)
  const e = out as unknown as NetworkEntry
  const keyed = e.settlerKeyFile != null || e.settlerKeyEnv != null
  if (e.settlerKeyFile != null && e.settlerKeyEnv != null) throw new ConfigValueError(`${label()}: set either "settlerKeyFile" or "settlerKeyEnv", not both`)
  if (keyed && e.rpcUrl == null) throw new ConfigValueError(`${label()}: the embedded facilitator (a settler key) needs "rpcUrl"`)
  if (!keyed && e.facilitatorUrl == null) throw new ConfigValueError(`${label()}: no way to settle: set "rpcUrl" with "settlerKeyFile" (or "settlerKeyEnv"), or "facilitatorUrl"`)
  return e
}

/** What settles one network's payments, keys still by reference. */
export interface PaymentNetwork extends NetworkEntry {
  /** embedded: the key as given by the single-network settings (PIND_SETTLER_KEY) */
  settlerKey?: `0x${string}`
}

/** The single-network settings and the `networks` setting, as read by `paymentNetworks`. */
export interface NetworkSettings {
  network: string
  asset: `0x${string}`
  assetName: string
  assetVersion: string
  payTo?: `0x${string}`
  rpcUrl?: string
  settlerKey?: `0x${string}`
  settlerKeyFile?: string
  facilitatorUrl?: string
  networks?: readonly NetworkEntry[]
}

/**
 * Every network payments are taken on, the single-network settings first (when
 * --pay-to is set). A network the single-network settings leave without a
 * facilitator is still listed: serve warns and answers 503 for it, as before.
 */
export function paymentNetworks (c: NetworkSettings): PaymentNetwork[] {
  const out: PaymentNetwork[] = []
  if (c.payTo != null) {
    out.push({
      network: c.network,
      asset: c.asset,
      assetName: c.assetName,
      assetVersion: c.assetVersion,
      payTo: c.payTo,
      ...(c.rpcUrl != null ? { rpcUrl: c.rpcUrl } : {}),
      ...(c.settlerKey != null ? { settlerKey: c.settlerKey } : {}),
      ...(c.settlerKeyFile != null ? { settlerKeyFile: c.settlerKeyFile } : {}),
      ...(c.facilitatorUrl != null ? { facilitatorUrl: c.facilitatorUrl } : {})
    })
  }
  out.push(...(c.networks ?? []))
  return out
}

/** Start-up checks of the networks as a whole: one message per problem, naming the entry. */
export function checkNetworks (c: NetworkSettings, env: Record<string, string | undefined>, errors: string[]): void {
  const seen = new Map<string, string>()
  const fromFlags = c.payTo != null
  paymentNetworks(c).forEach((n, i) => {
    const name = fromFlags && i === 0 ? `--network ${n.network} (the single-network settings)` : `networks entry ${fromFlags ? i : i + 1} (${n.network})`
    const before = seen.get(n.network)
    if (before != null) errors.push(`${name}: ${n.network} is configured twice (also ${before}): one entry per network`)
    else seen.set(n.network, name)
    if (fromFlags && i === 0) return
    if (n.settlerKeyFile != null) {
      try {
        const st = statSync(n.settlerKeyFile)
        if ((st.mode & 0o077) !== 0) errors.push(`${name}: settler key file ${n.settlerKeyFile} must not be readable by group or others (chmod 600)`)
      } catch (err) {
        errors.push(`${name}: cannot read settler key file ${n.settlerKeyFile}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`)
      }
    }
    if (n.settlerKeyEnv != null) {
      const v = env[n.settlerKeyEnv]
      if (v == null || v === '') errors.push(`${name}: the environment variable ${n.settlerKeyEnv} ("settlerKeyEnv") is not set`)
      else if (!/^(0x)?[0-9a-fA-F]{64}$/.test(v.trim())) errors.push(`${name}: the environment variable ${n.settlerKeyEnv} does not hold a 32-byte hex private key`)
    }
  })
}
