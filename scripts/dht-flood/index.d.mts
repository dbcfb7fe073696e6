// Hand-written types for index.mjs.
export declare const AMINO: '/ipfs/kad/1.0.0'
export declare const TARGETS: { healthMs: number, rssGrowthMiB: number }

export interface FloodOptions {
  /** pind's libp2p multiaddr, ending in /p2p/<id> */
  target: string
  /** pind's /health */
  healthUrl: string
  /** pind's process id (RSS from /proc) */
  pid: number
  /** messages of the burst phase (default 3000; 0: none) */
  burst?: number
  /** how long one step (the dial, a new stream, a phase, GET_PROVIDERS, the attacker's stop) may take before it fails (default 120 s) */
  phaseTimeoutMs?: number
  /** each phase's line, as soon as the phase ends */
  log?: (line: string) => void
}

export interface FloodPhase {
  name: 'undialable' | 'huge' | 'bomb' | 'dialable' | 'burst'
  messages: number
  addresses: number
  /** from the first message written to the reply of the PING after the last */
  handledMs: number
  /** the slowest /health answer while the phase ran (one still unanswered counts its wait so far) */
  healthMaxMs: number
  /** /health answers while the phase ran */
  healthSamples: number
  /** pind's RSS once the phase was handled */
  rssMiB: number
  /** huge and bomb only: why pind cut the stream (what the attacker saw), or false when pind read the message whole */
  cut?: string | false
  /** why the phase did not end with pind's reply to its PING (e.g. kad-dht cut the stream) */
  error?: string
}

export interface FloodReport {
  /** the attacker's peer id */
  attacker: string
  phases: FloodPhase[]
  /** the slowest /health answer during the flood (every phase but the burst) */
  health: { maxMs: number }
  /** pind's RSS before the flood and after the flood (every phase but the burst) */
  rss: { beforeMiB: number, afterMiB: number, growthMiB: number }
  /** addresses pind returns for the attacker in GET_PROVIDERS for a CID of the dialable phase */
  addressesReturned: number | string | undefined
  /** the CIDs each phase announced */
  cids: Record<string, string[]>
}

export declare function addProviderFlood (o: FloodOptions): Promise<FloodReport>
export declare function missedTargets (report: FloodReport): string[]
export declare function describe (report: FloodReport): string
export declare function rssMiB (pid: number): number
export declare function startDhtServer (o: { bootstrap: string[], args?: string[], env?: Record<string, string> }): Promise<{ url: string, target: string, pid: number, dataDir: string, stop(): Promise<void> }>
