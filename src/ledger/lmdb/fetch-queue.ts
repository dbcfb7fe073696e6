/**
 * The fetch queue (fetchQueue: ./pins.ts): pins by CID still to fetch, which
 * survive restarts, and the fetcher's two ends of a pin, finished or failed.
 */
import type { CID } from 'multiformats/cid'
import { withdrawn, type PinRecord } from '../records.js'
import type { BlockRefs } from './block-refs.js'
import type { PinStore } from './pin-store.js'
import { cidKey, type PinTables } from './tables.js'

export class FetchQueue {
  private readonly queuedWatchers = new Set<() => void>()

  constructor (private readonly t: PinTables, private readonly store: PinStore, private readonly refs: BlockRefs) {}

  /** PinLedger.watchQueued */
  watchQueued (fn: () => void): () => void {
    this.queuedWatchers.add(fn)
    return () => { this.queuedWatchers.delete(fn) }
  }

  /** tells the watchers that a pin waiting for the fetcher has been committed */
  queued (): void {
    for (const w of this.queuedWatchers) w()
  }

  /** PinLedger.pendingFetches */
  pendingFetches (): string[] {
    const ids: Array<[number, string]> = []
    for (const { key, value } of this.t.fetchQueue.getRange()) ids.push([value, key])
    return ids.sort((a, b) => a[0] - b[0]).map(([, id]) => id)
  }

  /** PinLedger.finishFetch */
  async finishFetch (requestid: string, blocks: Array<string | CID>, dagSize: number, details: string): Promise<PinRecord | undefined> {
    const keys = [...new Set(blocks.map(cidKey))]
    let done: PinRecord | undefined
    await this.t.env.transaction(() => {
      // the first to finish or fail it wins
      if (this.t.fetchQueue.get(requestid) == null) return
      this.t.fetchQueue.remove(requestid)
      const pin = this.store.getPin(requestid)
      if (pin == null || withdrawn(pin)) return
      done = { ...pin, status: 'pinned', dagSize, statusDetails: details }
      delete done.fetch
      this.store.putPin(requestid, done)
      this.refs.addRefs(requestid, keys)
      this.refs.releaseReplaced(pin)
    })
    return done
  }

  /** PinLedger.failFetch */
  async failFetch (requestid: string, details: string): Promise<PinRecord | undefined> {
    let failed: PinRecord | undefined
    await this.t.env.transaction(() => {
      if (this.t.fetchQueue.get(requestid) == null) return
      this.t.fetchQueue.remove(requestid)
      const pin = this.store.getPin(requestid)
      if (pin == null || withdrawn(pin)) return
      failed = { ...pin, status: 'failed', statusDetails: details }
      this.store.putPin(requestid, failed)
      this.refs.releaseReplaced(pin)
    })
    return failed
  }
}
