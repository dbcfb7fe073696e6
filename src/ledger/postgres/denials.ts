/**
 * The operator's denials (../denials.ts): `denials` holds the rules in force,
 * `denials_log` every add and rm in order (its sequence). Each write changes
 * the rule and appends to the log in one transaction.
 */
import type { DenialEvent, DenialLedger, DenialRecord } from '../denials.js'
import { json, type Db } from './pin-store.js'
import { watch, type Tx, type Watchers } from './tx.js'

type Write = <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>

export function denialLedger (db: Db, write: Write, watchers: Watchers): DenialLedger {
  const append = async (tx: Tx, e: DenialEvent): Promise<void> => {
    await tx.q('INSERT INTO denials_log (event) VALUES ($1)', [json(e)])
    tx.changes.denials = true
  }
  return {
    add: async (rec) => await write(async (tx) => {
      const before = (await tx.q<{ record: DenialRecord }>('SELECT record FROM denials WHERE key = $1 FOR UPDATE', [rec.key])).rows[0]?.record
      await tx.q('INSERT INTO denials (key, record) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET record = excluded.record', [rec.key, json(rec)])
      await append(tx, { op: 'add', key: rec.key, rule: rec.rule, reason: rec.reason, by: rec.by, at: rec.at })
      return before
    }),
    remove: async (key, event) => await write(async (tx) => {
      const before = (await tx.q<{ record: DenialRecord }>('DELETE FROM denials WHERE key = $1 RETURNING record', [key])).rows[0]?.record
      if (before == null) return undefined
      await append(tx, { op: 'rm', key, rule: before.rule, by: event.by, at: event.at, ...(event.reason != null ? { reason: event.reason } : {}) })
      return before
    }),
    get: async (key) => (await db.query<{ record: DenialRecord }>('SELECT record FROM denials WHERE key = $1', [key])).rows[0]?.record,
    all: async () => (await db.query<{ record: DenialRecord }>('SELECT record FROM denials ORDER BY key')).rows.map(r => r.record),
    history: async () => (await db.query<{ event: DenialEvent }>('SELECT event FROM denials_log ORDER BY seq')).rows.map(r => r.event),
    // a change missed from another process may have been a denial
    watch: (fn) => { const a = watch(watchers.denials, fn); const b = watch(watchers.lost, fn); return () => { a(); b() } }
  }
}
