/**
 * V8's "last resort" full collection (CollectAllAvailableGarbage: mark-compacts until nothing
 * more dies, the young generation back to its minimum, pooled pages unmapped), asked for through
 * the inspector protocol's `HeapProfiler.collectGarbage` from a session inside this process (no
 * port is opened; V8 runs it as a task of its own, without JavaScript on the stack). No V8 flag
 * is needed: `--expose-gc` in NODE_OPTIONS, the way it was reached before, made Node reject the
 * code cache of its own modules at every start of every pind command (docs/runtime.md). What it
 * returns: docs/runtime.md.
 */

/** what a full collection took: resolves once V8 has run it */
export type Collection = () => Promise<void>

/** the collection, or undefined when this Node has no inspector (built without it) */
export function lastResortCollection (): Collection | undefined {
  if (process.features.inspector !== true) return undefined
  const { Session } = process.getBuiltinModule('node:inspector/promises')
  return async () => {
    const session = new Session()
    session.connect()
    try {
      await session.post('HeapProfiler.collectGarbage')
    } finally {
      session.disconnect()
    }
  }
}
