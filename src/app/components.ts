/**
 * One assembly for `pind serve` and the admin commands that work on a
 * stopped data dir: the core (./core.ts: the ledger, staging, the blocks'
 * usage, settlement actions, keys) and the components built on it from the
 * settings: the denylists, the denials they make with the operator's rules,
 * the chain's view of payment authorizations. Each is built from what it
 * needs, once, when first asked for (an admin command that needs none pays
 * for none), and stop() stops what was built, last built first.
 */
import type { Config } from '../config/settings.js'
import type { DataDirLayout } from '../datadir/layout.js'
import type { DenylistSources } from '../denylist/sources.js'
import type { Logger } from '../kernel/log.js'
import type { AuthorizationStateReader } from '../payment/authorization-state.js'
import type { Denials } from '../service/serving/denials.js'
import { openCore, type Core, type CoreOptions } from './core.js'
import type { LedgerSettings } from './open-ledger.js'

/** the settings the components are built from */
export type AssemblySettings = Pick<Config, 'denylist' | 'rpcUrl' | 'network' | 'asset'> & Partial<LedgerSettings>

export interface Components {
  readonly core: Core
  /** the denylist files, read (serve follows them as they change: `follow`) */
  denylists(): Promise<DenylistSources>
  /** the operator's denials (the ledger's) and the denylists': one answer to what is refused */
  denials(): Promise<Denials>
  /** the asset's authorization state on chain; undefined without --rpc-url */
  chain(): Promise<AuthorizationStateReader | undefined>
  stop(): Promise<void>
}

export interface AssemblyOptions extends CoreOptions {
  log: Logger
  /** re-read the denylist files as they change (serve) */
  follow?: boolean
}

export async function assemble (paths: DataDirLayout, settings: AssemblySettings, opts: AssemblyOptions): Promise<Components> {
  const core = await openCore(paths, { ...opts, ledger: settings })
  const stops: Array<() => Promise<void>> = [async () => { await core.close() }]
  let denylists: Promise<DenylistSources> | undefined
  let denials: Promise<Denials> | undefined
  let chain: Promise<AuthorizationStateReader> | undefined
  const components: Components = {
    core,
    denylists: async () => await (denylists ??= (async () => {
      const { DenylistSources } = await import('../denylist/sources.js')
      const files = new DenylistSources(settings.denylist, opts.log.child({ component: 'denylist' }))
      await files.load()
      if (opts.follow === true) files.watch()
      stops.push(async () => { await files.close() })
      return files
    })()),
    denials: async () => await (denials ??= (async () => {
      const { Denials } = await import('../service/serving/denials.js')
      const files = await components.denylists()
      const d = await Denials.open({ ledger: core.ledger.denials, files: () => files.files() })
      stops.push(async () => { d.close() })
      return d
    })()),
    chain: async () => {
      const rpcUrl = settings.rpcUrl
      if (rpcUrl == null) return undefined
      return await (chain ??= (async () => {
        const { authorizationStateReader } = await import('../payment/authorization-state.js')
        return authorizationStateReader({ network: settings.network, rpcUrl, asset: settings.asset })
      })())
    },
    stop: async () => {
      for (const stop of stops.splice(0).reverse()) await stop()
    }
  }
  return components
}
