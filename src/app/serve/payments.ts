/**
 * Serve's payment side from the settings: the gate that quotes, verifies and
 * settles (when there is a pay-to address and a facilitator), what /ready and
 * `pind status` say of it, and the reconciliation of settlement notes earlier
 * runs left (it needs the chain: without --rpc-url the notes are only counted).
 */
import { readFileSync } from 'node:fs'
import { privateKeyHex } from '../../config/parse.js'
import type { Config } from '../../config/settings.js'
import type { Logger } from '../../kernel/log.js'
import type { SettlementNotes } from '../../ledger/settlements.js'
import { authorizationStateReader, type AuthorizationStateReader } from '../../payment/authorization-state.js'
import type { FacilitatorChoice } from '../../payment/facilitator.js'
import type { NetworkTerms } from '../../payment/lane.js'
import { paymentNetworks, type PaymentNetwork } from '../../config/networks.js'
import { PaymentGate } from '../../payment/gate.js'
import type { PriceSettings } from '../../payment/pricing.js'
import type { SettlementsAdminDeps } from '../../service/admin/settlements-admin.js'
import type { PaymentsCheck } from '../../service/admin/status.js'
import type { settlementActions } from '../../service/payments/settlement-fulfil.js'
import { logSummary, settlementReconciler, type ReconcileReport } from '../../service/payments/settlement-reconcile.js'
import type { Component } from '../lifecycle.js'

/** a note still unused is read again at most this long after the last pass */
const RECONCILE_INTERVAL_S = 300

export function pricesOf (config: Readonly<Config>): PriceSettings {
  return { rate: config.priceRate, minimum: config.priceMin, maximum: config.priceMax, maxMonths: config.maxMonths }
}

/**
 * The payment gate, when this server can take payments (a pay-to address and a
 * facilitator on at least one network: the single-network settings, then the
 * `networks` entries, docs/networks.md); built, not started.
 */
export function paymentGate (config: Readonly<Config>, prices: PriceSettings, log: Logger, onEvent: ConstructorParameters<typeof PaymentGate>[2], env: Record<string, string | undefined> = process.env): PaymentGate | undefined {
  const all = paymentNetworks(config)
  if (all.length === 0) {
    log.warn('no --pay-to address: paid writes are disabled')
    return undefined
  }
  const terms: NetworkTerms[] = []
  for (const n of all) {
    const facilitator = facilitatorOf(n, env)
    if (facilitator == null) {
      log.warn('no facilitator (settler key + RPC URL, or --facilitator-url): paid writes are disabled', { network: n.network })
      continue
    }
    terms.push({
      network: n.network,
      asset: n.asset,
      assetName: n.assetName,
      assetVersion: n.assetVersion,
      payTo: n.payTo,
      ...(n.rpcUrl != null ? { rpcUrl: n.rpcUrl } : {}),
      facilitator,
      settlerMinBalance: n.settlerMinBalance ?? config.settlerMinBalance
    })
  }
  const [first, ...more] = terms
  if (first == null) return undefined
  return new PaymentGate({
    ...first,
    ...(more.length > 0 ? { more } : {}),
    maxTimeoutSeconds: config.paymentTimeout,
    prices,
    settleDeadlineMs: config.settleTimeout * 1000
  }, log.child({ component: 'payment' }), onEvent)
}

/** what settles one network's payments: its settler key (never logged) with its RPC, or its facilitator URL */
function facilitatorOf (n: PaymentNetwork, env: Record<string, string | undefined>): FacilitatorChoice | undefined {
  const raw = n.settlerKey ?? (n.settlerKeyFile != null ? readFileSync(n.settlerKeyFile, 'utf8') : n.settlerKeyEnv != null ? env[n.settlerKeyEnv] : undefined)
  const settlerKey = raw != null ? privateKeyHex(raw) : undefined
  if (settlerKey != null && n.rpcUrl != null) return { kind: 'embedded', network: n.network, rpcUrl: n.rpcUrl, settlerKey, asset: n.asset }
  if (n.facilitatorUrl != null) return { kind: 'remote', url: n.facilitatorUrl }
  return undefined
}

