/**
 * The provide schedule: which CIDs this node announces on the DHT, and when
 * each is due again. It lives in the ledger, is written in the same
 * transactions that make pins hold or release blocks (PinLedger), and so
 * survives restarts and stops the moment a pin stops holding a CID.
 *
 *   provide-roots   kadKey → ProvideRecord   root CIDs of pins holding blocks
 *   provide-blocks  kadKey → ProvideRecord   every block those pins hold
 *   provide-roots-due / provide-blocks-due   [due ms (8 bytes) | kadKey] → 1
 *
 * kadKey = sha256(multihash): the CID's place in the Kademlia keyspace, so a
 * range of keys is a keyspace region and the reprovider batches by region.
 * `n` counts the pins holding the CID (one CID, many pins). Both sets are
 * kept whatever --provide-strategy says, so switching strategy needs no
 * rebuild. Identity CIDs are never announced (their bytes are the CID).
 */
import { createHash } from 'node:crypto'
import type { Database } from 'lmdb'
import { CID } from 'multiformats/cid'
import type { LedgerEnv } from './open.js'
import type { KeyRange, ProvideKey, ProvideKind, ProvideRecord } from '../provides.js'
export type { KeyRange, ProvideKey, ProvideKind, ProvideRecord } from '../provides.js'

const IDENTITY = 0x00
const CYCLE_START = 'provide:cycleStart'
/** key updates per transaction in reschedule (three writes each, in random-keyed databases) */
const RESCHEDULE_BATCH = 200

export function kadKeyOf (multihash: Uint8Array): Buffer {
  return createHash('sha256').update(multihash).digest()
}

function dueKey (due: number, kad: Buffer): Buffer {
  const b = Buffer.allocUnsafe(8 + kad.length)
  b.writeBigUInt64BE(BigInt(Math.max(0, Math.floor(due))), 0)
  kad.copy(b, 8)
  return b
}

function multihashOf (cid: string | CID): Uint8Array | undefined {
  const c = typeof cid === 'string' ? CID.parse(cid) : cid
  return c.multihash.code === IDENTITY ? undefined : c.multihash.bytes
}

interface KindDbs {
  keys: Database<ProvideRecord, Buffer>
  due: Database<number, Buffer>
}

export class ProvideKeys {
  private readonly dbs: Record<ProvideKind, KindDbs>
  /** keys held to be announced (claim), by kad (hex): until when */
  private readonly held: Record<ProvideKind, Map<string, number>> = { roots: new Map(), blocks: new Map() }
  private readonly listeners = new Set<() => void>()

  constructor (private readonly env: LedgerEnv) {
    const open = (name: string): KindDbs => ({
      keys: env.db<ProvideRecord>(`provide-${name}`, { keyEncoding: 'binary' }) as Database<ProvideRecord, Buffer>,
      due: env.db<number>(`provide-${name}-due`, { keyEncoding: 'binary' }) as Database<number, Buffer>
    })
    this.dbs = { roots: open('roots'), blocks: open('blocks') }
  }

  /** Called (inside the writing transaction) when a CID became due at once; the reprovider wakes. */
  onNewKeys (fn: () => void): () => void {
    this.listeners.add(fn)
    return () => { this.listeners.delete(fn) }
  }

  /** A pin started holding its blocks (inside the caller's transaction). */
  hold (root: string | CID, blocks: Array<string | CID>): void {
    let fresh = this.add('roots', root)
    for (const b of blocks) fresh = this.add('blocks', b) || fresh
    if (fresh) for (const fn of this.listeners) fn()
  }

  /** A pin stopped holding its blocks (inside the caller's transaction). */
  release (root: string | CID, blocks: Array<string | CID>): void {
    this.drop('roots', root)
    for (const b of blocks) this.drop('blocks', b)
  }

  private add (kind: ProvideKind, cid: string | CID): boolean {
    const mh = multihashOf(cid)
    if (mh == null) return false
    const kad = kadKeyOf(mh)
    const d = this.dbs[kind]
    const rec = d.keys.get(kad)
    if (rec != null) {
      d.keys.put(kad, { ...rec, n: rec.n + 1 })
      return false
    }
    const now = Date.now()
    d.keys.put(kad, { mh, n: 1, due: now, at: 0 })
    d.due.put(dueKey(now, kad), 1)
    return true
  }

