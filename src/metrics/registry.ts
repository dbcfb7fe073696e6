/**
 * Prometheus metrics (prom-client; this folder is its only importer).
 * Counters are updated as things happen; gauges that need the ledger, the
 * blockstore or libp2p are read at scrape time, the costly ones cached.
 *
 *   pind_http_requests_total{method,route,status}
 *   pind_http_request_duration_seconds{method,route}        histogram
 *   pind_http_request_bytes_total / pind_http_response_bytes_total   (declared Content-Length)
 *   pind_payments_total{event}    required | refused | verified | settled | settle_failed
 *   pind_payments_settled_atomic_total                      USDC atomic units settled
 *   pind_settles_failed_total{reason}                       failed settlements; reason "server:…" when this side failed
 *   pind_settles_pending                                    settlements under way
 *   pind_network_payments_total{network,event}              refused | verified | settled | settle_failed, by the network paid on
 *   pind_network_settled_atomic_total{network}              atomic units settled on each network (in its asset)
 *   pind_network_payments_up{network}                       1 while payments on the network can be taken, else 0
 *   pind_network_settler_balance_wei{network}               each network's embedded settler gas balance (when watched)
 *   pind_settler_balance_wei                                the embedded settler's gas balance (when watched)
 *   pind_settler_nonce_recoveries_total                     stuck settlement nonces re-sent, replaced or filled (embedded settler)
 *   pind_pins{status}             queued | pinning | pinned | failed (live pins), removed
 *   pind_fetch_queue_depth
 *   pind_blockstore_blocks / pind_blockstore_bytes
 *   pind_libp2p_connections
 *   pind_nodejs_array_buffers_bytes                         ArrayBuffer memory (part of external)
 *   pind_nodejs_v8_malloced_bytes / pind_nodejs_v8_peak_malloced_bytes   V8's own malloc'd memory (compiler zones, ...) now, and its peak
 *   pind_http_send_budget_bytes / pind_http_send_budget_limit_bytes   response bytes queued in user space, and the budget
 *   pind_http_send_budget_waits_total                       times a response waited for the send budget
 *   pind_http_slow_responses_cut_total                      responses cut below --http-min-send-rate
 *   pind_http_send_budget_evictions_total                   responses cut to give their budget to others (budget spent)
 *   pind_upload_chunk_buffers / pind_upload_chunk_buffer_waits_total   upload chunk buffers held now, and times an upload waited for one
 *   pind_gc_runs_total{trigger,outcome}   serve's own gc runs: interval | watermark; done | failed | stopped | skipped
 *   pind_gc_removed_blocks_total / pind_gc_freed_bytes_total   what those runs removed
 *   pind_gc_duration_seconds                                histogram of those runs
 *   pind_gc_unreferenced_bytes_estimate                     bytes released since the last run's mark (the watermark's measure)
 * with --ledger postgres:
 *   pind_ledger_pool_connections / pind_ledger_pool_idle_connections / pind_ledger_pool_waiting   the pool's connections open, idle, and callers waiting for one
 *   pind_ledger_call_duration_seconds{operation}            histogram of ledger calls by contract method (pins.get, notes.markSettling, …)
 *   pind_ledger_call_failures_total{operation}              those that failed (the database unreachable among them)
 *   pind_leases_held{lease}                                 1 while this front end holds the lease (gc, expiry, archive, reconcile), else 0
 * with --routing on:
 *   pind_routing_table_peers / pind_dht_records_stored      (routing table; records others store here)
 *   pind_provide_keys / pind_provide_pending                (CIDs announced; due now)
 *   pind_provide_oldest_pending_seconds                     (how late the most overdue announcement is)
 *   pind_provides_total{result}   done | failed             (CIDs announced, by outcome)
 *   pind_find_providers_seconds{source}                     histogram: dht | delegated
 * with --blockstore s3:
 *   pind_s3_requests_total{operation,outcome}   ok | not_found | unavailable | timeout | error
 *   pind_s3_request_duration_seconds{operation}  histogram (retries included)
 *   pind_s3_up                                   1 while the bucket answers (S3 block backend only)
 * plus prom-client's default process metrics (RSS, CPU, event loop lag, heap).
 */
