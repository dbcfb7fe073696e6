/**
 * The composition root of `pind serve`, top to bottom: the data dir's lock,
 * the block store, the core (./components.ts: the ledger and what is built
 * on it, as the admin commands build it on a stopped data dir), the serve
 * policy, the IPFS node, what a crash left, the HTTP server, payments, the
 * background work, the admin socket and the routes. Each component is built
 * from the ones before it and started in that order (./lifecycle.ts); the
 * stop runs in reverse.
 */
import type { IncomingMessage } from 'node:http'
import { CID } from 'multiformats/cid'
import type { Config } from '../config/settings.js'
import { acquireLock } from '../datadir/lock.js'
import { layout } from '../datadir/layout.js'
import { secureDataDir } from '../datadir/secure.js'
import { DenylistConfigError } from '../denylist/sources.js'
import { clientIp, clientKey } from '../http/client-ip.js'
import { connectionLimits } from '../http/connections.js'
import { RateLimiter } from '../http/rate-limit.js'
import { MCP_PATH } from '../service/discovery/paid-operations.js'
import { Router } from '../http/router.js'
import { configureSending, sendingStatus } from '../http/send-budget.js'
import { createHttpServer } from '../http/server.js'
import { loadOrCreateIdentity } from '../ipfs/identity.js'
import { BlockNetwork } from '../ipfs/network.js'
import { openDataDirBackend, openS3Backend } from '../ipfs/open-backend.js'
import { SwitchableBackend } from '../ipfs/switchable-backend.js'
import type { Logger } from '../kernel/log.js'
import { thousands } from '../kernel/thousands.js'
import { VERSION } from '../kernel/version.js'
import type { Ledger, UpgradeProgress } from '../ledger/ledger.js'
import { Metrics } from '../metrics/registry.js'
import type { DenyAdminDeps } from '../service/admin/deny-admin.js'
import { operatorStatus, type PaymentsCheck } from '../service/admin/status.js'
import { archiveDelayMs, startArchiver } from '../service/background/archiver.js'
import { startExpirySweeper } from '../service/background/expiry.js'
import { removeUnreferenced } from '../service/background/gc.js'
import { FrontEndBeat, FrontEndConflictError } from '../service/background/front-end-beat.js'
import { FrontEndTakeover } from '../service/background/front-end-takeover.js'
import { GcSchedule } from '../service/background/gc-schedule.js'
import { LeaseKeeper } from '../service/background/lease-keeper.js'
import { Maintenance } from '../service/background/maintenance.js'
import { Reprovider } from '../service/background/reprovider.js'
import { metricsSources } from '../service/health/metrics-sources.js'
import type { OpenNoteDeps } from '../service/payments/noted-retry.js'
import { PaymentOnce } from '../service/payments/paid-once.js'
import { stagingInUse } from '../service/payments/settlement-fulfil.js'
import { PinFetcher } from '../service/pins/pin-fetcher.js'
import type { Denials } from '../service/serving/denials.js'
import { ServePolicy, type Refusal } from '../service/serving/serve-policy.js'
import { RetryLater } from '../service/uploads/retry-later.js'
import { recoverTicketWrites } from '../service/uploads/ticket-upload.js'
import { assemble } from './components.js'
import { Lifecycle, startedBy, type Component } from './lifecycle.js'
import { startServeNode } from './serve/ipfs-node.js'
import { adminSocket, metricsListener } from './serve/listeners.js'
import { networkChains, paymentGate, paymentsCheck, pricesOf, settlementReconciliation } from './serve/payments.js'
import { apiRoutes } from './serve/routes.js'
import { listenFailure, StartupError } from './startup-errors.js'

/** how often this serve records that it is alive in the ledger (`pind status`; a front end unseen for three is gone) */
const BEAT_INTERVAL_MS = 5_000
/**
 * the term of the leases on work that runs on one front end at a time, renewed every third of it:
 * when a front end dies, another takes its work over within this (README, "Several front ends")
 */
