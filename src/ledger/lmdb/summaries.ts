/**
 * The owner index's summaries (pins-by-owner, ./pins.ts): what it keeps of a
 * pin, and the listings that read it without reading records.
 */
import type { ListedSummary, LiveSummary, OwnerPinState } from '../records.js'
export { summaryOf, type ListedSummary, type LiveSummary, type OwnerPinState, type PinSummary, type RemovedSummary } from '../records.js'
import { readSummary } from './stored.js'
import { cidKey, type PinTables } from './tables.js'

/** a pin's status and pinned_until, as its owner's counts know it */
export type OwnerState = Pick<LiveSummary, 'status' | 'until'>

/** PinLedger.allSummaries */
export function * allSummaries (t: PinTables, beforeUs: number, afterUs: number, withCid: boolean): Generator<{ owner: string, createdUs: number, summary: ListedSummary }> {
  for (const { key, value } of t.byOwner.getRange()) {
    if (key[1] >= beforeUs || key[1] <= afterUs) continue
    const summary = readSummary(key[2], value, withCid)
    if (!summary.removed) yield { owner: key[0], createdUs: key[1], summary }
  }
}

/** PinLedger.summariesByOwner */
export function * summariesByOwner (t: PinTables, owner: string, beforeUs: number, afterUs: number, withCid: boolean): Generator<ListedSummary> {
  for (const { key, value } of t.byOwner.getRange({ start: [owner, beforeUs], end: [owner, afterUs], reverse: true })) {
    if (key[1] >= beforeUs || key[1] <= afterUs) continue
    const summary = readSummary(key[2], value, withCid)
    if (!summary.removed) yield summary
  }
}

/** PinLedger.statesByOwner */
export function * statesByOwner (t: PinTables, owner: string, beforeUs: number, afterUs: number): Generator<OwnerPinState> {
  for (const { key, value: state } of t.byOwnerStates.getRange({ start: [owner, beforeUs], end: [owner, afterUs], reverse: true })) {
    if (key[1] >= beforeUs || key[1] <= afterUs) continue
    if (state === 'removed') continue
    if (state !== 'undecoded') {
      yield { id: key[2], status: state.status, until: state.until }
      continue
    }
    // bytes in another shape (an older layout): decoded as summariesByOwner does
    const stored = t.byOwner.get(key)
    const summary = stored !== undefined ? readSummary(key[2], stored) : undefined
    if (summary != null && !summary.removed) yield { id: summary.id, status: summary.status, until: summary.until }
  }
}
