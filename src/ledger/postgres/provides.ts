/**
 * The provide schedule (../provides.ts) in the `provides` table: one row per
 * (kind, kad), kad = sha256(multihash) as bytea so a key range is a region of
 * the Kademlia keyspace; `n` counts the pins holding the CID. Held and
 * released inside the writes that hold and release blocks (./block-refs.ts);
 * identity CIDs are never scheduled (their bytes are the CID).
 */
import { createHash } from 'node:crypto'
import { CID } from 'multiformats/cid'
import type { KeyRange, ProvideKey, ProvideKind, ProvideSchedule } from '../provides.js'
import { json, type Db } from './pin-store.js'
import { watch, type Tx, type Watchers } from './tx.js'

const IDENTITY = 0x00
const CYCLE_START = 'provide:cycleStart'
/** key updates per statement in reschedule */
const RESCHEDULE_BATCH = 1000

export function kadKeyOf (multihash: Uint8Array): Buffer {
  return createHash('sha256').update(multihash).digest()
}

function multihashOf (cid: string | CID): Uint8Array | undefined {
  const c = typeof cid === 'string' ? CID.parse(cid) : cid
  return c.multihash.code === IDENTITY ? undefined : c.multihash.bytes
}

/** the keys of these CIDs, each once, in kad order (rows are locked in one order by every write: no deadlock between two) */
function keysOf (cids: ReadonlyArray<string | CID>): Array<{ kad: Buffer, mh: Buffer }> {
  const byKad = new Map<string, { kad: Buffer, mh: Buffer }>()
  for (const c of cids) {
    const mh = multihashOf(c)
    if (mh == null) continue
    const kad = kadKeyOf(mh)
    byKad.set(kad.toString('hex'), { kad, mh: Buffer.from(mh) })
  }
  return [...byKad.values()].sort((a, b) => Buffer.compare(a.kad, b.kad))
}

/** A pin started holding its blocks (inside its transaction): its root and blocks are held once more. */
export async function holdKeys (tx: Tx, root: string | CID | undefined, blocks: Array<string | CID>): Promise<void> {
  for (const [kind, cids] of [['roots', root == null ? [] : [root]], ['blocks', blocks]] as const) {
    const keys = keysOf(cids)
    if (keys.length === 0) continue
    const r = await tx.q<{ n: number }>(`INSERT INTO provides (kind, kad, mh, n, due, at)
      SELECT $1, k.kad, k.mh, 1, $4, 0 FROM unnest($2::bytea[], $3::bytea[]) AS k(kad, mh)
      ON CONFLICT (kind, kad) DO UPDATE SET n = provides.n + 1 RETURNING n`, [kind, keys.map(k => k.kad), keys.map(k => k.mh), Date.now()])
    if (r.rows.some(row => row.n === 1)) tx.changes.newKeys = true
  }
}

/** A pin stopped holding its blocks (inside its transaction). */
export async function releaseKeys (tx: Tx, root: string | CID, blocks: Array<string | CID>): Promise<void> {
  for (const [kind, cids] of [['roots', [root]], ['blocks', blocks]] as const) {
    const kads = keysOf(cids).map(k => k.kad)
    if (kads.length === 0) continue
    // locked in kad order first, as holdKeys' insert locks them
    await tx.q('SELECT 1 FROM provides WHERE kind = $1 AND kad = ANY($2::bytea[]) ORDER BY kad FOR UPDATE', [kind, kads])
    await tx.q('UPDATE provides SET n = n - 1 WHERE kind = $1 AND kad = ANY($2::bytea[])', [kind, kads])
    await tx.q('DELETE FROM provides WHERE kind = $1 AND kad = ANY($2::bytea[]) AND n <= 0', [kind, kads])
  }
}

interface Row { kad: Buffer, mh: Buffer, due: string, at: string }
const keyOf = (r: Row): ProvideKey => ({ kad: r.kad, mh: new Uint8Array(r.mh), due: Number(r.due), at: Number(r.at) })

