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
import type { AuthorizationStateReader } from '../../payment/authorization-state.js'
import type { FacilitatorChoice } from '../../payment/facilitator.js'
import { PaymentGate } from '../../payment/gate.js'
import type { PriceSettings } from '../../payment/pricing.js'
import type { SettlementsAdminDeps } from '../../service/admin/settlements-admin.js'
import type { PaymentsCheck } from '../../service/admin/status.js'
import type { settlementActions } from '../../service/payments/settlement-fulfil.js'
import { logSummary, settlementReconciler } from '../../service/payments/settlement-reconcile.js'
import type { Component } from '../lifecycle.js'

/** a note still unused is read again at most this long after the last pass */
const RECONCILE_INTERVAL_S = 300

export function pricesOf (config: Readonly<Config>): PriceSettings {
  return { rate: config.priceRate, minimum: config.priceMin, maximum: config.priceMax, maxMonths: config.maxMonths }
}

/** The payment gate, when this server can take payments (a pay-to address and a facilitator); built, not started. */
export function paymentGate (config: Readonly<Config>, prices: PriceSettings, log: Logger, onEvent: ConstructorParameters<typeof PaymentGate>[2]): PaymentGate | undefined {
  if (config.payTo == null) {
    log.warn('no --pay-to address: paid writes are disabled')
    return undefined
  }
  const settlerKey = config.settlerKey ?? (config.settlerKeyFile != null ? privateKeyHex(readFileSync(config.settlerKeyFile, 'utf8')) : undefined)
  let facilitator: FacilitatorChoice
  if (settlerKey != null && config.rpcUrl != null) facilitator = { kind: 'embedded', network: config.network, rpcUrl: config.rpcUrl, settlerKey, asset: config.asset }
  else if (config.facilitatorUrl != null) facilitator = { kind: 'remote', url: config.facilitatorUrl }
  else {
    log.warn('no facilitator (settler key + RPC URL, or --facilitator-url): paid writes are disabled')
    return undefined
  }
  return new PaymentGate({
    network: config.network,
    asset: config.asset,
    assetName: config.assetName,
    assetVersion: config.assetVersion,
    payTo: config.payTo,
    maxTimeoutSeconds: config.paymentTimeout,
    prices,
    rpcUrl: config.rpcUrl,
    facilitator,
    settlerMinBalance: config.settlerMinBalance,
    settleDeadlineMs: config.settleTimeout * 1000
  }, log.child({ component: 'payment' }), onEvent)
}

/** whether paid writes can work, and why not (/ready, `pind status`, the start-up summary) */
export function paymentsCheck (config: Readonly<Config>, gate: PaymentGate | undefined): () => PaymentsCheck {
  return () => gate?.status() ?? (config.payTo == null
    ? { state: 'no-pay-to', ok: false, message: 'no --pay-to address: paid writes answer 503' }
    : { state: 'no-facilitator', ok: false, message: 'no facilitator (a settler key and --rpc-url, or --facilitator-url): paid writes answer 503' })
}

/**
 * Reconciliation of the settlement notes earlier runs left, as a component
 * (a first pass once started, then on an interval), and what the admin
 * `settlements` commands use of it.
 */
export function settlementReconciliation (config: Readonly<Config>, notes: SettlementNotes, chain: AuthorizationStateReader | undefined, startedAt: Date, act: ReturnType<typeof settlementActions>, log: Logger, when?: () => boolean, fleet?: { self: string, alive: () => Promise<ReadonlySet<string>>, running: (paymentId: string) => boolean }): { component: Component, admin: SettlementsAdminDeps } {
  if (chain == null) {
    return {
      component: { start: () => { void logSummary(notes, log, 'no --rpc-url to check them against the chain').catch((err: unknown) => { log.warn('could not read the settlement notes', { error: (err as Error).message }) }) }, stop: () => {} },
      admin: { notes, release: act.release }
    }
  }
  const reconciler = settlementReconciler(notes, chain, { intervalMs: Math.min(config.expirySweepInterval, RECONCILE_INTERVAL_S) * 1000, log, startedAt, ...act, ...(when != null ? { when } : {}), ...fleet })
  return { component: reconciler, admin: { notes, reconcile: reconciler.run, release: act.release } }
}
