// Hand-written types for soak.mjs.
export interface SoakOptions {
  /** pind's runtime environment (default: scripts/pind.service's, runtime-env.mjs; {} for none) */
  runtimeEnv?: Record<string, string>
  minutes?: number
  /** paying clients, each with its own payer and X-Forwarded-For (default 16) */
  clients?: number
  /** clients asking for quotes (default half the paying clients) */
  quoteClients?: number
  restart?: boolean
  /** when the SIGTERM and restart comes, as a share of the run (default 1/3) */
  restartAt?: number
  sampleMs?: number
  /** seconds without load before the idle RSS is read */
  idleSeconds?: number
  /** writes a client keeps before it deletes one */
  maxLive?: number
  /** `pind gc` through the running serve every this many seconds (0: never) */
  gcEverySeconds?: number
  maxUploadBytes?: number
  maxPinBytes?: number
  /** anvil --prune-history (default true) */
  pruneHistory?: boolean | number
  /** run dist/pind.cjs on the pinned node instead of the packaged dist/pind */
  bundle?: boolean
  /** another pind binary (e.g. one built from an older commit, to compare) */
  binary?: string
  /** stops the load and cleans up when it aborts */
  signal?: AbortSignal
  /** CSV of the samples (default: a file in the run's temp dir, removed with it) */
  csv?: string
  /** extra environment for pind */
  env?: Record<string, string>
  log?: (line: string) => void
  /** serves sharing the ledger (1 or 2): more than one needs `database` and an S3 `blockstore`; clients keep to one each, the first is sampled and restarted */
  frontEnds?: number
  /** a PostgreSQL database URL: the ledger (--ledger postgres) */
  database?: string
  /** where the blocks live: extra flags and environment for every pind command (default: blocks on disk) */
  blockstore?: { args: string[], env: Record<string, string> }
}

export interface SoakSample {
  t: number
  phase: 'idle-start' | 'load' | 'idle' | 'idle-end'
  pid: number
  rss: number
  anon: number
  /** RSS of serve's mappings of ledger.mdb and ledger-archive.mdb (part of the file-backed RSS) */
  ledgerMapped: number
  /** RSS of serve's mapping of blocks/small.mdb, the packed small blocks (part of the file-backed RSS; 0 with blocks in S3) */
  smallBlocksMapped: number
  /** V8's malloc'd memory outside its heap (compiler and parser zones) now, and its peak since serve started (from /metrics) */
  v8Malloced: number
  v8PeakMalloced: number
  file: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
  fds: number
  ledgerBytes: number
  blocksBytes: number
  blocksFiles: number
  requests: number
  errors: number
  /** the machine's 1-minute load average */
  load1: number
  /** response bytes queued in user space under the send budget (pind_http_send_budget_bytes) */
  sendBudget: number
  /** upload chunk buffers (1 MiB) held (pind_upload_chunk_buffers) */
  chunkBuffers: number
}

export interface OpStats { n: number, p50Ms: number, p99Ms: number }

export interface MemoryVerdict {
  verdict: 'plateau' | 'growing'
  growthPerHourMiB: number
  growthPct: number
  windowS: number
  windowSamples: number
  meanRssMiB: number
}

export interface SoakSummary {
  minutes: number
  clients: number
  quoteClients: number
  loadSeconds: number
  requests: number
  requestsPerSecond: number
  paidWrites: number
  uploadedBytes: number
  ops: Record<string, OpStats>
  statuses: Record<string, number>
  errors: number
  errorSamples: string[]
  http5xx: number
  retries: { connection: number, throttled: number, busy: number }
  gcRuns: number
  restart: { drainMs: number, exit: number | string, startMs: number, downMs: number } | null
  writes: { acknowledged: number, live: number, verified: number, deleted: number, deletedGone: number, deletedVerifiedBefore: number, failures: string[], ok: boolean }
  money: { payers: number, reconciled: number, charged: string, chainDelta: string, payToDelta: string, settledUnacknowledged: number, mismatches: string[], ok: boolean }
  memory: MemoryVerdict & {
    idleStartRssMiB: number
    idleEndRssMiB: number
    idleEndAnonMiB: number
    idleEndVsStartPct: number
    idleStartAnonMiB: number
    maxV8PeakMallocedMiB: number
    maxV8MallocedMiB: number
    idleStartLedgerMappedMiB: number
    idleEndLedgerMappedMiB: number
    maxSmallBlocksMappedMiB: number
    idleEndSmallBlocksMappedMiB: number
    /** idle after the load against the start, both without the ledger's mapped pages */
    idleEndVsStartWithoutLedgerPct: number
    maxRssMiB: number
    maxHeapUsedMiB: number
    maxExternalMiB: number
    maxArrayBuffersMiB: number
    fds: { start: number, max: number, end: number }
    ledgerMiB: number
    blocksMiB: number
    samples: number
    loadSamples: number
    /** the machine's 1-minute load average over the loaded phase */
    loadAvg: { mean: number, max: number }
  }
  /** ledger.mdb after the run (serve stopped), by sub-database: scripts/ledger-stats.mjs; on PostgreSQL (frontEnds > 1) only `lines`, empty */
  ledger: {
    pageSize: number
    fileBytes: number
    freePages: number
    /** whole pages' bytes per acknowledged paid write, by sub-database, plus '(free pages)' and 'file' */
    bytesPerPaidWrite: Record<string, number>
    dbs: Record<string, { pages: number, leaf: number, branch: number, overflow: number, entries: number, bytes: number }>
    /** the printed table */
    lines: string[]
  }
  serviceLog: { errors: number, warnings: number, last: string[] }
  samples: SoakSample[]
  csv: string | null
}

export declare function memoryVerdict (samples: SoakSample[], durationS: number): MemoryVerdict
export declare function runSoak (opts?: SoakOptions): Promise<SoakSummary>