const LEASE_TTL_MS = 30_000
const LEASES = { expiry: 'expiry sweep', archive: 'archive', reconcile: 'settlement reconciliation', gc: 'gc', takeover: 'front end takeover' } as const
/** a front end silent this long has stopped for good: forgotten, its provider records handed over (front-end-takeover.ts) */
const DEAD_AFTER_MS = 60_000
const TAKEOVER_INTERVAL_MS = 15_000

/** blocks in flight per pin fetch: twice what saturates loopback, so latency to a remote origin is covered too (docs/internals.md, daemon.ts) */
const BLOCKS_IN_FLIGHT = 32
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
  /** where the ledger is (for the start-up summary; never a password) */
  ledger: string
  /** where the blocks are (for the start-up summary) */
  blocks: string
  /** /ready answers 503 and every response closes its connection, while all else is served as before (the stop's drain) */
  drain(): void
  stop(deadlineMs: number): Promise<void>
  /** while stop() runs: the step it is in (the HTTP server's drain, then the components' stops) */
  stopping(): string | undefined
}

export interface StartOptions {
  /**
   * what the start is doing, each time it moves on: a step begins, or a ledger
   * upgrade has read another 1,000 records (serve tells systemd: cli/notify.ts)
   */
  onProgress?: (status: string) => void
  /** full collections the runtime tuning has run so far (--runtime-idle-collection, --runtime-heap-trim): for /metrics */
  runtimeCollections?: () => number
  /** glibc malloc_trim calls made so far (--runtime-malloc-trim): for /metrics */
  runtimeMallocTrims?: () => number
  /** the times LMDB's mapped pages left the resident set (--runtime-map-trim): for /metrics */
  runtimeMapTrims?: () => number
}

