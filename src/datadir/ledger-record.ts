/**
 * Where a data dir's ledger is, recorded in <data-dir>/ledger.json when it is
 * not the data dir's own ledger.mdb: the PostgreSQL database's URL, never its
 * password. Absent: LMDB. Admin commands on a stopped data dir open the
 * database the last serve used; --ledger lmdb on a data dir that records
 * PostgreSQL is refused rather than answering from an empty ledger.
 *
 * Written atomically (./atomic-json.ts).
 */
import { readJsonRecord, writeJsonAtomically } from './atomic-json.js'

export interface LedgerRecord {
  backend: 'postgres'
  /** postgres://user@host:port/database, without a password */
  url: string
  /** when it was recorded (UTC) */
  since: string
}

export class LedgerRecordError extends Error {
  override name = 'LedgerRecordError'
}

export function readLedgerRecord (path: string): LedgerRecord | undefined {
  const rec = readJsonRecord(path, (m) => new LedgerRecordError(m)) as Partial<LedgerRecord> | undefined
  if (rec == null) return undefined
  if (rec.backend !== 'postgres' || typeof rec.url !== 'string') throw new LedgerRecordError(`${path} does not describe a ledger ({"backend":"postgres","url":"postgres://…"})`)
  return rec as LedgerRecord
}

export function writeLedgerRecord (path: string, rec: LedgerRecord): void {
  writeJsonAtomically(path, rec)
}
