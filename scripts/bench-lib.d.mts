// Hand-written types for the part of bench-lib.mjs the tests import (test/e2e/bench-summary.test.ts).

/** the repository's root directory */
export const ROOT: string
/** the binary the benchmark scripts run: BENCH_BINARY, or dist/pind */
export const BINARY: string
/** the environment of a pind a benchmark starts: process.env + BENCH_SERVE_ENV, BENCH_SERVE_NODE_OPTIONS appended to NODE_OPTIONS, then env */
export function pindEnv (env?: Record<string, string>): Record<string, string | undefined>
export { unitEnvironmentWords, unitRuntimeEnv as productionRuntimeEnv } from './runtime-env.mjs'
