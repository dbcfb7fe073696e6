/**
 * Serve's HTTP API on its router, built from the running components: health
 * and readiness, the agent card, the gateway, /pins, uploads, wallet sign-in,
 * the signing keys and the OpenAPI document.
 */
import type { IncomingMessage } from 'node:http'
import { CID } from 'multiformats/cid'
import type { KeyStore } from '../../auth/keystore.js'
import { SiweChallenges } from '../../auth/siwe.js'
import { SignInWithX } from '../../auth/siwx.js'
import type { TokenService } from '../../auth/tokens.js'
import type { Config } from '../../config/settings.js'
import type { Router } from '../../http/router.js'
import { paidRoutes } from '../../http/paid-routes.js'
import { agentCardRoutes } from '../../http/routes/agent-card.js'
import { discoveryRoutes } from '../../http/routes/discovery.js'
import { authRoutes } from '../../http/routes/auth.js'
import { siteOriginTemplate, siteUrlFor } from '../../http/gateway/site-host.js'
import { gatewayRoutes } from '../../http/routes/gateway.js'
import { healthRoutes } from '../../http/routes/health.js'
import { jwksRoutes } from '../../http/routes/jwks.js'
import { usageRoutes } from '../../http/routes/usage.js'
import { openApiRoutes } from '../../http/routes/openapi.js'
import { pinRoutes } from '../../http/routes/pins.js'
import { mcpRoutes, type McpLimits } from '../../http/routes/mcp.js'
import { uploadRoutes, type UploadRouteDeps } from '../../http/routes/upload.js'
import { StreamSlots } from '../../http/stream-slots.js'
import type { BlockNetwork } from '../../ipfs/network.js'
import { networkReadThrough } from '../../ipfs/network-read.js'
import type { IpfsNode } from '../../ipfs/node.js'
import type { RoutingStatus } from '../../ipfs/routing/index.js'
import type { SwitchableBackend } from '../../ipfs/switchable-backend.js'
import type { Logger } from '../../kernel/log.js'
import { VERSION } from '../../kernel/version.js'
import { chainIdOf, verifierClientFor } from '../../payment/chain.js'
import type { PaymentGate } from '../../payment/gate.js'
import type { PriceSettings } from '../../payment/pricing.js'
import type { PaymentsCheck } from '../../service/admin/status.js'
import { buildAgentCard } from '../../service/discovery/agent-card.js'
import { landingPage } from '../../service/discovery/landing.js'
import { llmsTxt } from '../../service/discovery/llms-txt.js'
import { x402Resources, type DiscoveryInput } from '../../service/discovery/paid-operations.js'
import { checkHealth, HealthCheckError, type HealthCheck, type HealthDeps, type HealthReport } from '../../service/health/health.js'
import { checkReadiness } from '../../service/health/readiness.js'
import { paymentNetworks } from '../../config/networks.js'
import type { OpenNoteDeps } from '../../service/payments/noted-retry.js'
import type { PaymentOnce } from '../../service/payments/paid-once.js'
import { notesStampedBy } from '../../service/payments/settle.js'
import type { PinCreateDeps } from '../../service/pins/pin-create.js'
import { SizeProbe } from '../../service/pins/size-probe.js'
import { refusingDenied } from '../../service/serving/denials.js'
import type { Refusal, ServePolicy } from '../../service/serving/serve-policy.js'
import type { RetryLater } from '../../service/uploads/retry-later.js'
import { Slots } from '../../service/uploads/slots.js'
import { FailedWrites } from '../../service/uploads/failed-writes.js'
import type { Core } from '../core.js'

/** uploads re-sending a used payment whose bodies are checked at once (hashed, not stored; see service/uploads/upload.ts) */
const REPLAY_CHECKS = 8

export interface ApiDeps {
  config: Readonly<Config>
  core: Core
  /** the same store as core.blocks: its kind and its removals */
  blocks: SwitchableBackend
  /** what this serve is reached at (links in answers, the agent card, tokens' audience) */
  publicUrl: string
  startedAt: number
  ipfs: IpfsNode
  routingOn: boolean
  network: BlockNetwork
  find?: (cid: CID, signal: AbortSignal) => Promise<unknown>
  policy: ServePolicy
  gate: PaymentGate | undefined
  payments: () => PaymentsCheck
  prices: PriceSettings
  once: PaymentOnce
  keystore: KeyStore
  tokens: TokenService
  /** what per-client limits count by */
  clientOf: (req: IncomingMessage) => string
  /** the per-client limits as the MCP route applies them (it admits its own requests) */
  mcpLimits?: McpLimits
  openNotes: OpenNoteDeps
  retry: RetryLater
  /** deletes blocks a failed ticket upload wrote, unless a pin holds them */
  discard: (b: Array<{ cid: CID, bytes: number }>) => Promise<{ removed: number, freedBytes: number }>
  /** bytes a ticket upload left unreferenced (gc's watermark counts them) */
  onLeftover: (bytes: number) => void
  /** a stop's drain has begun (GET /ready answers 503) */
  draining: () => boolean
  log: Logger
}

