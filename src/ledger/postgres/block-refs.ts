/**
 * Block references (pin_blocks, block_refs: ./schema.ts) and the chains of
 * replacements that hold them, as the LMDB ledger keeps them
 * (../lmdb/block-refs.ts): a pin's block list is held while the pin is not
 * removed, and a replaced pin's while its chain of replacements still queued
 * ends in a live one.
 *
 * block_refs counts are changed row by row with the rows locked, keys sorted
 * first, so two writes of the same blocks take turns (and in one order: no
 * deadlock), and each knows whether it made a block referenced or released it.
 */
import type { PinRecord } from '../records.js'
import { getPin, query, unsettled, type Db } from './pin-store.js'
import { holdKeys, releaseKeys } from './provides.js'
import type { Tx } from './tx.js'

/** A pin starts holding `keys` (block CIDs v1, each once): counted, noted, scheduled; gc's watchers hear of them before the commit. */
export async function addRefs (tx: Tx, pin: PinRecord, keys: string[]): Promise<void> {
  if (keys.length === 0) return
  for (const w of tx.watchers.newRefs) w(keys)
  const held = await tx.q<{ cids: string[] }>('SELECT cids FROM pin_blocks WHERE requestid = $1 FOR UPDATE', [pin.requestid])
  const had = new Set(held.rows[0]?.cids ?? [])
  // a block the pin holds already is not counted twice; the list keeps the order it was given in (blocksOf, export)
  const added = keys.filter(k => !had.has(k))
  if (added.length === 0) return
  await tx.q(`INSERT INTO pin_blocks (requestid, cids) VALUES ($1, $2)
    ON CONFLICT (requestid) DO UPDATE SET cids = excluded.cids`, [pin.requestid, [...had, ...added]])
  // counted in key order: two writes of the same blocks lock them in one order (no deadlock)
  const fresh = [...added].sort()
  const r = await tx.q<{ cid: string, n: number }>(`INSERT INTO block_refs (cid, n) SELECT k, 1 FROM unnest($1::text[]) AS k
    ON CONFLICT (cid) DO UPDATE SET n = block_refs.n + 1 RETURNING cid, n`, [fresh])
  for (const row of r.rows) if (row.n === 1) tx.changes.refs.set(row.cid, true)
  // the root is held once per pin holding blocks
  await holdKeys(tx, had.size === 0 ? pin.cid : undefined, fresh)
}

/** Drops a pin's block references (idempotent: its block list goes with them). */
export async function releaseRefs (tx: Tx, requestid: string): Promise<void> {
  const r = await tx.q<{ cids: string[] }>('DELETE FROM pin_blocks WHERE requestid = $1 RETURNING cids', [requestid])
  const keys = [...(r.rows[0]?.cids ?? [])].sort()
  if (keys.length === 0) return
  // locked in key order first, as addRefs' insert locks them: whatever order the plan below visits them in
  await tx.q('SELECT 1 FROM block_refs WHERE cid = ANY($1::text[]) ORDER BY cid FOR UPDATE', [keys])
  // the last references go first, then the others count one less
  const freed = await tx.q<{ cid: string }>('DELETE FROM block_refs WHERE cid = ANY($1::text[]) AND n <= 1 RETURNING cid', [keys])
  await tx.q('UPDATE block_refs SET n = n - 1 WHERE cid = ANY($1::text[])', [keys])
  for (const row of freed.rows) tx.changes.refs.set(row.cid, false)
  const pin = await getPin(tx, requestid)
  if (pin != null) await releaseKeys(tx, pin.cid, keys)
  const n = freed.rows.length
  if (n > 0) tx.changes.released.push([n, pin?.dagSize != null ? Math.round(pin.dagSize * n / keys.length) : n * 1_048_576])
}

/**
 * A replacement settled (pinned, failed) or went (unpinned, expired): what
 * it held for its chain goes: the pin it replaced and, while that one was
 * itself a replacement still unsettled, what that one held in turn.
 */
export async function releaseReplaced (tx: Tx, pin: PinRecord): Promise<void> {
  let id = pin.replaces
  while (id != null) {
    await releaseRefs(tx, id)
    const up = await getPin(tx, id)
    if (up == null || !unsettled(up)) return
    id = up.replaces
  }
}

/** Does this pin's block list still hold anything (its chain of unsettled replacements leads to a pin neither settled nor removed)? */
export async function holdsRefs (db: Db | Tx, pin: PinRecord): Promise<boolean> {
  let p: PinRecord | undefined = pin
  while (p?.removed != null) {
    if (p.removed.why !== 'replaced' || p.replacedBy == null) return false
    const next: PinRecord | undefined = await getPin(db, p.replacedBy)
    if (next == null || !unsettled(next)) return false
    p = next
  }
  return p != null
}

/** the block CIDs a pin holds */
export async function blocksOf (db: Db, requestid: string): Promise<string[]> {
  const r = await query<{ cids: string[] }>(db, 'SELECT cids FROM pin_blocks WHERE requestid = $1', [requestid])
  return r.rows[0]?.cids ?? []
}
