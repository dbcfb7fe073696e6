// Hand-written types for crash-test.mjs.
export interface CrashTestOptions {
  rounds?: number
  concurrency?: number
  /** run dist/pind.cjs on the pinned node instead of the packaged dist/pind */
  bundle?: boolean
  log?: (line: string) => void
  /** where the blocks live: extra flags and environment for every pind command (default: blocks on disk) */
  blockstore?: { args: string[], env: Record<string, string> }
}
export declare function runCrashTest (opts?: CrashTestOptions): Promise<{ rounds: number, acknowledged: number, orphansFreed: number, /** paid writes recorded from their settlement notes */ fulfilled: number }>
