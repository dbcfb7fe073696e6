/**
 * V8's "last resort" full collection (CollectAllAvailableGarbage: mark-compacts until nothing
 * more dies, the young generation back to its minimum, pooled pages unmapped), reached through
 * the gc function V8 exposes when the process was started with `--expose-gc` (the operator's
 * NODE_OPTIONS; pind never sets it at run time). What it returns: docs/runtime.md.
 */
type ExposedGc = (options?: { type: 'major', execution: 'sync', flavor: 'last-resort' }) => void

/** the collection, or undefined when the process runs without `--expose-gc` */
export function exposedCollection (): (() => void) | undefined {
  const gc = (globalThis as { gc?: ExposedGc }).gc
  if (typeof gc !== 'function') return undefined
  return () => { gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }) }
}
