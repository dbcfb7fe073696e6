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
