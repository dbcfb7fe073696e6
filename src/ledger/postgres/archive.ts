/**
 * The archiver's moves (PinLedger.archiveDue) on PostgreSQL. A removed pin
 * moves to the archive once nothing needs it (it holds no block references,
 * no unsettled replacement walks back through it): its row, and its
 * payment's, are marked archived, and its block list goes. Archived rows stay
 * in their tables: get() and payment() no longer read them, known(),
 * knownPayment() and snapshots (export) still do.
 *
 * A payment's id stays in `payments` for good, so its primary key refuses it
 * for ever: past the payment cutoff the chain refuses the authorization
 * anyway, and before it (archiveDue's `moveBefore`) the LMDB ledger's moved
 * marks are what this keeps without a table of their own.
 */
import type { PinRecord } from '../records.js'
import { getPin, unsettled } from './pin-store.js'
import type { Tx } from './tx.js'

type Write = <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>

/** a removed pin the ledger still needs: it holds block references, or a replacement still unsettled walks through it */
async function stillNeeded (tx: Tx, pin: PinRecord): Promise<boolean> {
  const held = await tx.q<{ n: number }>('SELECT cardinality(cids) AS n FROM pin_blocks WHERE requestid = $1', [pin.requestid])
  if ((held.rows[0]?.n ?? 0) > 0) return true
  if (pin.removed?.why !== 'replaced' || pin.replacedBy == null) return false
  const next = await getPin(tx, pin.replacedBy)
  return next != null && unsettled(next)
}

/**
 * Moves the removals at or before max(cutoff, moveBefore), `batchSize` moves
 * a transaction, each batch from where the last stopped; `between` runs
 * after each batch, `stop` ends the pass early. How many pins moved.
 */
export async function archiveDue (write: Write, cutoff: Date, between: () => Promise<void>, stop: () => boolean, batchSize: number, moveBefore: Date): Promise<number> {
  const end = Math.max(cutoff.getTime(), moveBefore.getTime())
  let after: [number, string] = [-Infinity, '']
  let total = 0
  while (!stop()) {
    const scan = 4 * batchSize
    const { moved, last, full } = await write(async (tx) => {
      // SKIP LOCKED: a pin another write holds is left for the next pass
      const rows = (await tx.q<{ requestid: string, removed_ms: number, record: PinRecord }>(`SELECT requestid, removed_ms, record FROM pins
        WHERE removed AND NOT archived AND removed_ms <= $1 AND (removed_ms, requestid) > ($2, $3)
        ORDER BY removed_ms, requestid LIMIT $4 FOR UPDATE SKIP LOCKED`, [end, after[0], after[1], scan])).rows
      const ids: string[] = []
      let lastRow: [number, string] | undefined
      let more = rows.length === scan
      for (const row of rows) {
        if (ids.length >= batchSize) { more = true; break }
        lastRow = [row.removed_ms, row.requestid]
        if (await stillNeeded(tx, row.record)) continue
        ids.push(row.requestid)
      }
      if (ids.length > 0) {
        await tx.q('UPDATE pins SET archived = true WHERE requestid = ANY($1::text[])', [ids])
        await tx.q('DELETE FROM pin_blocks WHERE requestid = ANY($1::text[])', [ids])
        // the payment that created the pin goes with it (not one that bought a renewal of it)
        await tx.q(`UPDATE payments pay SET archived = true FROM pins p
          WHERE p.requestid = ANY($1::text[]) AND pay.id = (p.record->'payment'->>'id') COLLATE "C" AND pay.requestid = p.requestid`, [ids])
      }
      return { moved: ids.length, last: lastRow, full: more }
    })
    total += moved
    if (!full || last == null) break
    after = last
    await between()
  }
  return total
}