import { getHeapStatistics } from 'node:v8'
import type client from 'prom-client'
// prom-client's parts this registry uses, each from its own module: its index also loads the
// Pushgateway (node:https, and TLS with it), Summary and the cluster aggregator, ~10 ms of serve's
// start (docs/performance.md). Their types are the index's (prom-client-parts.d.ts).
import collectDefaultMetrics from 'prom-client/lib/defaultMetrics.js'
import Counter from 'prom-client/lib/counter.js'
import Gauge from 'prom-client/lib/gauge.js'
import Histogram from 'prom-client/lib/histogram.js'
import Registry from 'prom-client/lib/registry.js'
import { RequestTally } from './request-tally.js'

export interface MetricsSources {
  pinCounts(): Promise<Record<string, number>>
  fetchQueueDepth(): Promise<number>
  blockstoreUsage(): Promise<{ blocks: number, bytes: number }>
  connections(): number
  /** the payment gate's settlements under way and the settler's balance (absent without a gate) */
  payments?(): { settlesPending: number, settlerBalanceWei?: bigint, settlerNonceRecoveries?: number, networks?: Array<{ network: string, ok: boolean, settlerBalanceWei?: bigint }> } | undefined
  /** present when routing is on */
  routing?(): { routingTable: number, records: number }
  /** present when the DHT announces (the reprovider) */
  provides?(): Promise<{ keys: number, pending: number, oldestPendingSeconds: number }>
  /** S3 block backend: does the bucket answer? (undefined: blocks on disk) */
  s3Up?(): boolean | undefined
  /** the send budget of streamed responses (http/send-budget.ts) */
  sending?(): { inUse: number, limit: number, waits: number, slowCuts: number, evictions: number }
  /** the budget of upload chunk buffers (ipfs/chunk-budget.ts) */
  uploadChunks?(): { inUse: number, waits: number }
  /** serve's gc schedule: bytes released since its last run (an estimate) */
  gcUnreferencedBytes?(): number
  /** a ledger on a database server: its connection pool */
  ledgerPool?(): { total: number, idle: number, waiting: number }
  /** the leases front ends sharing a ledger take turns on, and whether this one holds each */
  leases?(): { names: readonly string[], held: readonly string[] }
  /** full collections run by the runtime tuning (runtime/apply.ts) */
  runtimeCollections?(): number
  /** glibc malloc_trim calls the runtime tuning made (--runtime-malloc-trim) */
  runtimeMallocTrims?(): number
  /** the times LMDB's mapped pages left the resident set (--runtime-map-trim) */
  runtimeMapTrims?(): number
}

export class Metrics {
  readonly registry = new Registry()
  private readonly requests = new RequestTally([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30])
  /** body bytes in and out, shown at scrape (a counter's inc per request costs a label hash) */
  private bytesIn = 0
  private bytesOut = 0
  private readonly payments: client.Counter<'event'>
  private readonly settled: client.Counter
  private readonly networkPayments: client.Counter<'network' | 'event'>
  private readonly networkSettled: client.Counter<'network'>
  private readonly settlesFailed: client.Counter<'reason'>
  private readonly provides: client.Counter<'result'>
  private readonly findSeconds: client.Histogram<'source'>
  private readonly s3Requests: client.Counter<'operation' | 'outcome'>
  private readonly s3Duration: client.Histogram<'operation'>
  private readonly gcRuns: client.Counter<'trigger' | 'outcome'>
  private readonly gcRemoved: client.Counter
  private readonly gcFreed: client.Counter
  private readonly gcSeconds: client.Histogram
  private readonly paymentChildren = new Map<string, { inc: () => void }>()
  private ledgerSeconds: client.Histogram<'operation'> | undefined
  private ledgerFailures: client.Counter<'operation'> | undefined
  private readonly ledgerChildren = new Map<string, client.Histogram.Internal<'operation'>>()