  private drop (kind: ProvideKind, cid: string | CID): void {
    const mh = multihashOf(cid)
    if (mh == null) return
    const kad = kadKeyOf(mh)
    const d = this.dbs[kind]
    const rec = d.keys.get(kad)
    if (rec == null) return
    if (rec.n > 1) {
      d.keys.put(kad, { ...rec, n: rec.n - 1 })
      return
    }
    d.keys.remove(kad)
    d.due.remove(dueKey(rec.due, kad))
  }

  /** Keys due at or before `until`, most overdue first (from `after`, a position this returned). */
  * due (kind: ProvideKind, until: number, after?: { due: number, kad: Buffer }): Generator<ProvideKey> {
    const d = this.dbs[kind]
    const start = after != null ? dueKey(after.due, after.kad) : undefined
    for (const { key } of d.due.getRange({ ...(start != null ? { start } : {}), end: dueKey(until + 1, Buffer.alloc(0)) })) {
      if (start != null && key.equals(start)) continue
      const kad = key.subarray(8)
      const rec = d.keys.get(kad)
      if (rec == null) continue
      yield { kad: Buffer.from(kad), mh: rec.mh, due: rec.due, at: rec.at }
    }
  }

  /** Keys in a keyspace range (a region), in keyspace order. */
  * inRange (kind: ProvideKind, range: KeyRange): Generator<ProvideKey> {
    for (const { key, value } of this.dbs[kind].keys.getRange({ start: range.start, ...(range.end != null ? { end: range.end } : {}) })) {
      yield { kad: key, mh: value.mh, due: value.due, at: value.at }
    }
  }

  /** The next due time after a (re)announcement, or a retry time after a failure, for each key. */
  async reschedule (kind: ProvideKind, updates: Array<{ kad: Buffer, due: number, at?: number }>): Promise<void> {
    const d = this.dbs[kind]
    for (const u of updates) this.held[kind].delete(u.kad.toString('hex'))
    // a region's announcement may carry 20,000 keys: a transaction per RESCHEDULE_BATCH (LedgerEnv.transaction, "transaction sizes"); each key's update stands alone
    for (let i = 0; i < updates.length; i += RESCHEDULE_BATCH) {
      const chunk = updates.slice(i, i + RESCHEDULE_BATCH)
      await this.env.transaction(() => {
        for (const u of chunk) {
          const rec = d.keys.get(u.kad)
          // released meanwhile: nothing to reschedule
          if (rec == null) continue
          d.due.remove(dueKey(rec.due, u.kad))
          d.keys.put(u.kad, { ...rec, due: u.due, at: u.at ?? rec.at })
          d.due.put(dueKey(u.due, u.kad), 1)
        }
      })
    }
  }

  /**
   * ProvideSchedule.claim: each key still due as read and held by no one is
   * held until `until` or its reschedule. Holds live in memory: one serve
   * owns this schedule, and they mean nothing after its restart.
   */
  claim (kind: ProvideKind, keys: ReadonlyArray<{ kad: Buffer, due: number }>, until: number): Buffer[] {
    const d = this.dbs[kind]
    const held = this.held[kind]
    const now = Date.now()
    const taken: Buffer[] = []
    for (const k of keys) {
      const key = k.kad.toString('hex')
      if (d.keys.get(k.kad)?.due !== k.due || (held.get(key) ?? 0) > now) continue
      held.set(key, until)
      taken.push(k.kad)
    }
    return taken
  }

  count (kind: ProvideKind): number {
    return this.dbs[kind].keys.getCount()
  }

  /** How many keys are due at or before `until`. */
  countDue (kind: ProvideKind, until: number): number {
    return this.dbs[kind].due.getCount({ end: dueKey(until + 1, Buffer.alloc(0)) })
  }

  /** The most overdue key's due time, if any. */
  firstDue (kind: ProvideKind): number | undefined {
    for (const { key } of this.dbs[kind].due.getRange({ limit: 1 })) return Number(key.readBigUInt64BE(0))
    return undefined
  }

  /** When this node's reprovide cycles began (fixed at first use): a region's slot in a cycle follows from it. */
  async cycleStart (now: number): Promise<number> {
    const v = this.env.fact(CYCLE_START)
    if (typeof v === 'number') return v
    await this.env.setFact(CYCLE_START, now)
    return now
  }
}
