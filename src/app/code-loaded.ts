/**
 * Tells the binary's entry (scripts/binary-entry.cjs) that serve's start has run (modules loaded,
 * ledger opened, libp2p started, listening): it writes V8's code cache of the bundle now if it has
 * none, before serve changes V8's flags at run time (V8 rejects a cache made under other flags).
 * Outside the binary, nothing.
 */
export function codeLoaded (): void {
  const write = (globalThis as Record<symbol, unknown>)[Symbol.for('pind.codeLoaded')]
  if (typeof write === 'function') write()
}

/** How the binary's entry read the bundle's code, for the 'serving' line; outside the binary, nothing. */
export interface CodeLoad {
  /** 'in place': the bundle's bytes inside the binary, not copied; 'copied': read into memory */
  source: 'in place' | 'copied'
  /** V8's code cache of the previous starts: 'mapped' or 'read' (and used), 'none' (the first start), 'rejected' */
  cache: 'mapped' | 'read' | 'none' | 'rejected'
}

export function codeLoad (): { code: CodeLoad } | Record<string, never> {
  const load = (globalThis as Record<symbol, unknown>)[Symbol.for('pind.codeLoad')]
  return load != null && typeof load === 'object' ? { code: load as CodeLoad } : {}
}
