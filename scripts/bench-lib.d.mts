// Hand-written types for the part of bench-lib.mjs the tests import (test/e2e/bench-summary.test.ts).

/** the repository's root directory */
export const ROOT: string
/** the binary the benchmark scripts run: BENCH_BINARY, or dist/pind */
export const BINARY: string
/** the assignments of a systemd `Environment=` value, quotes and escapes resolved */
export function unitEnvironmentWords (value: string): string[]
/** the unit's GLIBC_TUNABLES, NODE_OPTIONS, MALLOC_* and PIND_RUNTIME_* environment (default scripts/pind.service) */
export function productionRuntimeEnv (unitPath?: string): Record<string, string>
/** the environment of a pind a benchmark starts: process.env + BENCH_SERVE_ENV, BENCH_SERVE_NODE_OPTIONS appended to NODE_OPTIONS, then env */
export function pindEnv (env?: Record<string, string>): Record<string, string | undefined>