/** whether paid writes can work, and why not (/ready, `pind status`, the start-up summary) */
export function paymentsCheck (config: Readonly<Config>, gate: PaymentGate | undefined): () => PaymentsCheck {
  return () => gate?.status() ?? (config.payTo == null
    ? { state: 'no-pay-to', ok: false, message: 'no --pay-to address: paid writes answer 503' }
    : { state: 'no-facilitator', ok: false, message: 'no facilitator (a settler key and --rpc-url, or --facilitator-url): paid writes answer 503' })
}

/**
 * The chain readers of the networks beside the first one's (`first`, from the single-network
 * settings' --rpc-url): each network with an rpcUrl, by CAIP-2 id, the first included.
 */
export function networkChains (config: Readonly<Config>, first: AuthorizationStateReader | undefined): Map<string, AuthorizationStateReader> {
  const out = new Map<string, AuthorizationStateReader>()
  if (first?.network != null) out.set(first.network, first)
  for (const n of paymentNetworks(config)) {
    if (n.rpcUrl == null || out.has(n.network)) continue
    out.set(n.network, authorizationStateReader({ network: n.network, rpcUrl: n.rpcUrl, asset: n.asset }))
  }
  return out
}

/**
 * Reconciliation of the settlement notes earlier runs left, as a component
 * (a first pass once started, then on an interval), and what the admin
 * `settlements` commands use of it. Several networks: one reconciler per
 * network with an RPC, each reading the notes of payments made on it (notes
 * of older versions: on --network); an admin pass runs them in turn.
 */
export function settlementReconciliation (config: Readonly<Config>, notes: SettlementNotes, chain: AuthorizationStateReader | undefined, startedAt: Date, act: ReturnType<typeof settlementActions>, log: Logger, when?: () => boolean, fleet?: { self: string, alive: () => Promise<ReadonlySet<string>>, running: (paymentId: string) => boolean }, chains?: ReadonlyMap<string, AuthorizationStateReader>): { component: Component, admin: SettlementsAdminDeps } {
  const readers = [...(chains ?? new Map<string, AuthorizationStateReader>()).values()]
  if (chain != null && !readers.includes(chain)) readers.unshift(chain)
  if (readers.length === 0) {
    return {
      component: { start: () => { void logSummary(notes, log, 'no --rpc-url to check them against the chain').catch((err: unknown) => { log.warn('could not read the settlement notes', { error: (err as Error).message }) }) }, stop: () => {} },
      admin: { notes, release: act.release }
    }
  }
  const reconcilers = readers.map(r => settlementReconciler(notes, r, { intervalMs: Math.min(config.expirySweepInterval, RECONCILE_INTERVAL_S) * 1000, log: readers.length > 1 ? log.child({ network: r.network }) : log, startedAt, legacyNetwork: config.network, ...act, ...(when != null ? { when } : {}), ...fleet }))
  if (reconcilers.length === 1) {
    const reconciler = reconcilers[0] as typeof reconcilers[number]
    return { component: reconciler, admin: { notes, reconcile: reconciler.run, release: act.release } }
  }
  const component: Component = {
    start: () => { for (const r of reconcilers) r.start() },
    stop: async () => { await Promise.all(reconcilers.map(async r => { await r.stop() })) }
  }
  // an admin pass: every network's in turn, their reports summed (each note is read by one of them)
  const reconcile = async (): Promise<ReconcileReport> => {
    const all: ReconcileReport = { checked: 0, dropped: [], confirmed: [], fulfilled: [], pending: 0, awaitingOperator: 0, inFlight: 0 }
    for (const r of reconcilers) {
      const one = await r.run()
      all.checked += one.checked
      all.dropped.push(...one.dropped)
      all.confirmed.push(...one.confirmed)
      all.fulfilled.push(...one.fulfilled)
      all.pending += one.pending
      // every reconciler counts every paid-unfulfilled note, and every live one's notes
      all.awaitingOperator = Math.max(all.awaitingOperator, one.awaitingOperator)
      all.inFlight = Math.max(all.inFlight, one.inFlight)
      if (one.error != null) all.error ??= one.error
    }
    return all
  }
  return { component, admin: { notes, reconcile, release: act.release } }
}