  /** what components report as they work (counters, histograms) and the process's own figures: made first, before the components */
  constructor () {
    const r = this.registry
    collectDefaultMetrics({ register: r, prefix: 'pind_' })
    // the default metrics have heap and external memory but not the ArrayBuffer share of external (upload bodies, blocks)
    new Gauge({ name: 'pind_nodejs_array_buffers_bytes', help: 'memory held by ArrayBuffers (a part of external memory)', registers: [r], collect () { this.set(process.memoryUsage().arrayBuffers) } })
    // nor V8's memory outside its heap: the zones its compilers and parser allocate with malloc, briefly
    // (RSS peaks with neither the heap nor ArrayBuffers moving); the peak since start is mostly start-up's
    // parse and compile of the bundle (docs/internals.md, registry.ts)
    new Gauge({ name: 'pind_nodejs_v8_malloced_bytes', help: "memory V8 allocated with malloc (compiler and parser zones), outside its heap", registers: [r], collect () { this.set(getHeapStatistics().malloced_memory) } })
    new Gauge({ name: 'pind_nodejs_v8_peak_malloced_bytes', help: "the most memory V8 has held allocated with malloc since the process started (start-up's parse and compile included)", registers: [r], collect () { this.set(getHeapStatistics().peak_malloced_memory) } })
    for (const m of this.requests.metrics()) r.registerMetric(m)
    const bytes = (): { in: number, out: number } => ({ in: this.bytesIn, out: this.bytesOut })
    new Counter({ name: 'pind_http_request_bytes_total', help: 'request body bytes (declared Content-Length)', registers: [r], collect () { this.reset(); this.inc(bytes().in) } })
    new Counter({ name: 'pind_http_response_bytes_total', help: 'response body bytes (declared Content-Length)', registers: [r], collect () { this.reset(); this.inc(bytes().out) } })
    this.payments = new Counter({ name: 'pind_payments_total', help: 'x402 payments by event: required (402 without payment), refused, verified, settled, settle_failed', labelNames: ['event'], registers: [r] })
    this.settled = new Counter({ name: 'pind_payments_settled_atomic_total', help: 'USDC settled, in atomic units (10^-6 USDC)', registers: [r] })
    this.networkPayments = new Counter({ name: 'pind_network_payments_total', help: 'x402 payments by the network paid on and event: refused, verified, settled, settle_failed', labelNames: ['network', 'event'], registers: [r] })
    this.networkSettled = new Counter({ name: 'pind_network_settled_atomic_total', help: 'settled, in atomic units of each network\'s asset', labelNames: ['network'], registers: [r] })
    this.settlesFailed = new Counter({ name: 'pind_settles_failed_total', help: 'failed settlements by reason (the facilitator\'s; "server:" when the payment was still valid and this side failed)', labelNames: ['reason'], registers: [r] })
    this.provides = new Counter({ name: 'pind_provides_total', help: 'CIDs announced on the DHT, by result: done (at least one of their peers took the record) or failed', labelNames: ['result'], registers: [r] })
    this.findSeconds = new Histogram({ name: 'pind_find_providers_seconds', help: 'provider lookups by routing source', labelNames: ['source'], buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [r] })
    this.s3Requests = new Counter({ name: 'pind_s3_requests_total', help: 'requests to the S3 bucket by operation and outcome (ok, not_found, unavailable, timeout, error)', labelNames: ['operation', 'outcome'], registers: [r] })
    this.s3Duration = new Histogram({ name: 'pind_s3_request_duration_seconds', help: 'S3 request duration by operation, retries included', labelNames: ['operation'], buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [r] })
    this.gcRuns = new Counter({ name: 'pind_gc_runs_total', help: 'gc runs serve started by itself, by trigger (interval, watermark) and outcome (done, failed, stopped; skipped: another maintenance task was running)', labelNames: ['trigger', 'outcome'], registers: [r] })
    this.gcRemoved = new Counter({ name: 'pind_gc_removed_blocks_total', help: 'blocks serve\'s own gc runs removed', registers: [r] })
    this.gcFreed = new Counter({ name: 'pind_gc_freed_bytes_total', help: 'bytes serve\'s own gc runs removed', registers: [r] })
    this.gcSeconds = new Histogram({ name: 'pind_gc_duration_seconds', help: 'how long serve\'s own gc runs took', buckets: [0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 1800], registers: [r] })
  }