export function apiRoutes (router: Router, d: ApiDeps): void {
  const { config, core, blocks, ipfs, policy, publicUrl, log } = d
  const { ledger } = core
  const networkGateway = config.gatewayNetworkTimeout > 0
  const domain = config.gatewayDomain
  const refusal = (cid: CID): Refusal | undefined => policy.refusal(cid)
  // one deps object for every request: checkHealth keeps its checks and its last passing report by it
  const healthDeps: HealthDeps = {
    readLedger: async () => await ledger.schemaVersion(),
    probeBlockstore: async () => { await blocks.probe() },
    blockstoreWritable: () => blocks.writable(),
    // with blocks in S3 the bucket is named, and the local staging folder is checked too
    ...(blocks.kind === 's3' ? { blockstoreFailure: 'the S3 bucket does not take writes', stagingDir: core.paths.staging } : {}),
    libp2pStatus: () => ipfs.status(),
    ...(d.routingOn ? { checks: [routingCheck(() => ipfs.routing.status())] } : {}),
    diskCheckCacheMs: 1000,
    ledgerCheckCacheMs: 1000,
    startedAt: d.startedAt,
    log: log.child({ component: 'health' })
  }
  const health = async (): Promise<HealthReport> => await checkHealth(healthDeps)
  healthRoutes(router, health, async () => await checkReadiness(health, d.payments), d.draining)
  // the networks payments are taken on (docs/networks.md): those the gate runs, the first as the primary
  // the documents name first; without a gate, the configured network
  const taken = new Set(d.gate?.networks ?? [])
  const accepts = paymentNetworks(config).filter(n => taken.has(n.network))
    .map(n => ({ network: n.network, asset: n.asset, assetName: n.assetName, assetVersion: n.assetVersion, payTo: n.payTo }))
  const primary = accepts[0] ?? { network: config.network, asset: config.asset, assetName: config.assetName, assetVersion: config.assetVersion, payTo: config.payTo }
  // the paid routes as the discovery channels describe them: the bazaar extension of each 402, the documents below
  // (--bazaar false: none, the 402s carry no bazaar extension)
  const paid = config.bazaar ? { paidRoutes: paidRoutes({ publicUrl, network: primary.network, asset: primary.asset, maxMonths: config.maxMonths }) } : {}
  // a directory upload's website origin, as the documents name it (--gateway-domain)
  const siteOrigin = domain != null ? siteOriginTemplate(publicUrl, domain) : undefined
  const discovery: DiscoveryInput = {
    publicUrl,
    network: primary.network,
    asset: primary.asset,
    assetName: primary.assetName,
    prices: d.prices,
    uploadMaxBytes: config.uploadMaxBytes,
    ...(primary.payTo != null ? { payTo: primary.payTo } : {}),
    ...(accepts.length > 1 ? { accepts } : {}),
    ...(siteOrigin != null ? { siteOrigin } : {})
  }
  discoveryRoutes(router, {
    landing: () => landingPage({ ...discovery, version: VERSION }),
    llmsTxt: () => llmsTxt(discovery),
    x402: () => x402Resources(discovery)
  })
  agentCardRoutes(router, buildAgentCard({
    publicUrl,
    network: primary.network,
    asset: primary.asset,
    assetName: primary.assetName,
    assetVersion: primary.assetVersion,
    payTo: primary.payTo,
    ...(accepts.length > 1 ? { accepts } : {}),
    prices: d.prices,
    uploadMaxBytes: config.uploadMaxBytes,
    ...(siteOrigin != null ? { siteOrigin } : {}),
    p2p: { peerId: ipfs.peerId, multiaddrs: ipfs.multiaddrs(), routing: config.routing, provideStrategy: config.provideStrategy }
  }))
  // the ledger decides what is served: by default the roots of live pins and the
  // blocks of their DAGs (trustless clients fetch each block by its own CID);
  // an operator may open it to anything held locally, or to the network
  const isServable = (cid: CID): boolean => policy.mayServe(cid, 'gateway')
  gatewayRoutes(router, {
    // every block read under a root is held to the denials too
    blockstore: refusingDenied(networkGateway ? networkReadThrough(blocks.blockstore, d.network, config.gatewayNetworkTimeout * 1000, d.find) : blocks.blockstore, refusal),
    isServable,
    refusal: (root, path) => policy.refusal(root, path),
    streams: { slots: new StreamSlots(config.httpMaxStreamsPerClient), clientOf: d.clientOf },
    ...(domain != null ? { sites: { domain, trustedProxies: new Set(config.trustedProxies) } } : {})
  })
  const delegates = (): string[] => ipfs.multiaddrs()
  // the settlement notes paid writes leave say which front end wrote them (settlement-reconcile.ts)
  const pins = notesStampedBy(ledger.pins, ipfs.peerId)
  const rpcUrl = config.rpcUrl
  const create: PinCreateDeps = {
    ledger: pins,
    gate: d.gate,
    tokens: d.tokens,
    once: d.once,
    prices: d.prices,
    // the quote tells no more about what this node holds than the gateway does
    probe: new SizeProbe({ node: ipfs, network: d.network, timeoutMs: config.pinProbeTimeout * 1000, ttlMs: config.paymentTimeout * 1000, isServable, removals: () => blocks.removals, ...(d.find != null ? { findProviders: d.find } : {}) }),
    pinMaxBytes: config.pinMaxBytes,
    retryWindowMs: config.pinRetryWindow * 1000,
    publicUrl,
    network: primary.network,
    asset: primary.asset,
    delegates,
    log,
    refusal,
    storage: blocks,
    openNotes: d.openNotes,
    leases: ledger.leases,
    ...paid
  }
  pinRoutes(router, {
    ledger: pins,
    tokens: d.tokens,
    // contract wallets (EIP-1271, EIP-6492) are asked through the payment RPC, when there is one
    siwx: new SignInWithX({
      publicUrl,
      network: config.network,
      useNonce: async (nonce, until) => await ledger.tokens.useNonce(nonce, until),
      ...(rpcUrl != null ? { contractVerifier: () => verifierClientFor(config.network, rpcUrl).verifyMessage } : {})
    }),
    delegates,
    clientOf: d.clientOf,
    refusal,
    create
  })
  usageRoutes(router, { ledger: pins, tokens: d.tokens })
  jwksRoutes(router, d.keystore)
  // (the document's module, with the schemas only it uses, is loaded at the first request)
  openApiRoutes(router, async () => (await import('../../http/openapi.js')).openApiDocument({
    publicUrl,
    version: VERSION,
    network: primary.network,
    asset: primary.asset,
    maxMonths: config.maxMonths,
    uploadMaxBytes: config.uploadMaxBytes,
    payment: { prices: d.prices, ...(primary.payTo != null ? { payTo: primary.payTo } : {}) },
    ...(accepts.length > 1 ? { accepts } : {})
  }))
  authRoutes(router, { siwe: new SiweChallenges({ publicUrl, chainId: chainIdOf(config.network) }), tokens: d.tokens, clientOf: d.clientOf })
  const uploads: UploadRouteDeps = {
    ledger: pins,
    staging: core.staging,
    lock: core.lock,
    gate: d.gate,
    tokens: d.tokens,
    once: d.once,
    prices: d.prices,
    uploadMaxBytes: config.uploadMaxBytes,
    slots: new Slots(config.uploadConcurrency),
    replaySlots: new Slots(REPLAY_CHECKS),
    publicUrl,
    ...(domain != null ? { siteUrl: (cid: string) => siteUrlFor(CID.parse(cid), publicUrl, domain) } : {}),
    network: primary.network,
    asset: primary.asset,
    log,
    refusal,
    storage: blocks,
    retry: d.retry,
    notes: ledger.notes,
    openNotes: d.openNotes,
    // --upload-writes: by default with blocks in S3 a paid upload's PUTs overlap its import (written as the body arrives,
    // deleted if it fails: upload.ts UploadWrites); on disk it is staged (the commit renames its files)
    // a payer whose failed uploads wrote more than one upload's limit within the hour is staged for the rest of it
    direct: { use: () => config.uploadWrites === 'direct' || (config.uploadWrites === 'auto' && blocks.kind === 's3'), imports: core.direct, journals: core.journals, discard: d.discard, failures: new FailedWrites(config.uploadMaxBytes) },
    ...paid,
    ticket: {
      tickets: ledger.tickets,
      records: ledger,
      direct: core.direct,
      journals: core.journals,
      discard: d.discard,
      retries: config.uploadTicketRetries,
      onLeftover: d.onLeftover,
      verifier: d.tokens,
      validitySeconds: config.uploadTicketValidity
    }
  }
  uploadRoutes(router, uploads)
  // the MCP endpoint: the same services, deps and limits as the routes above (its SDK loaded on its first request)
  const { ticket: _ticket, ...upload } = uploads
  mcpRoutes(router, {
    publicUrl,
    maxMonths: config.maxMonths,
    uploadMaxBytes: config.uploadMaxBytes,
    ledger: pins,
    tokens: d.tokens,
    delegates,
    refusal,
    create,
    upload,
    clientOf: d.clientOf,
    ...(d.mcpLimits != null ? { limits: d.mcpLimits } : {}),
    log
  })
}

/** The /health routing check: started, with at least one routing peer. */
function routingCheck (status: () => RoutingStatus): HealthCheck {
  return {
    name: 'routing',
    failure: 'routing is not working',
    run: () => {
      if (status().dht && status().routingTable === 0) throw new HealthCheckError('no DHT peers yet (the routing table is empty)', 'the DHT routing table is empty: check --bootstrap and the network')
    }
  }
}