export function provideSchedule (db: Db, watchers: Watchers): ProvideSchedule {
  return {
    onNewKeys: (fn) => watch(watchers.newKeys, fn),
    due: async (kind: ProvideKind, until: number, limit: number, after?: { due: number, kad: Buffer }) => {
      const r = after == null
        ? await db.query<Row>('SELECT kad, mh, due, at FROM provides WHERE kind = $1 AND due <= $2 ORDER BY due, kad LIMIT $3', [kind, Math.floor(until), limit])
        : await db.query<Row>('SELECT kad, mh, due, at FROM provides WHERE kind = $1 AND due <= $2 AND (due, kad) > ($4, $5) ORDER BY due, kad LIMIT $3', [kind, Math.floor(until), limit, Math.floor(after.due), after.kad])
      return r.rows.map(keyOf)
    },
    inRange: async (kind: ProvideKind, range: KeyRange) => {
      const r = range.end == null
        ? await db.query<Row>('SELECT kad, mh, due, at FROM provides WHERE kind = $1 AND kad >= $2 ORDER BY kad', [kind, range.start])
        : await db.query<Row>('SELECT kad, mh, due, at FROM provides WHERE kind = $1 AND kad >= $2 AND kad < $3 ORDER BY kad', [kind, range.start, range.end])
      return r.rows.map(keyOf)
    },
    reschedule: async (kind, updates) => {
      // each key's update stands alone: a key released meanwhile is simply not there to update
      for (let i = 0; i < updates.length; i += RESCHEDULE_BATCH) {
        const chunk = updates.slice(i, i + RESCHEDULE_BATCH)
        await db.query(`UPDATE provides p SET due = u.due, at = coalesce(u.at, p.at), by = coalesce(u.by, p.by), claimed_until = NULL
          FROM unnest($2::bytea[], $3::bigint[], $4::bigint[], $5::text[]) AS u(kad, due, at, by) WHERE p.kind = $1 AND p.kad = u.kad`,
        [kind, chunk.map(u => u.kad), chunk.map(u => Math.max(0, Math.floor(u.due))), chunk.map(u => u.at == null ? null : Math.floor(u.at)), chunk.map(u => u.by ?? null)])
      }
    },
    claim: async (kind, keys, until) => {
      const taken: Buffer[] = []
      for (let i = 0; i < keys.length; i += RESCHEDULE_BATCH) {
        const chunk = keys.slice(i, i + RESCHEDULE_BATCH)
        // held by no one (or by one past its until), and still due when it was read (not announced meanwhile):
        // of two front ends taking one key, the row lock makes the second find it held
        const r = await db.query<{ kad: Buffer }>(`UPDATE provides p SET claimed_until = $2
          FROM unnest($3::bytea[], $4::bigint[]) AS k(kad, due)
          WHERE p.kind = $1 AND p.kad = k.kad AND p.due = k.due AND (p.claimed_until IS NULL OR p.claimed_until <= $5)
          RETURNING p.kad`, [kind, Math.floor(until), chunk.map(k => k.kad), chunk.map(k => Math.floor(k.due)), Date.now()])
        for (const row of r.rows) taken.push(row.kad)
      }
      return taken
    },
    reannounce: async (by) => {
      const r = await db.query('UPDATE provides SET due = $2, by = NULL WHERE by = $1', [by, Date.now()])
      return r.rowCount ?? 0
    },
    count: async (kind) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM provides WHERE kind = $1', [kind])).rows[0]?.n ?? 0),
    countDue: async (kind, until) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM provides WHERE kind = $1 AND due <= $2', [kind, Math.floor(until)])).rows[0]?.n ?? 0),
    firstDue: async (kind) => {
      const r = await db.query<{ due: string }>('SELECT due FROM provides WHERE kind = $1 ORDER BY due LIMIT 1', [kind])
      return r.rows[0] == null ? undefined : Number(r.rows[0].due)
    },
    cycleStart: async (now) => {
      // the first caller's time stays, also when two front ends ask at once
      await db.query('INSERT INTO facts (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [CYCLE_START, json(now)])
      const r = await db.query<{ value: number }>('SELECT value FROM facts WHERE key = $1', [CYCLE_START])
      return r.rows[0]?.value ?? now
    }
  }
}