export async function startDaemon (config: Readonly<Config>, log: Logger, opts: StartOptions = {}): Promise<Daemon> {
  const progress = opts.onProgress ?? (() => {})
  const paths = layout(config.dataDir)
  secureDataDir(paths.root) // done by the serve command already, before lmdb loaded; a no-op then
  const lock = acquireLock(paths.lock, paths.root, 'pind serve')
  const life = new Lifecycle(log)
  life.add('data dir lock', () => { lock.release() })
  let draining = false
  try {
    const startedAt = Date.now()
    // what the components report as they work; the gauges read from them are added once they exist (metrics.watch)
    const metrics = new Metrics()
    const observer = (operation: string, seconds: number, outcome: string): void => { metrics.s3Request(operation, seconds, outcome) }

    // where blocks live (disk or S3), behind one indirection that `pind blocks migrate` can switch
    progress('opening the block store')
    const blocks = new SwitchableBackend(await openDataDirBackend(config, paths, { log, observer, record: true }))
    life.add('block store', () => blocks.close())
    log.info('block store', { store: blocks.describe() })

    // the ledger's indexes are upgraded here, before libp2p starts; what serving does not depend on, once it serves (below)
    progress('opening the ledger')
    const components = await assemble(paths, config, { graceMs: config.expiryGrace * 1000, blocks, onUpgrade: ledgerUpgradeProgress(log, progress), upgradeLater: true, recordLedger: true, log, follow: true })
    life.add('ledger and denylists', async () => { await components.stop() })
    const { core } = components
    const { ledger, staging, usage } = core
    const { pins, notes } = ledger

    // what is denied (the operator's denials, the denylists), read before anything is served
    progress('reading the denylists')
    const denials = await readDenials(components.denials)
    const denylists = await components.denylists()
    // one answer to "may this block be served" for the gateway and bitswap
    const policy = new ServePolicy({ pins: core.servedBlocks, scope: config.gatewayPolicy, gatewayReadThrough: config.gatewayNetworkTimeout > 0, denied: (cid, path) => denials.denied(cid, path) })
    const refusal = (cid: CID): Refusal | undefined => policy.refusal(cid)

    progress('starting the IPFS node')
    const { ipfs, routingOn, find } = await startServeNode(config, { blocks, datastore: ledger.datastore(), privateKey: await loadOrCreateIdentity(paths.identity), mayServe: (cid) => policy.mayServe(cid, 'bitswap'), metrics, log })
    life.add('ipfs node', () => ipfs.stop())
    const network = new BlockNetwork(ipfs, config.p2pPeers, config.originAddresses)

    // blocks and bytes stored, current for /metrics and `pind status`: a walk (begun now), then what commits and gc report
    usage.current().catch(() => {})
    // what a crash left: unfinished imports (kept: the sealed ones of paid uploads whose notes reconciliation has yet to fulfil)
    const leftovers = await staging.sweepLeftovers(stagingInUse(await notes.all()))
    if (leftovers > 0) log.warn('removed unfinished imports left by a previous run', { count: leftovers })
    // the blocks this front end's last run marked in the shared ledger's block fence are not being written any more
    // (it was killed while writing them): their marks go now, not in an hour, so that the recovery below and gc can judge them
    const unmarked = await core.lock.ownMarks(ipfs.peerId).catch((err: Error) => { log.warn('could not take away the block marks of the last run: they lapse within the hour', { error: err.message }); return 0 })
    if (unmarked > 0) log.warn('took away the block marks the last run left in the ledger (killed while writing)', { blocks: unmarked })
    // the blocks of uploads written straight to the store that a crash cut: deleted (unless a pin or a note holds them) before anything is served
    const discard = async (b: Array<{ cid: CID, bytes: number }>): Promise<{ removed: number, freedBytes: number }> => await removeUnreferenced(core.gc, b)
    progress('removing the blocks of unfinished uploads')
    await recoverTicketWrites({ journals: core.journals, discard, tickets: ledger.tickets, log })

    // the HTTP server listens now (its port makes the public URL) and answers 503 until every route is added
    const router = new Router()
    const proxies: ReadonlySet<string> = new Set(config.trustedProxies)
    // what per-client limits count by: the client's address (proxies considered; IPv6 by /64)
    const clientOf = (req: IncomingMessage): string => clientKey(clientIp(req, proxies))
    configureSending({ budgetBytes: config.httpSendBudget, minRate: config.httpMinSendRate, graceMs: config.httpMinSendRateGrace * 1000, log: log.child({ component: 'http' }) })
    const connections = connectionLimits({ maxConnections: config.httpMaxConnections, maxPerClient: config.httpMaxConnectionsPerClient })
    const rateLimiter = new RateLimiter({ unpaidPerMinute: config.rateLimitUnpaid, readsPerMinute: config.rateLimitReads, trustedProxies: config.trustedProxies, admittedByRoute: [MCP_PATH] })
    const http = createHttpServer(router, log, {
      onRequest: (r) => { metrics.request(r.method, r.route, r.status, r.seconds, r.bytesIn, r.bytesOut) },
      cors: { origins: config.corsOrigins.filter(o => o !== 'none') },
      rateLimiter,
      headTimeoutMs: config.httpHeadTimeout * 1000,
      idleTimeoutMs: config.httpIdleTimeout * 1000,
      maxConnections: connections.maxConnections,
      maxConnectionsPerClient: connections.maxPerClient,
      trustedProxies: config.trustedProxies,
      starting: true
    })
    const bound = await http.listen(config.host, config.port).catch((err: NodeJS.ErrnoException) => {
      throw listenFailure('the HTTP address', { address: `${config.host}:${config.port}`, ...(err.code != null ? { code: err.code } : {}) }, '--port (PIND_PORT) / --host (PIND_HOST)')
    })
    const url = `http://${bound.host.includes(':') ? `[${bound.host}]` : bound.host}:${bound.port}`
    const publicUrl = config.publicUrl ?? url
    let httpClosed = false
    life.add('http server', async () => { if (!httpClosed) await http.close(0) })

    // the gate after the HTTP address is ours: a start that cannot listen says that alone, no payment warnings before it
    const prices = pricesOf(config)
    const gate = paymentGate(config, prices, log, (event, amount, reason, network) => { metrics.payment(event, amount, reason, network) })

    // this serve among the front ends that share the ledger (refused beside ones it cannot work with),
    // and the leases on the work that runs on one of them at a time
    await life.start('front end beat', joined(new FrontEndBeat({
      frontEnds: ledger.frontEnds,
      self: { id: ipfs.peerId, url, version: VERSION, blockstore: blocks.describe(), ...(gate?.settler != null ? { settler: gate.settler } : {}), startedAt: new Date(startedAt).toISOString() },
      sharedBlocks: blocks.kind === 's3',
      intervalMs: BEAT_INTERVAL_MS,
      log
    })))
    const leases = new LeaseKeeper({ leases: ledger.leases, holder: ipfs.peerId, names: Object.values(LEASES), ttlMs: LEASE_TTL_MS, log: log.child({ component: 'leases' }) })
    await life.start('leases', leases)

    // settlement notes earlier runs left, reconciled against the token's authorization state on chain
    const chain = await components.chain()
    // several networks: each one's chain (a note, or a retried payment, is read on the chain it was paid on)
    const chains = networkChains(config, chain)
    // each payment's work done once; a note whose request is over is reconciled without waiting
    const once = new PaymentOnce()
    const settlements = settlementReconciliation(config, notes, chain, new Date(startedAt), core.settlement, log.child({ component: 'settlements' }), () => leases.holds(LEASES.reconcile), {
      // notes are stamped with the front end that wrote them (routes.ts); one unseen for three beats is gone
      self: ipfs.peerId,
      alive: async () => new Set((await ledger.frontEnds.list(3 * BEAT_INTERVAL_MS)).map(f => f.id)),
      running: (id) => once.isRunning(id)
    }, chains)
    await life.start('settlement reconciler', settlements.component)
    // what requests retrying a payment with an open note check it with
    const openNotes: OpenNoteDeps = { notes, ledger: pins, fulfil: core.settlement.fulfil, log: log.child({ component: 'settlements' }), ...(chain != null ? { chain } : {}), ...(chains.size > 1 ? { chains } : {}) }

    // gc by itself: on a schedule, and when the bytes pins released pass the watermark
    const maintenance = new Maintenance()
    const gc = new GcSchedule(core.gc, {
      intervalMs: config.gcInterval * 1000,
      watermarkBytes: config.gcWatermark,
      log: log.child({ component: 'gc' }),
      committed: async () => { await pins.committed() },
      maintenance,
      onRun: (r) => { metrics.gcRun(r.trigger, r.outcome, r.removedBlocks, r.freedBytes, r.seconds) },
      when: () => leases.holds(LEASES.gc)
    })
    await life.start('gc', gc)
    const unwatchReleased = pins.watchReleased((_blocks, bytes) => { gc.released(bytes) })
    life.add('gc: released blocks', unwatchReleased)
    // front ends sharing the bucket: what this one found absent (or present) may have changed by another's hand
    if (blocks.kind === 's3') {
      life.add('shared blocks', pins.watchCommitted((c) => {
        if (c.referenced.length + c.released.length > 0) blocks.forget([...c.referenced, ...c.released].map(s => CID.parse(s)))
      }))
      life.add('shared blocks: feed lost', pins.watchLost(() => { blocks.forget() }))
    }

    // the DHT's provider records of what is pinned here, renewed region by region
    const provideKind = config.provideStrategy === 'all' ? 'blocks' : 'roots'
    const announcer = ipfs.routing.announcer
    const reprovider = announcer != null
      ? new Reprovider({ keys: ledger.provides, kind: provideKind, announcer, intervalMs: config.reprovideInterval * 1000, self: ipfs.peerId, log: log.child({ component: 'reprovider' }), onRegion: (r) => { metrics.provided(r.provided, r.failed) } })
      : undefined
    if (reprovider != null) await life.start('reprovider', reprovider)
    await life.start('front end takeover', new FrontEndTakeover({
      frontEnds: ledger.frontEnds,
      provides: ledger.provides,
      self: ipfs.peerId,
      deadAfterMs: DEAD_AFTER_MS,
      intervalMs: TAKEOVER_INTERVAL_MS,
      when: () => leases.holds(LEASES.takeover),
      log: log.child({ component: 'front ends' })
    }))

    metrics.watch(metricsSources(pins, async () => await usage.current(), () => ipfs.connections().length,
      () => gate != null ? { settlesPending: gate.settlesPending, ...(gate.balance?.balance != null ? { settlerBalanceWei: gate.balance.balance } : {}), ...(gate.nonceRecoveries != null ? { settlerNonceRecoveries: gate.nonceRecoveries } : {}), networks: gate.status().networks.map(n => ({ network: n.network, ok: n.ok, ...(n.settlerBalanceWei != null ? { settlerBalanceWei: BigInt(n.settlerBalanceWei) } : {}) })) } : undefined, {
        ...(routingOn ? { routing: () => ipfs.routing.status() } : {}),
        ...(reprovider != null ? { provides: async () => await reprovider.status() } : {}),
        s3Up: () => blocks.kind === 's3' ? blocks.writable() : undefined,
        sending: sendingStatus,
        uploadChunks: () => staging.chunkBudget,
        gcUnreferencedBytes: () => gc.unreferencedBytes,
        ...(ledger.poolStats != null ? { ledgerPool: () => (ledger.poolStats as NonNullable<typeof ledger.poolStats>).call(ledger) } : {}),
        leases: () => ({ names: Object.values(LEASES), held: leases.held() }),
        ...(opts.runtimeCollections != null ? { runtimeCollections: opts.runtimeCollections } : {}),
        ...(opts.runtimeMallocTrims != null ? { runtimeMallocTrims: opts.runtimeMallocTrims } : {}),
        ...(opts.runtimeMapTrims != null ? { runtimeMapTrims: opts.runtimeMapTrims } : {})
      }))
    ledger.observeCalls?.((operation, seconds, ok) => { metrics.ledgerCall(operation, seconds, ok) })
    if (gate != null) {
      progress('checking the payment settings')
      await life.start('payment gate', gate)
    }
    const payments = paymentsCheck(config, gate)

    progress('starting the services')
    const keystore = await core.keystore()
    const issuer = config.tokenIssuer ?? publicUrl
    const tokens = core.tokens(keystore, issuer, config.tokenTtl)
    // admin commands on a stopped data dir mint tokens this serve accepts, sweep with its grace and report its provide schedule
    await ledger.recordSettings({ tokenIssuer: issuer, tokenTtl: config.tokenTtl, expiryGrace: config.expiryGrace, provideStrategy: config.provideStrategy, reprovideInterval: config.reprovideInterval })

    const deny: DenyAdminDeps = { ledger: ledger.denials, pins, denials, files: () => denylists.files() }
    await life.start('admin socket', adminSocket(paths, {
      keys: { keystore, tokens, tokenLedger: ledger.tokens },
      ledger,
      gc: core.gc,
      settlements: settlements.admin,
      metrics,
      deny,
      routing: {
        keys: ledger.provides,
        strategy: provideKind,
        intervalMs: config.reprovideInterval * 1000,
        live: { routing: config.routing, status: () => ipfs.routing.status(), ...(reprovider != null ? { reprovider } : {}) }
      },
      delegates: () => ipfs.multiaddrs(),
      status: async () => await operatorStatus({
        ledger,
        dataDir: paths.root,
        usage: async () => await usage.current(),
        live: { pid: process.pid, startedAt, version: VERSION, url, peerId: ipfs.peerId, multiaddrs: ipfs.multiaddrs(), peers: () => ipfs.connections(), payments }
      }),
      maintenance,
      blocks: {
        current: () => blocks.active,
        // the bucket and the credentials come from the admin client; this serve's cache setting applies
        openTarget: async (location, c) => await openS3Backend(location,
          { s3AccessKeyId: c.accessKeyId, s3SecretAccessKey: c.secretAccessKey, ...(c.sessionToken != null ? { s3SessionToken: c.sessionToken } : {}), s3CacheSize: config.s3CacheSize, s3Timeout: config.s3Timeout, s3VerifyReads: config.s3VerifyReads },
          { blocksDir: paths.blocks, cacheDir: paths.s3Cache, log, observer, requireReachable: true }),
        lock: core.lock,
        paths,
        pins,
        switchTo: (target) => {
          blocks.switchTo(target)
          // the usage figures are the new store's from now on
          usage.reset()
          log.warn('blocks migrated: this serve now keeps its blocks in S3', { store: target.describe() })
        }
      }
    }, log))
    if (config.metricsListen != null) await life.start('metrics listener', metricsListener(config.metricsListen, metrics, log))

    await life.start('expiry sweeper', startedBy(() => startExpirySweeper(pins, config.expiryGrace * 1000, config.expirySweepInterval * 1000, log, () => leases.holds(LEASES.expiry))))
    await life.start('archiver', startedBy(() => startArchiver(pins, archiveDelayMs(config.paymentTimeout), ARCHIVE_INTERVAL_MS, log, () => leases.holds(LEASES.archive))))
    // pins by CID: their DAGs fetched from the network, queued ones resumed
    await life.start('pin fetcher', new PinFetcher({
      ledger: pins,
      // front ends sharing the ledger claim each pin under their peer id: one fetches it (FETCH_LEASE_MS)
      holder: ipfs.peerId,
      staging,
      lock: core.lock,
      node: ipfs,
      network,
      log: log.child({ component: 'fetcher' }),
      concurrency: config.pinFetchConcurrency,
      blockConcurrency: BLOCKS_IN_FLIGHT,
      stallMs: config.pinStallTimeout * 1000,
      retryWindowMs: config.pinRetryWindow * 1000,
      refusal,
      ...(find != null ? { findProviders: find } : {})
    }))
    const retry = new RetryLater(log)
    life.add('commit retries', () => { retry.stop() })

    apiRoutes(router, {
      draining: () => http.draining(),
      config,
      core,
      blocks,
      publicUrl,
      startedAt,
      ipfs,
      routingOn,
      network,
      ...(find != null ? { find } : {}),
      policy,
      gate,
      payments,
      prices,
      once,
      keystore,
      tokens,
      clientOf,
      mcpLimits: { read: (req) => { rateLimiter.admitRead(req) }, write: (req, credentials) => rateLimiter.admitWrite(req, credentials) },
      openNotes,
      retry,
      discard,
      onLeftover: (bytes) => { gc.released(bytes) },
      log
    })
    // the rest of the ledger's upgrade (records rewritten in the current layout, every reader reads both): while serving
    await life.start('ledger upgrade', ledgerUpgradeLater(ledger, log))
    http.ready()

    return {
      url,
      publicUrl,
      peerId: ipfs.peerId,
      multiaddrs: ipfs.multiaddrs(),
      dataDir: paths.root,
      payments,
      ledger: core.ledgerDescription,
      blocks: blocks.describe(),
      drain: () => { http.drain() },
      stop: async (deadlineMs) => {
        draining = true
        await http.close(deadlineMs)
        httpClosed = true
        draining = false
        await life.stop()
      },
      stopping: () => draining ? 'in-flight requests' : life.current()
    }
  } catch (err) {
    await life.stop()
    throw err
  }
}