  /** The gauges read from the components at each scrape, once they exist (once: a second call would register them twice). */
  watch (sources: MetricsSources): void {
    const r = this.registry
    const collections = sources.runtimeCollections
    if (collections != null) {
      new Counter({ name: 'pind_runtime_collections_total', help: 'full garbage collections run by --runtime-idle-collection and --runtime-heap-trim', registers: [r], collect () { this.reset(); this.inc(collections()) } })
    }
    const mallocTrims = sources.runtimeMallocTrims
    if (mallocTrims != null) {
      new Counter({ name: 'pind_runtime_malloc_trims_total', help: 'glibc malloc_trim calls made by --runtime-malloc-trim (one after each of those collections)', registers: [r], collect () { this.reset(); this.inc(mallocTrims()) } })
    }
    const mapTrims = sources.runtimeMapTrims
    if (mapTrims != null) {
      new Counter({ name: 'pind_runtime_map_trims_total', help: 'times the pages of LMDB\'s mapped files left the resident set (--runtime-map-trim, one after each idle collection)', registers: [r], collect () { this.reset(); this.inc(mapTrims()) } })
    }
    const sending = sources.sending
    if (sending != null) {
      new Gauge({ name: 'pind_http_send_budget_bytes', help: 'response bytes streamed responses hold queued in user space now (--http-send-budget)', registers: [r], collect () { this.set(sending().inUse) } })
      new Gauge({ name: 'pind_http_send_budget_limit_bytes', help: 'the send budget (--http-send-budget)', registers: [r], collect () { this.set(sending().limit) } })
      new Counter({ name: 'pind_http_send_budget_waits_total', help: 'times a streamed response waited for the send budget', registers: [r], collect () { this.reset(); this.inc(sending().waits) } })
      new Counter({ name: 'pind_http_slow_responses_cut_total', help: 'streamed responses cut because their client took bytes slower than --http-min-send-rate', registers: [r], collect () { this.reset(); this.inc(sending().slowCuts) } })
      new Counter({ name: 'pind_http_send_budget_evictions_total', help: 'streamed responses cut to give their send budget to others: the budget was spent and their client had taken nothing for a second', registers: [r], collect () { this.reset(); this.inc(sending().evictions) } })
    }
    const uploadChunks = sources.uploadChunks
    if (uploadChunks != null) {
      new Gauge({ name: 'pind_upload_chunk_buffers', help: 'upload chunk buffers (1 MiB) held now: bytes read from uploads and not yet staged', registers: [r], collect () { this.set(uploadChunks().inUse) } })
      new Counter({ name: 'pind_upload_chunk_buffer_waits_total', help: 'times an upload waited for a chunk buffer (the budget was spent)', registers: [r], collect () { this.reset(); this.inc(uploadChunks().waits) } })
    }
    new Gauge({
      name: 'pind_pins', help: 'pins by status (live pins) and removed', labelNames: ['status'], registers: [r],
      // a ledger away (its database unreachable) keeps the last figures: the scrape goes on, the pool's gauges with it
      async collect () { for (const [status, n] of Object.entries(await sources.pinCounts().catch(() => ({})))) this.set({ status }, n) }
    })
    new Gauge({ name: 'pind_fetch_queue_depth', help: 'pins by CID waiting or being fetched', registers: [r], async collect () { const n = await sources.fetchQueueDepth().catch(() => undefined); if (n != null) this.set(n) } })
    // each reads the current usage itself (set from the other's collect, it would show the previous scrape's)
    // (a bucket away fails the walk: the last figures stay, the scrape goes on)
    new Gauge({ name: 'pind_blockstore_blocks', help: 'blocks in the block store (files on disk or objects in S3)', registers: [r], async collect () { const u = await sources.blockstoreUsage().catch(() => undefined); if (u != null) this.set(u.blocks) } })
    new Gauge({ name: 'pind_blockstore_bytes', help: 'bytes of blocks in the block store', registers: [r], async collect () { const u = await sources.blockstoreUsage().catch(() => undefined); if (u != null) this.set(u.bytes) } })
    new Gauge({ name: 'pind_settles_pending', help: 'settlements under way', registers: [r], collect () { this.set(sources.payments?.()?.settlesPending ?? 0) } })
    new Gauge({
      name: 'pind_settler_balance_wei', help: 'the embedded facilitator settler\'s balance for gas, in wei (last reading)', registers: [r],
      collect () {
        const wei = sources.payments?.()?.settlerBalanceWei
        if (wei != null) this.set(Number(wei))
      }
    })
    new Gauge({
      name: 'pind_network_payments_up', help: '1 while payments on the network can be taken, 0 while they cannot (its RPC or facilitator does not answer, its settler cannot pay gas)', labelNames: ['network'], registers: [r],
      collect () { for (const n of sources.payments?.()?.networks ?? []) this.set({ network: n.network }, n.ok ? 1 : 0) }
    })
    new Gauge({
      name: 'pind_network_settler_balance_wei', help: 'each network\'s embedded settler balance for gas, in wei (last reading)', labelNames: ['network'], registers: [r],
      collect () { for (const n of sources.payments?.()?.networks ?? []) if (n.settlerBalanceWei != null) this.set({ network: n.network }, Number(n.settlerBalanceWei)) }
    })
    new Counter({
      name: 'pind_settler_nonce_recoveries_total', help: 'the embedded settler\'s stuck settlement nonces recovered: a transaction re-broadcast, replaced with higher fees, a nonce gap filled, or the nonce manager reset', registers: [r],
      collect () {
        const n = sources.payments?.()?.settlerNonceRecoveries
        if (n != null) { this.reset(); this.inc(n) }
      }
    })
    new Gauge({ name: 'pind_libp2p_connections', help: 'open libp2p connections', registers: [r], collect () { this.set(sources.connections()) } })
    new Gauge({
      name: 'pind_s3_up', help: '1 while the S3 bucket answers, 0 while it does not (S3 block backend only)', registers: [r],
      collect () {
        const up = sources.s3Up?.()
        if (up != null) this.set(up ? 1 : 0)
      }
    })
    const gcEstimate = sources.gcUnreferencedBytes
    if (gcEstimate != null) {
      new Gauge({ name: 'pind_gc_unreferenced_bytes_estimate', help: 'bytes of blocks released since the last gc run\'s mark, estimated from the pins\' sizes (--gc-watermark is compared with it)', registers: [r], collect () { this.set(gcEstimate()) } })
    }
    const pool = sources.ledgerPool
    if (pool != null) {
      new Gauge({ name: 'pind_ledger_pool_connections', help: 'connections the ledger\'s pool holds open to the database', registers: [r], collect () { this.set(pool().total) } })
      new Gauge({ name: 'pind_ledger_pool_idle_connections', help: 'of those, idle', registers: [r], collect () { this.set(pool().idle) } })
      new Gauge({ name: 'pind_ledger_pool_waiting', help: 'ledger calls waiting for a pooled connection', registers: [r], collect () { this.set(pool().waiting) } })
    }
    const leases = sources.leases
    if (leases != null) {
      new Gauge({
        name: 'pind_leases_held', help: 'per lease: 1 while this front end holds it (the work it guards runs here), else 0', labelNames: ['lease'], registers: [r],
        collect () {
          const l = leases()
          for (const lease of l.names) this.set({ lease }, l.held.includes(lease) ? 1 : 0)
        }
      })
    }
    const routing = sources.routing
    if (routing != null) {
      new Gauge({ name: 'pind_routing_table_peers', help: 'peers in the DHT routing table', registers: [r], collect () { this.set(routing().routingTable) } })
      new Gauge({ name: 'pind_dht_records_stored', help: 'records other peers store at this DHT server', registers: [r], collect () { this.set(routing().records) } })
    }
    const provides = sources.provides
    if (provides != null) {
      new Gauge({ name: 'pind_provide_keys', help: 'CIDs this node announces on the DHT (--provide-strategy)', registers: [r], async collect () { this.set((await provides()).keys) } })
      new Gauge({ name: 'pind_provide_pending', help: 'CIDs due to be announced now (new or due again)', registers: [r], async collect () { this.set((await provides()).pending) } })
      new Gauge({ name: 'pind_provide_oldest_pending_seconds', help: 'how late the most overdue announcement is (0: none is due)', registers: [r], async collect () { this.set((await provides()).oldestPendingSeconds) } })
    }
  }

