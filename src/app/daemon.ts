/**
 * The composition root of `pind serve`: locks the data dir, opens the core
 * (core.ts: the ledger, staging and keys, as the admin commands do on a
 * stopped data dir), starts the IPFS node and the HTTP server, in that order,
 * and stops them in reverse.
 */
import { readFileSync, rmSync } from 'node:fs'
import type { IncomingMessage } from 'node:http'
import { join } from 'node:path'
import { startAdminServer } from '../admin/server.js'
import { SiweChallenges } from '../auth/siwe.js'
import { privateKeyHex } from '../config/parse.js'
import type { Config } from '../config/settings.js'
import { acquireLock } from '../datadir/lock.js'
import { assemble } from './components.js'
import { layout } from '../datadir/layout.js'
import { secureDataDir } from '../datadir/secure.js'
import { agentCardRoutes } from '../http/routes/agent-card.js'
import { authRoutes } from '../http/routes/auth.js'
import { gatewayRoutes } from '../http/routes/gateway.js'
import { healthRoutes } from '../http/routes/health.js'
import { jwksRoutes } from '../http/routes/jwks.js'
import { pinRoutes } from '../http/routes/pins.js'
import { uploadRoutes } from '../http/routes/upload.js'
import { Router } from '../http/router.js'
import { RateLimiter } from '../http/rate-limit.js'
import { clientIp, clientKey } from '../http/client-ip.js'
import { configureSending, sendingStatus } from '../http/send-budget.js'
import { StreamSlots } from '../http/stream-slots.js'
import { connectionLimits } from '../http/connections.js'
import { metricsRoutes } from '../http/routes/metrics.js'
import { openApiRoutes } from '../http/routes/openapi.js'
import { openApiDocument } from '../http/openapi.js'
import { VERSION } from '../kernel/version.js'
import { Metrics } from '../metrics/registry.js'
import { metricsSources } from '../service/health/metrics-sources.js'
import { createHttpServer } from '../http/server.js'
import type { CID } from 'multiformats/cid'
import { loadOrCreateIdentity } from '../ipfs/identity.js'
import { P2pListenError, startIpfsNode } from '../ipfs/node.js'
import type { RoutingStatus } from '../ipfs/routing/index.js'
import { listenFailure, type ListenFailure } from './startup-errors.js'
import { openDataDirBackend, openS3Backend } from '../ipfs/open-backend.js'
import { SwitchableBackend } from '../ipfs/switchable-backend.js'
import { Maintenance } from '../service/background/maintenance.js'
import { RetryLater } from '../service/uploads/retry-later.js'
import { Slots } from '../service/uploads/slots.js'
import type { UpgradeProgress } from '../ledger/ledger.js'
import type { SettlementNotes } from '../ledger/settlements.js'
import type { Logger } from '../kernel/log.js'
import type { AuthorizationStateReader } from '../payment/authorization-state.js'
import { chainIdOf } from '../payment/chain.js'
import type { FacilitatorChoice } from '../payment/facilitator.js'
import { PaymentGate } from '../payment/gate.js'
import type { PriceSettings } from '../payment/pricing.js'
import type { OpenNoteDeps } from '../service/payments/noted-retry.js'
import { PaymentOnce } from '../service/payments/paid-once.js'
import { startExpirySweeper } from '../service/background/expiry.js'
import { removeUnreferenced } from '../service/background/gc.js'
import { GcSchedule } from '../service/background/gc-schedule.js'
import { recoverTicketWrites } from '../service/uploads/ticket-upload.js'
import { archiveDelayMs, startArchiver } from '../service/background/archiver.js'
import { thousands } from '../kernel/thousands.js'
import { PinFetcher } from '../service/pins/pin-fetcher.js'
import { settlementActions, stagingInUse } from '../service/payments/settlement-fulfil.js'
import { logSummary, startSettlementReconciler, type SettlementReconciler } from '../service/payments/settlement-reconcile.js'
import type { SettlementsAdminDeps } from '../service/admin/settlements-admin.js'
import { ServePolicy, type Refusal } from '../service/serving/serve-policy.js'
import { refusingDenied, type Denials } from '../service/serving/denials.js'
import type { DenyAdminDeps } from '../service/admin/deny-admin.js'
import { DenylistConfigError } from '../denylist/sources.js'
import { StartupError } from './startup-errors.js'
import { SizeProbe } from '../service/pins/size-probe.js'
import { BlockNetwork } from '../ipfs/network.js'
import { networkReadThrough } from '../ipfs/network-read.js'
import { buildAgentCard } from '../service/discovery/agent-card.js'
import { checkHealth, HealthCheckError, type HealthCheck, type HealthDeps, type HealthReport } from '../service/health/health.js'
import { checkReadiness } from '../service/health/readiness.js'
import { operatorStatus, type PaymentsCheck } from '../service/admin/status.js'
import { Reprovider } from '../service/background/reprovider.js'
import { listensBeyondLoopback } from '../ipfs/routing/listen.js'
import { StopSteps } from './stop-steps.js'

