// Hand-written types for ledger-stats.mjs.
export interface DbStats { pages: number, leaf: number, branch: number, overflow: number, entries: number, bytes: number, fill?: number }
export interface LedgerStats { pageSize: number, fileBytes: number, usedPages: number, freePages: number, dbs: Record<string, DbStats> }
export function ledgerStats (dataDir: string, opts?: { fill?: boolean }): LedgerStats
export function formatLedgerStats (st: LedgerStats, per: number, perName?: string): string[]
