/**
 * The walks the ledger's upgrades make over a database in batches, one
 * transaction each, with their progress reports, and the halt between
 * batches (PinLedger.haltUpgrade).
 */
import type { Database, Key } from 'lmdb'
import type { LedgerEnv, Upgrade } from './open.js'

/** records per transaction of the upgrades (LedgerEnv.transaction, "transaction sizes": what the largest one dirties, serve keeps until it stops) */
export const COMPACT_BATCH = 1_000
/** an upgrade step reports its progress every this many records it reads */
const PROGRESS_EVERY = 1_000

/** how far the ledger's upgrade has got: the step running and the records it has read so far */
export interface UpgradeProgress { upgrade: Upgrade, records: number }

/** counts a record read by an upgrade step */
export type Tick = () => void
export const noTick: Tick = () => {}

/** an upgrade step's counter of records: reports the step as it begins, then every PROGRESS_EVERY records */
export function upgradeStep (onProgress: (p: UpgradeProgress) => void): (upgrade: Upgrade) => Tick {
  return (upgrade) => {
    let records = 0
    onProgress({ upgrade, records })
    return () => { if (++records % PROGRESS_EVERY === 0) onProgress({ upgrade, records }) }
  }
}

/** thrown between an upgrade's batches once haltUpgrade() was called */
export class UpgradeHalted extends Error {}

export class UpgradeBatches {
  /** set by haltUpgrade: upgradeLater's batches stop */
  private upgradeHalted = false

  constructor (private readonly env: LedgerEnv) {}

  /** Stops the walks after the batch under way (PinLedger.haltUpgrade). */
  halt (): void {
    this.upgradeHalted = true
  }

  checkHalted (): void {
    if (this.upgradeHalted) throw new UpgradeHalted('the upgrade was halted')
  }

  /**
   * Calls `fn` on every entry of `db` (which it may rewrite or remove),
   * `batch` entries per transaction; `tick` counts each. inKeyBatches below
   * walks the keys; each value is read as its turn comes (upgrades only: one
   * lookup more per entry, and no batch of values held at once).
   *
   * `resume`, for a step whose writes are not idempotent (they count): the
   * meta fact that keeps the last key done, written in the transaction of the
   * batch that did it. The walk starts after the key it holds, so a step cut
   * short by a crash goes on after its last committed batch and does no
   * entry twice; the caller removes the fact in the transaction that marks
   * the step done. A batch that throws is rolled back with its fact
   * (LedgerEnv.transaction): the next start does that batch again, whole.
   */
  async inBatches<K extends Key, V> (db: Database<V, K>, batch: number, tick: Tick, fn: (key: K, value: V) => void, resume?: string): Promise<void> {
    await this.inKeyBatches(db, batch, tick, (key) => {
      const value = db.get(key)
      if (value !== undefined) fn(key, value)
    }, resume)
  }

  /**
   * The walk under inBatches, for a step that may remove the entries it is
   * called on: each batch reads its keys first (no cursor walks on past an
   * entry removed under it), then calls `fn` on each, which reads what it
   * needs of the entry.
   * `resume` as for inBatches (the last key done may since have been removed:
   * the walk starts at the first key after it all the same).
   */
  async inKeyBatches<K extends Key> (db: Database<unknown, K>, batch: number, tick: Tick, fn: (key: K) => void, resume?: string): Promise<void> {
    let after = resume != null ? this.env.fact(resume) as K | undefined : undefined
    let more = true
    while (more) {
      this.checkHalted()
      await this.env.transaction(() => {
        const from = after
        const keys: K[] = []
        for (const key of db.getKeys(from === undefined ? { limit: batch + 1 } : { start: from, limit: batch + 2 })) {
          if (from !== undefined && sameKey(key, from)) continue
          keys.push(key)
        }
        more = keys.length > batch
        for (const key of keys.slice(0, batch)) {
          tick()
          fn(key)
          after = key
        }
        if (resume != null && after !== from) void this.env.setFact(resume, after)
      })
    }
  }
}

/**
 * Whether two lmdb keys are the same (strings, numbers, byte keys, arrays of them). Not lmdb's
 * compareKeys: this module is loaded before lmdb's native addon may be (it is unpacked into the
 * data dir first), so it imports only lmdb's types.
 */
export function sameKey (a: Key, b: Key): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b) === 0
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameKey(x as Key, b[i] as Key))
  return a === b
}
