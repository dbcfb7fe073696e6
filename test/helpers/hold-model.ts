/**
 * A model of what pins hold, written from the API's rules alone (not from
 * the ledger's code), for the property tests of issue 13, finding 1
 * (test/e2e/hostile-replace-chain.test.ts, test/unit/service/hold-property.test.ts).
 */
export type ModelState = 'pinned' | 'pending' | 'failed' | 'removed'

export interface ModelPin<C extends { cid: string } = { cid: string }> {
  id: string
  content: C
  state: ModelState
  /** the pin this one replaced, and the state that pin was in when it was replaced */
  replaces?: { pin: ModelPin<C>, stateThen: ModelState }
}

/**
 * The CIDs that must be served (and kept by gc): the content of every live
 * pinned pin, and, for a live replacement still pending, the content of the
 * last pinned pin up its chain of pending replacements (kept until the
 * replacement settles, so replacing never interrupts serving).
 */
export function heldContent (pins: Array<ModelPin<{ cid: string }>>): Set<string> {
  const out = new Set<string>()
  for (const p of pins) {
    if (p.state === 'pinned') out.add(p.content.cid)
    if (p.state !== 'pending') continue
    let up = p.replaces
    while (up != null) {
      if (up.stateThen === 'pinned') { out.add(up.pin.content.cid); break }
      if (up.stateThen !== 'pending') break
      up = up.pin.replaces
    }
  }
  return out
}
