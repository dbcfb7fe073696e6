/**
 * `pind ledger migrate`: everything one ledger holds written into another
 * (LMDB into PostgreSQL, or back), then read back and compared. Pins with
 * their block lists, payments (archived ones too), upload tickets: as
 * export-ledger writes them and import-ledger reads them, one snapshot of
 * the source. Then what an export leaves out: operator tokens and every
 * revocation, the operator's denials, the signing keys. The provide schedule
 * is rebuilt from the pins by the import (each CID is announced again once).
 *
 * Resumable: a run that stopped part way is run again; what the target
 * holds already is skipped, and the comparison at the end checks it all.
 */
import type { Ledger } from '../../ledger/ledger.js'
import { exportLedger, parseExportOptions } from './ledger-export.js'
import { checkImport, writeImport, type LineSource } from './ledger-import.js'
import { PindError } from '../../kernel/errors.js'

export class LedgerMigrateError extends PindError {
  override name = 'LedgerMigrateError'
}

/** the signing keys of one side: read, and written as they are */
export interface KeySide {
  load(): Promise<Array<{ kid: string }>>
  write(file: { kid: string }): Promise<void>
}

export interface MigrateSides {
  from: Ledger
  to: Ledger
  keysFrom: KeySide
  keysTo: KeySide
  now?: Date
  onProgress?: (step: string, done: number) => void
}

export interface MigrateReport {
  pins: number
  payments: number
  tickets: number
  /** records the target held already (a resumed run) */
  skipped: number
  tokens: number
  revocations: number
  denials: number
  keys: number
}

/** one line per chunk: what import-ledger reads */
const lines = (l: Ledger, now: Date): LineSource => () => (async function * () {
  for await (const chunk of exportLedger(l, parseExportOptions({ withBlocks: true }), now, 1).chunks) yield chunk.replace(/\n$/, '')
})()

export async function migrateLedger (s: MigrateSides): Promise<MigrateReport> {
  const now = s.now ?? new Date()
  const progress = s.onProgress ?? (() => {})
  await onlyFromSource(s)
  const source = lines(s.from, now)
  const checked = await checkImport(source, s.to, { resume: true, onProgress: (_phase, c) => { progress('checking the records', c.lines) } })
  const written = await writeImport(source, s.to, { resume: true, now, onProgress: (_phase, c) => { progress('writing the records', c.pins + c.payments + c.tickets) } })
  const report: MigrateReport = {
    pins: written.pins,
    payments: written.payments,
    tickets: written.tickets,
    skipped: checked.pins + checked.payments + checked.tickets - (written.pins + written.payments + written.tickets),
    tokens: 0,
    revocations: 0,
    denials: 0,
    keys: 0
  }

  for (const t of await s.from.tokens.listIssued()) {
    const { revoked: _revoked, ...record } = t
    if (!(await s.to.tokens.wasIssued(t.jti))) await s.to.tokens.recordIssued(record)
    report.tokens++
  }
  const revoked = await s.from.tokens.revocations()
  for (const r of revoked.tokens) await s.to.tokens.revokeToken(r.jti, new Date(r.at))
  for (const r of revoked.owners) await s.to.tokens.revokeOwner(r.owner, new Date(r.iat * 1000))
  report.revocations = revoked.tokens.length + revoked.owners.length
  progress('tokens and revocations', report.tokens + report.revocations)

  for (const d of await s.from.denials.all()) {
    if ((await s.to.denials.get(d.key)) == null) await s.to.denials.add(d)
    report.denials++
  }
  progress('denials', report.denials)
  for (const k of await s.keysFrom.load()) {
    await s.keysTo.write(k)
    report.keys++
  }
  progress('signing keys', report.keys)

  await verify(s, now)
  progress('verified', 1)
  return report
}

/** a target holding anything the source does not is another ledger, not a run that stopped part way: refused before anything is written */
async function onlyFromSource (s: MigrateSides): Promise<void> {
  const at = await s.to.snapshot()
  try {
    for await (const pin of at.pins()) {
      if (!(await s.from.pins.known(pin.requestid))) throw new LedgerMigrateError(`the target holds pin ${pin.requestid}, which this ledger does not: move into an empty database (nothing was written)`)
    }
    for await (const p of at.payments()) {
      if (!(await s.from.pins.knownPayment(p.id))) throw new LedgerMigrateError(`the target holds payment ${p.id}, which this ledger does not: move into an empty database (nothing was written)`)
    }
    for await (const t of at.tickets()) {
      if ((await s.from.tickets.get(t.id)) == null) throw new LedgerMigrateError(`the target holds upload ticket ${t.id}, which this ledger does not: move into an empty database (nothing was written)`)
    }
  } finally {
    await at.release()
  }
}

/** the target reads back as the source: the same export line for line, the same tokens, revocations, denials and keys */
async function verify (s: MigrateSides, now: Date): Promise<void> {
  const a = lines(s.from, now)()[Symbol.asyncIterator]()
  const b = lines(s.to, now)()[Symbol.asyncIterator]()
  for (let n = 1; ; n++) {
    const [x, y] = await Promise.all([a.next(), b.next()])
    if (x.done === true && y.done === true) break
    // the header names the export's time and source alone
    if (n === 1) continue
    if (x.value !== y.value) {
      await Promise.all([a.return?.(), b.return?.()])
      throw new LedgerMigrateError(`the target does not read back as the source at record ${n - 1}: ${clip(String(x.value ?? 'nothing'))} there, ${clip(String(y.value ?? 'nothing'))} here; nothing was switched (run the migration again: it resumes)`)
    }
  }
  const same = async (what: string, f: (l: Ledger) => Promise<unknown>): Promise<void> => {
    if (JSON.stringify(await f(s.from)) !== JSON.stringify(await f(s.to))) throw new LedgerMigrateError(`the target's ${what} differ from the source's; nothing was switched`)
  }
  await same('operator tokens', async (l) => await l.tokens.listIssued())
  await same('revocations', async (l) => await l.tokens.revocations())
  await same('denials', async (l) => await l.denials.all())
  const kids = async (k: KeySide): Promise<string[]> => (await k.load()).map(f => f.kid).sort()
  if (JSON.stringify(await kids(s.keysFrom)) !== JSON.stringify(await kids(s.keysTo))) throw new LedgerMigrateError('the target\'s signing keys differ from the source\'s; nothing was switched')
}

function clip (line: string): string {
  return line.length > 160 ? `${line.slice(0, 160)}…` : line
}