/** blocks in flight per pin fetch: twice what saturates loopback, so latency to a remote origin is covered too (docs/internals.md, daemon.ts) */
const BLOCKS_IN_FLIGHT = 32
/** uploads re-sending a used payment whose bodies are checked at once (hashed, not stored; see service/uploads/upload.ts) */
const REPLAY_CHECKS = 8
/**
 * how often serve moves removed pins to the archive (src/service/background/archiver.ts): ledger.mdb
 * holds the removals of the last payment timeout plus up to an interval, and lmdb maps the whole file
 * into serve's RSS, so a shorter interval lowers the file's steady size; each pass costs ~130 bytes of
 * lmdb-js's native memory (docs/internals.md, daemon.ts)
 */
const ARCHIVE_INTERVAL_MS = 2 * 60_000

export interface Daemon {
  url: string
  publicUrl: string
  peerId: string
  multiaddrs: string[]
  dataDir: string
  /** whether paid writes can work (the start-up summary, the logs) */
  payments(): PaymentsCheck
  /** where the blocks are (for the start-up summary) */
  blocks: string
  stop(deadlineMs: number): Promise<void>
  /** while stop() runs: the step it is in (the HTTP server's drain, then the StopSteps) */
  stopping(): string | undefined
}

export interface StartOptions {
  /**
   * what the start is doing, each time it moves on: a step begins, or a ledger
   * upgrade has read another 1,000 records (serve tells systemd: cli/notify.ts)
   */
  onProgress?: (status: string) => void
}