  /** one ledger call (a ledger on a database server): its operation is a contract method's name, a fixed set */
  ledgerCall (operation: string, seconds: number, ok: boolean): void {
    const r = this.registry
    this.ledgerSeconds ??= new Histogram({ name: 'pind_ledger_call_duration_seconds', help: 'ledger calls to the database by operation (the ledger contract\'s method), however many statements each ran', labelNames: ['operation'], buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 30], registers: [r] })
    this.ledgerFailures ??= new Counter({ name: 'pind_ledger_call_failures_total', help: 'ledger calls that failed, by operation (the database unreachable, a timeout, or a refusal of the contract)', labelNames: ['operation'], registers: [r] })
    // one child per operation: a label hash per call would cost more than the call's bookkeeping
    let child = this.ledgerChildren.get(operation)
    if (child == null) {
      child = this.ledgerSeconds.labels({ operation })
      this.ledgerChildren.set(operation, child)
    }
    child.observe(seconds)
    if (!ok) this.ledgerFailures.inc({ operation })
  }

  provided (done: number, failed: number): void {
    if (done > 0) this.provides.inc({ result: 'done' }, done)
    if (failed > 0) this.provides.inc({ result: 'failed' }, failed)
  }

  /** one of serve's own gc runs ended */
  gcRun (trigger: string, outcome: string, removedBlocks: number, freedBytes: number, seconds: number): void {
    this.gcRuns.inc({ trigger, outcome })
    if (removedBlocks > 0) this.gcRemoved.inc(removedBlocks)
    if (freedBytes > 0) this.gcFreed.inc(freedBytes)
    this.gcSeconds.observe(seconds)
  }

  findProviders (seconds: number, source: string): void {
    this.findSeconds.observe({ source }, seconds)
  }

  /** one request to the S3 bucket (operation: GetObject, PutObject, …) */
  s3Request (operation: string, seconds: number, outcome: string): void {
    this.s3Requests.inc({ operation, outcome })
    this.s3Duration.observe({ operation }, seconds)
  }

  request (method: string, route: string, status: number, seconds: number, bytesIn: number, bytesOut: number): void {
    this.requests.add(method, route, status, seconds)
    this.bytesIn += bytesIn
    this.bytesOut += bytesOut
  }

  payment (event: string, amount?: bigint, reason?: string, network?: string): void {
    // networks are the configured few (the gate names only its own)
    if (network != null) {
      this.networkPayments.inc({ network, event })
      if (event === 'settled' && amount != null) this.networkSettled.inc({ network }, Number(amount))
    }
    // one child per event (a fixed few): `required` is counted on every 402
    let child = this.paymentChildren.get(event)
    if (child == null) {
      child = this.payments.labels({ event })
      this.paymentChildren.set(event, child)
    }
    child.inc()
    // reasons are the facilitator's machine codes (a small fixed set), cut to keep a bad one from growing the label set
    if (event === 'settle_failed') this.settlesFailed.inc({ reason: (reason ?? 'unknown').slice(0, 64) })
    if (event === 'settled' && amount != null) this.settled.inc(Number(amount))
  }

  async text (): Promise<{ body: string, contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType }
  }
}
