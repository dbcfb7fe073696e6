// Hand-written types for crash-test.mjs.
export interface CrashTestOptions {
  rounds?: number
  concurrency?: number
  /** run dist/pind.cjs on the pinned node instead of the packaged dist/pind */
  bundle?: boolean
  log?: (line: string) => void
  /** where the blocks live: extra flags and environment for every pind command (default: blocks on disk) */
  blockstore?: { args: string[], env: Record<string, string> }
  /** serves sharing the ledger (1 or 2); more than one needs `database` and an S3 `blockstore`; each round kills one */
  frontEnds?: number
  /** a PostgreSQL database URL: the ledger (--ledger postgres) */
  database?: string
}
export declare function runCrashTest (opts?: CrashTestOptions): Promise<{ rounds: number, acknowledged: number, orphansFreed: number, /** paid writes recorded from their settlement notes */ fulfilled: number }>