export async function startDaemon (config: Readonly<Config>, log: Logger, opts: StartOptions = {}): Promise<Daemon> {
  const progress = opts.onProgress ?? (() => {})
  const paths = layout(config.dataDir)
  secureDataDir(paths.root) // done by the serve command already, before lmdb loaded; a no-op then
  const lock = acquireLock(paths.lock, paths.root, 'pind serve')
  const cleanups = new StopSteps(log)
  cleanups.add('data dir lock', () => { lock.release() })
  const cleanup = async (): Promise<void> => { await cleanups.run() }
  let draining = false
  try {
    const startedAt = Date.now()
    // what the components report as they work; the gauges read from them are added once they exist (metrics.watch)
    const metrics = new Metrics()
    const observer = (operation: string, seconds: number, outcome: string): void => { metrics.s3Request(operation, seconds, outcome) }
    // where blocks live (disk or S3), behind one indirection that `pind blocks migrate` can switch
    progress('opening the block store')
    const blocks = new SwitchableBackend(await openDataDirBackend(config, paths, { log, observer, record: true }))
    cleanups.add('block store', () => blocks.close())
    log.info('block store', { store: blocks.describe() })
    // the ledger's indexes are upgraded here, before libp2p starts; what serving does not depend on, once it serves (below)
    progress('opening the ledger')
    const components = await assemble(paths, config, { graceMs: config.expiryGrace * 1000, blocks, onUpgrade: ledgerUpgradeProgress(log, progress), upgradeLater: true, log, follow: true })
    cleanups.add('ledger and denylists', async () => { await components.stop() })
    const { core } = components
    const { ledger, staging, usage } = core
    const { pins, notes } = ledger

    const privateKey = await loadOrCreateIdentity(paths.identity)
    const networkGateway = config.gatewayNetworkTimeout > 0
    // what is denied (the operator's denials, the denylists), read before anything is served
    progress('reading the denylists')
    let denials: Denials
    try {
      denials = await components.denials()
    } catch (err) {
      // checked with the configuration already; a path gone since then
      if (err instanceof DenylistConfigError) throw new StartupError(`${err.message}: fix --denylist (PIND_DENYLIST)`)
      throw err
    }
    const denylists = await components.denylists()
    // one answer to "may this block be served" for the gateway and bitswap
    const policy = new ServePolicy({ pins: core.servedBlocks, scope: config.gatewayPolicy, gatewayReadThrough: networkGateway })
    policy.deny((cid, path) => denials.denied(cid, path))
    const refusal = (cid: CID): Refusal | undefined => policy.refusal(cid)
    const routingOn = !config.routing.includes('none')
    progress('starting the IPFS node')
    const ipfs = await startIpfsNode({
      blockstore: blocks.blockstore,
      datastore: ledger.datastore(),
      privateKey,
      listen: config.p2pListen,
      announce: config.p2pAnnounce,
      peers: config.p2pPeers,
      log,
      mayServe: (cid) => policy.mayServe(cid, 'bitswap'),
      limits: {
        maxConnections: config.p2pMaxConnections,
        inboundRate: config.p2pInboundRate,
        // on the public network nothing dials private ranges, unless the operator runs a private one
        refusePrivateDials: routingOn && !config.routingPrivateAddresses && config.originAddresses !== 'any'
      },
      ...(routingOn
        ? {
            routing: {
              dht: config.routing.includes('dht'),
              bootstrap: config.bootstrap,
              dhtMode: config.dhtMode,
              privateAddresses: config.routingPrivateAddresses,
              recordLifetimeMs: config.dhtRecordLifetime * 1000,
              maxRecords: config.dhtMaxRecords,
              maxRecordsPerPeer: config.dhtMaxRecordsPerPeer,
              ...(config.routing.includes('delegated') && config.delegatedRoutingUrl != null ? { delegatedUrl: config.delegatedRoutingUrl } : {}),
              onLookup: (seconds, _found, source) => { metrics.findProviders(seconds, source) }
            }
          }
        : {})
    }).catch((err: unknown) => {
      if (err instanceof P2pListenError) throw listenFailure('the libp2p listen address', err.failures[0] as ListenFailure, '--p2p-listen (PIND_P2P_LISTEN)')
      throw err
    })
    cleanups.add('ipfs node', () => ipfs.stop())
    if (config.bootstrap.length > 0 && !config.routing.includes('dht')) log.warn('--bootstrap is set but --routing has no dht: the bootstrap peers are not used')
    if (!routingOn && listensBeyondLoopback(config.host, config.p2pListen)) {
      log.warn('listening beyond loopback with --routing none: pinned content is not announced, so IPFS nodes will not find it here (only this gateway and peers that dial this node directly serve it); set --routing dht to announce it')
    }
    const find = ipfs.routing.finder != null
      ? async (cid: CID, signal: AbortSignal) => await (ipfs.routing.finder as NonNullable<typeof ipfs.routing.finder>).findAndConnect(cid, signal)
      : undefined

    // blocks and bytes stored, current for /metrics and `pind status`: a walk (begun now), then what commits and gc report
    usage.current().catch(() => {})
    // kept: the sealed imports of paid uploads whose notes reconciliation has yet to fulfil
    const leftovers = await staging.sweepLeftovers(stagingInUse(await notes.all()))
    if (leftovers > 0) log.warn('removed unfinished imports left by a previous run', { count: leftovers })
    // the blocks of uploads with a ticket that a crash cut: deleted (unless a pin holds them) before anything is served
    const discard = async (b: Array<{ cid: CID, bytes: number }>): Promise<{ removed: number, freedBytes: number }> => await removeUnreferenced(core.gc, b)
    progress('removing the blocks of unfinished uploads')
    await recoverTicketWrites({ journals: core.journals, discard, tickets: ledger.tickets, log })
    const commitLock = core.lock
    // the token's authorization state, read by reconciliation and by requests retrying a payment with an open note
    const authorizations = await components.chain()
    const settlements = startReconciler(config, notes, authorizations, new Date(startedAt), core.settlement, log.child({ component: 'settlements' }))
    const openNotes: OpenNoteDeps = { notes, ledger: pins, fulfil: core.settlement.fulfil, log: log.child({ component: 'settlements' }), ...(authorizations != null ? { chain: authorizations } : {}) }
    cleanups.add('settlement reconciler', async () => { await settlements.reconciler?.stop() })

    // gc by itself: on a schedule, and when the bytes pins released pass the watermark
    const maintenance = new Maintenance()
    const gcSchedule = new GcSchedule(core.gc, {
      intervalMs: config.gcInterval * 1000,
      watermarkBytes: config.gcWatermark,
      log: log.child({ component: 'gc' }),
      committed: async () => { await pins.committed() },
      maintenance,
      onRun: (r) => { metrics.gcRun(r.trigger, r.outcome, r.removedBlocks, r.freedBytes, r.seconds) }
    })
    const unwatchReleased = pins.watchReleased((_blocks, bytes) => { gcSchedule.released(bytes) })
    cleanups.add('gc', async () => { unwatchReleased(); await gcSchedule.stop() })

    const provideKind = config.provideStrategy === 'all' ? 'blocks' : 'roots'
    const announcer = ipfs.routing.announcer
    const reprovider = announcer != null
      ? new Reprovider({
        keys: ledger.provides,
        kind: provideKind,
        announcer,
        intervalMs: config.reprovideInterval * 1000,
        log: log.child({ component: 'reprovider' }),
        onRegion: (r) => { metrics.provided(r.provided, r.failed) }
      })
      : undefined
    if (reprovider != null) {
      reprovider.start()
      cleanups.add('reprovider', async () => { await reprovider.stop() })
    }
    const router = new Router()
    const proxies: ReadonlySet<string> = new Set(config.trustedProxies)
    // what per-client limits count by: the client's address (proxies considered; IPv6 by /64)
    const clientOf = (req: IncomingMessage): string => clientKey(clientIp(req, proxies))
    configureSending({ budgetBytes: config.httpSendBudget, minRate: config.httpMinSendRate, graceMs: config.httpMinSendRateGrace * 1000, log: log.child({ component: 'http' }) })
    const connections = connectionLimits({ maxConnections: config.httpMaxConnections, maxPerClient: config.httpMaxConnectionsPerClient })
    const http = createHttpServer(router, log, {
      onRequest: (r) => { metrics.request(r.method, r.route, r.status, r.seconds, r.bytesIn, r.bytesOut) },
      cors: { origins: config.corsOrigins.filter(o => o !== 'none') },
      rateLimiter: new RateLimiter({ unpaidPerMinute: config.rateLimitUnpaid, readsPerMinute: config.rateLimitReads, trustedProxies: config.trustedProxies }),
      headTimeoutMs: config.httpHeadTimeout * 1000,
      idleTimeoutMs: config.httpIdleTimeout * 1000,
      maxConnections: connections.maxConnections,
      maxConnectionsPerClient: connections.maxPerClient,
      trustedProxies: config.trustedProxies,
      // it listens now (to know its port for the public URL) and answers 503 until every route is added
      starting: true
    })
    const bound = await http.listen(config.host, config.port).catch((err: NodeJS.ErrnoException) => {
      throw listenFailure('the HTTP address', { address: `${config.host}:${config.port}`, ...(err.code != null ? { code: err.code } : {}) }, '--port (PIND_PORT) / --host (PIND_HOST)')
    })
    const url = `http://${bound.host.includes(':') ? `[${bound.host}]` : bound.host}:${bound.port}`
    const publicUrl = config.publicUrl ?? url
    let httpClosed = false
    cleanups.add('http server', async () => { if (!httpClosed) await http.close(0) })

    // the gate after the HTTP address is ours: a start that cannot listen says that alone, no payment warnings before it
    const prices: PriceSettings = { rate: config.priceRate, minimum: config.priceMin, maximum: config.priceMax, maxMonths: config.maxMonths }
    const gate = paymentGate(config, prices, log, (event, amount, reason) => { metrics.payment(event, amount, reason) })
    metrics.watch(metricsSources(pins, async () => await usage.current(), () => ipfs.connections().length,
      () => gate != null ? { settlesPending: gate.settlesPending, ...(gate.balance?.balance != null ? { settlerBalanceWei: gate.balance.balance } : {}), ...(gate.nonceRecoveries != null ? { settlerNonceRecoveries: gate.nonceRecoveries } : {}) } : undefined, {
        ...(routingOn ? { routing: () => ipfs.routing.status() } : {}),
        ...(reprovider != null ? { provides: async () => await reprovider.status() } : {}),
        s3Up: () => blocks.kind === 's3' ? blocks.writable() : undefined,
        sending: sendingStatus,
        uploadChunks: () => staging.chunkBudget,
        gcUnreferencedBytes: () => gcSchedule.unreferencedBytes
      }))

    if (gate != null) {
      progress('checking the payment settings')
      await gate.start()
      cleanups.add('payment gate', () => { gate.stop() })
    }
    const payments = (): PaymentsCheck => gate?.status() ?? (config.payTo == null
      ? { state: 'no-pay-to', ok: false, message: 'no --pay-to address: paid writes answer 503' }
      : { state: 'no-facilitator', ok: false, message: 'no facilitator (a settler key and --rpc-url, or --facilitator-url): paid writes answer 503' })
    progress('starting the services')
    const keystore = await core.keystore()
    const once = new PaymentOnce()
    const tokenLedger = ledger.tokens
    const issuer = config.tokenIssuer ?? publicUrl
    const tokens = core.tokens(keystore, issuer, config.tokenTtl)
    // admin commands on a stopped data dir mint tokens this serve accepts, sweep with its grace and report its provide schedule
    await ledger.recordSettings({ tokenIssuer: issuer, tokenTtl: config.tokenTtl, expiryGrace: config.expiryGrace, provideStrategy: config.provideStrategy, reprovideInterval: config.reprovideInterval })
    const routingAdmin = {
      keys: ledger.provides,
      strategy: provideKind,
      intervalMs: config.reprovideInterval * 1000,
      live: { routing: config.routing, status: () => ipfs.routing.status(), ...(reprovider != null ? { reprovider } : {}) }
    } as const
    const deny: DenyAdminDeps = { ledger: ledger.denials, pins, denials, files: () => denylists.files() }
    const admin = await startAdminServer(paths.adminSocket, { keys: { keystore, tokens, tokenLedger }, ledger, gc: core.gc, settlements: settlements.admin, metrics, deny,
      routing: routingAdmin,
      delegates: () => ipfs.multiaddrs(),
      status: async () => await operatorStatus({
        ledger,
        dataDir: paths.root,
        usage: async () => await usage.current(),
        live: {
          pid: process.pid,
          startedAt,
          version: VERSION,
          url,
          peerId: ipfs.peerId,
          multiaddrs: ipfs.multiaddrs(),
          peers: () => ipfs.connections(),
          payments
        }
      }),
      maintenance,
      blocks: {
        current: () => blocks.active,
        // the bucket and the credentials come from the admin client; this serve's cache setting applies
        openTarget: async (location, c) => await openS3Backend(location,
          { s3AccessKeyId: c.accessKeyId, s3SecretAccessKey: c.secretAccessKey, ...(c.sessionToken != null ? { s3SessionToken: c.sessionToken } : {}), s3CacheSize: config.s3CacheSize, s3Timeout: config.s3Timeout, s3VerifyReads: config.s3VerifyReads },
          { blocksDir: paths.blocks, cacheDir: paths.s3Cache, log, observer, requireReachable: true }),
        lock: commitLock,
        paths,
        pins,
        switchTo: (target) => {
          blocks.switchTo(target)
          // the usage figures are the new store's from now on
          usage.reset()
          log.warn('blocks migrated: this serve now keeps its blocks in S3', { store: target.describe() })
        }
      }
    }, log)
    cleanups.add('admin socket', async () => { await admin.close(); rmSync(paths.adminSocket, { force: true }) })
    if (config.metricsListen != null) {
      const metricsRouter = new Router()
      metricsRoutes(metricsRouter, metrics)
      const metricsHttp = createHttpServer(metricsRouter, log.child({ component: 'metrics' }))
      const at = config.metricsListen.lastIndexOf(':')
      await metricsHttp.listen(config.metricsListen.slice(0, at).replace(/^\[|\]$/g, ''), Number(config.metricsListen.slice(at + 1))).catch((err: NodeJS.ErrnoException) => {
        throw listenFailure('the metrics address', { address: config.metricsListen as string, ...(err.code != null ? { code: err.code } : {}) }, '--metrics-listen (PIND_METRICS_LISTEN)')
      })
      cleanups.add('metrics listener', async () => { await metricsHttp.close(1000) })
    }
    const sweeper = startExpirySweeper(pins, config.expiryGrace * 1000, config.expirySweepInterval * 1000, log)
    cleanups.add('expiry sweeper', async () => { await sweeper.stop() })
    const archiver = startArchiver(pins, archiveDelayMs(config.paymentTimeout), ARCHIVE_INTERVAL_MS, log)
    cleanups.add('archiver', async () => { await archiver.stop() })

    const healthLog = log.child({ component: 'health' })
    // one deps object for every request: checkHealth keeps its checks and its last passing report by it
    const healthDeps: HealthDeps = {
      readLedger: async () => await ledger.schemaVersion(),
      probeBlockstore: async () => { await blocks.probe() },
      blockstoreWritable: () => blocks.writable(),
      // with blocks in S3 the bucket is named, and the local staging folder is checked too
      ...(blocks.kind === 's3' ? { blockstoreFailure: 'the S3 bucket does not take writes', stagingDir: paths.staging } : {}),
      libp2pStatus: () => ipfs.status(),
      ...(routingOn ? { checks: [routingCheck(() => ipfs.routing.status())] } : {}),
      diskCheckCacheMs: 1000,
      ledgerCheckCacheMs: 1000,
      startedAt,
      log: healthLog
    }
    const health = async (): Promise<HealthReport> => await checkHealth(healthDeps)
    healthRoutes(router, health, async () => await checkReadiness(health, payments))
    agentCardRoutes(router, buildAgentCard({
      publicUrl,
      network: config.network,
      asset: config.asset,
      assetName: config.assetName,
      assetVersion: config.assetVersion,
      payTo: config.payTo,
      prices,
      uploadMaxBytes: config.uploadMaxBytes,
      p2p: { peerId: ipfs.peerId, multiaddrs: ipfs.multiaddrs(), routing: config.routing, provideStrategy: config.provideStrategy }
    }))
    const network = new BlockNetwork(ipfs, config.p2pPeers, config.originAddresses)
    // the ledger decides what is served: by default the roots of live pins and the
    // blocks of their DAGs (trustless clients fetch each block by its own CID);
    // an operator may open it to anything held locally, or to the network
    const isServable = (cid: CID): boolean => policy.mayServe(cid, 'gateway')
    gatewayRoutes(router, {
      // every block read under a root is held to the denials too
      blockstore: refusingDenied(networkGateway ? networkReadThrough(blocks.blockstore, network, config.gatewayNetworkTimeout * 1000, find) : blocks.blockstore, refusal),
      isServable,
      refusal: (root, path) => policy.refusal(root, path),
      streams: { slots: new StreamSlots(config.httpMaxStreamsPerClient), clientOf }
    })
    const fetcher = new PinFetcher({
      ledger: pins,
      staging,
      lock: commitLock,
      node: ipfs,
      network,
      log: log.child({ component: 'fetcher' }),
      concurrency: config.pinFetchConcurrency,
      blockConcurrency: BLOCKS_IN_FLIGHT,
      stallMs: config.pinStallTimeout * 1000,
      retryWindowMs: config.pinRetryWindow * 1000,
      refusal,
      ...(find != null ? { findProviders: find } : {})
    })
    await fetcher.start()
    cleanups.add('pin fetcher', async () => { await fetcher.stop() })
    const delegates = (): string[] => ipfs.multiaddrs()
    pinRoutes(router, {
      ledger: pins,
      tokens,
      delegates,
      clientOf,
      refusal,
      create: {
        ledger: pins,
        gate,
        tokens,
        once,
        prices,
        // the quote tells no more about what this node holds than the gateway does
        probe: new SizeProbe({ node: ipfs, network, timeoutMs: config.pinProbeTimeout * 1000, ttlMs: config.paymentTimeout * 1000, isServable, removals: () => blocks.removals, ...(find != null ? { findProviders: find } : {}) }),
        pinMaxBytes: config.pinMaxBytes,
        retryWindowMs: config.pinRetryWindow * 1000,
        publicUrl,
        network: config.network,
        asset: config.asset,
        delegates,
        log,
        refusal,
        storage: blocks,
        openNotes
      }
    })
    jwksRoutes(router, keystore)
    openApiRoutes(router, () => openApiDocument({
      publicUrl,
      version: VERSION,
      network: config.network,
      asset: config.asset,
      maxMonths: config.maxMonths,
      uploadMaxBytes: config.uploadMaxBytes
    }))
    authRoutes(router, { siwe: new SiweChallenges({ publicUrl, chainId: chainIdOf(config.network) }), tokens, clientOf })
    const retry = new RetryLater(log)
    cleanups.add('commit retries', () => { retry.stop() })
    uploadRoutes(router, {
      ledger: pins,
      staging,
      lock: commitLock,
      gate,
      tokens,
      once,
      prices,
      uploadMaxBytes: config.uploadMaxBytes,
      slots: new Slots(config.uploadConcurrency),
      replaySlots: new Slots(REPLAY_CHECKS),
      publicUrl,
      network: config.network,
      asset: config.asset,
      log,
      refusal,
      storage: blocks,
      retry,
      notes,
      openNotes,
      ticket: {
        tickets: ledger.tickets,
        records: ledger,
        direct: core.direct,
        journals: core.journals,
        discard,
        retries: config.uploadTicketRetries,
        onLeftover: (bytes) => { gcSchedule.released(bytes) },
        verifier: tokens,
        validitySeconds: config.uploadTicketValidity
      }
    })
    // the rest of the ledger's upgrade (records rewritten in the current layout, every reader reads both): while serving
    const upgradeLog = ledgerUpgradeProgress(log, () => {})
    let upgraded = false
    const upgrading = ledger.upgradeLater((p) => { upgraded = true; upgradeLog(p) })
    upgrading.done.then((done) => { if (done && upgraded) log.notice('ledger upgraded') }, (err: unknown) => { log.error('the ledger upgrade failed: the next start goes on with it', { error: err }) })
    cleanups.add('ledger upgrade', async () => { await upgrading.stop() })
    http.ready()

    return {
      url,
      publicUrl,
      peerId: ipfs.peerId,
      multiaddrs: ipfs.multiaddrs(),
      dataDir: paths.root,
      payments,
      blocks: blocks.describe(),
      stop: async (deadlineMs) => {
        draining = true
        await http.close(deadlineMs)
        httpClosed = true
        draining = false
        await cleanup()
      },
      stopping: () => draining ? 'in-flight requests' : cleanups.current()
    }
  } catch (err) {
    await cleanup()
    throw err
  }
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

/** a note still unused is read again at most this long after the last pass */
const RECONCILE_INTERVAL_S = 300

/**
 * Reconciliation of settlement notes left by earlier runs, in the background
 * (it needs the chain: without --rpc-url the notes are only counted).
 */
function startReconciler (config: Readonly<Config>, notes: SettlementNotes, chain: AuthorizationStateReader | undefined, startedAt: Date, act: ReturnType<typeof settlementActions>, log: Logger): { reconciler?: SettlementReconciler, admin: SettlementsAdminDeps } {
  if (chain == null) {
    void logSummary(notes, log, 'no --rpc-url to check them against the chain').catch((err: unknown) => { log.warn('could not read the settlement notes', { error: (err as Error).message }) })
    return { admin: { notes, release: act.release } }
  }
  const reconciler = startSettlementReconciler(notes, chain, { intervalMs: Math.min(config.expirySweepInterval, RECONCILE_INTERVAL_S) * 1000, log, startedAt, ...act })
  return { reconciler, admin: { notes, reconcile: reconciler.run, release: act.release } }
}

/** The payment gate, when this server can take payments (a pay-to address and a facilitator). */
function paymentGate (config: Readonly<Config>, prices: PriceSettings, log: Logger, onEvent: ConstructorParameters<typeof PaymentGate>[2]): PaymentGate | undefined {
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

/** the ledger upgrade's progress as start-up status; a step that reads many records is logged once (a fresh ledger's steps read none) */
function ledgerUpgradeProgress (log: Logger, progress: (status: string) => void): (p: UpgradeProgress) => void {
  const logged = new Set<string>()
  return ({ upgrade, records }) => {
    if (records > 0 && !logged.has(upgrade)) {
      logged.add(upgrade)
      log.notice('upgrading the ledger: the first start of this version on a ledger an earlier one wrote', { upgrade })
    }
    progress(`upgrading the ledger (${upgrade}): ${thousands(records)} records`)
  }
}