/** the front end's beat, its refusal to join the others as a start-up error */
function joined (beat: FrontEndBeat): Component {
  return {
    start: async () => {
      try {
        await beat.start()
      } catch (err) {
        if (err instanceof FrontEndConflictError) throw new StartupError(err.message)
        throw err
      }
    },
    stop: async () => { await beat.stop() }
  }
}

/** the denials, or a start-up error naming the setting when a denylist file has gone since the configuration was checked */
async function readDenials (denials: () => Promise<Denials>): Promise<Denials> {
  try {
    return await denials()
  } catch (err) {
    if (err instanceof DenylistConfigError) throw new StartupError(`${err.message}: fix --denylist (PIND_DENYLIST)`)
    throw err
  }
}

/** the ledger's upgrade steps serving does not depend on, run in the background once serve serves */
function ledgerUpgradeLater (ledger: { upgradeLater: Ledger['upgradeLater'] }, log: Logger): Component {
  let upgrading: ReturnType<Ledger['upgradeLater']> | undefined
  return {
    start: () => {
      const upgradeLog = ledgerUpgradeProgress(log, () => {})
      let upgraded = false
      upgrading = ledger.upgradeLater((p) => { upgraded = true; upgradeLog(p) })
      upgrading.done.then((done) => { if (done && upgraded) log.notice('ledger upgraded') }, (err: unknown) => { log.error('the ledger upgrade failed: the next start goes on with it', { error: err }) })
    },
    stop: async () => { await upgrading?.stop() }
  }
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
