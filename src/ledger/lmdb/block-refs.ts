/**
 * Block references (pinBlocks, blockRefs: ./pins.ts) and the chains of
 * replacements that hold them. A pin's block list is held while the pin is
 * not removed, and a replaced pin's while its chain of replacements still
 * queued ends in a live one: every chain of replacements, removals, expiries
 * and failures releases exactly what it holds (releaseReplaced, holdsRefs).
 */
import type { PinRecord } from '../records.js'
import type { PinStore } from './pin-store.js'
import type { ProvideKeys } from './provide-keys.js'
import { unsettled, type PinTables } from './tables.js'

export class BlockRefs {
  private readonly refWatchers = new Set<(keys: string[]) => void>()
  private readonly releaseWatchers = new Set<(blocks: number, bytes: number) => void>()

  constructor (private readonly t: PinTables, private readonly store: PinStore, private readonly provides: ProvideKeys) {}

  /** PinLedger.watchNewRefs */
  watchNewRefs (fn: (keys: string[]) => void): () => void {
    this.refWatchers.add(fn)
    return () => { this.refWatchers.delete(fn) }
  }

  /** PinLedger.watchReleased */
  watchReleased (fn: (blocks: number, bytes: number) => void): () => void {
    this.releaseWatchers.add(fn)
    return () => { this.releaseWatchers.delete(fn) }
  }

  addRefs (requestid: string, keys: string[]): void {
    if (keys.length === 0) return
    for (const w of this.refWatchers) w(keys)
    this.t.pinBlocks.put(requestid, keys)
    for (const k of keys) {
      const n = (this.t.blockRefs.get(k) ?? 0) + 1
      this.t.blockRefs.put(k, n)
      if (n === 1) this.t.changes.ref(k, true)
    }
    const pin = this.store.getPin(requestid)
    if (pin != null) this.provides.hold(pin.cid, keys)
  }

  /** Drops a pin's block references (idempotent: the pin's block list goes with them). */
  releaseRefs (requestid: string): void {
    const keys = this.t.pinBlocks.get(requestid) ?? []
    let freed = 0
    for (const k of keys) {
      const n = (this.t.blockRefs.get(k) ?? 0) - 1
      if (n > 0) this.t.blockRefs.put(k, n)
      else { this.t.blockRefs.remove(k); freed++; this.t.changes.ref(k, false) }
    }
    this.t.pinBlocks.remove(requestid)
    const pin = this.store.getPin(requestid)
    if (pin != null && keys.length > 0) this.provides.release(pin.cid, keys)
    if (freed > 0 && this.releaseWatchers.size > 0) {
      const bytes = pin?.dagSize != null ? Math.round(pin.dagSize * freed / keys.length) : freed * 1_048_576
      for (const w of this.releaseWatchers) w(freed, bytes)
    }
  }

  /**
   * A replacement settled (pinned, failed) or went (unpinned, expired): what
   * it held for its chain goes. That is the pin it replaced and, while that
   * one was itself a replacement still unsettled when it was replaced, what
   * that one held in turn: A → B (queued) → C holds A's blocks until C
   * settles. A settled pin already let go of its own predecessor, so the walk
   * stops at the first one.
   */
  releaseReplaced (pin: PinRecord): void {
    let id = pin.replaces
    while (id != null) {
      this.releaseRefs(id)
      const up = this.store.getPin(id)
      if (up == null || !unsettled(up)) return
      id = up.replaces
    }
  }

  /**
   * Does this pin's block list still hold anything? A pin that has not been
   * removed holds its own blocks; a replaced one holds them while its
   * successors, down the chain of replacements still unsettled, lead to a pin
   * that is neither settled nor removed.
   */
  holdsRefs (pin: PinRecord): boolean {
    let p: PinRecord | undefined = pin
    while (p?.removed != null) {
      if (p.removed.why !== 'replaced' || p.replacedBy == null) return false
      const next: PinRecord | undefined = this.store.getPin(p.replacedBy)
      if (next == null || !unsettled(next)) return false
      p = next
    }
    return p != null
  }
}
