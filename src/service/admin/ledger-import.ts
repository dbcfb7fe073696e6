/**
 * `pind import-ledger`: reads a JSON Lines export (src/service/admin/ledger-export.ts)
 * back into a ledger, transport-free. Two passes over the file, each with
 * flat memory:
 *
 *   1. check: the header (schema and version), every line's fields, the order
 *      of ids (ascending per record type, as export writes them — so a
 *      duplicate is caught by comparing with the previous id instead of
 *      remembering every id), ids the target ledger already holds (--merge),
 *      and the end line with its counts (a truncated file is refused).
 *      Nothing is written in this pass.
 *   2. write: the same lines again, in transactions of 1,000 records. (10,000
 *      per transaction imported 1M pins + 1M payments ~15% faster but held
 *      ~300 MiB more: LMDB keeps a transaction's dirty pages in memory.)
 *
 * So a file that is refused leaves the ledger untouched. A pin exported
 * `pinned` without its block list (export without --with-blocks) and still
 * live comes back `queued`: serve's fetcher walks its DAG again, reading the
 * local blockstore first, and references the blocks when it is complete.
 * Upload tickets (version 2) come back as they were: an unused one can be
 * used once on the new ledger, a used one stays used, and the payment that
 * bought it (a payment line) stays recorded, so the same payment sent again
 * answers with the same ticket. Version 1 files hold no tickets.
 */
import { PindError } from '../../kernel/errors.js'
import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import { CID } from 'multiformats/cid'
import { parseMicros } from '../../ledger/clock.js'
import type { Ledger } from '../../ledger/ledger.js'
import type { UploadTicket } from '../../ledger/tickets.js'
import type { FetchState, PaymentInfo, PaymentRecord, PinRecord, PinState } from '../../ledger/records.js'
import { EXPORT_SCHEMA, EXPORT_VERSION } from './ledger-export.js'

/** the export versions this pind imports: 1 (pins and payments), 2 (and upload tickets) */
const READABLE_VERSIONS: readonly unknown[] = [1, EXPORT_VERSION]

/** Where an import writes: the ledger's pins and payments, and its upload tickets. */
export type ImportTarget = Pick<Ledger, 'pins' | 'tickets' | 'transaction' | 'snapshot'>

/** Yields the lines of the input; called once per pass. */
export type LineSource = () => AsyncIterable<string>

export class ImportError extends PindError {
  override name = 'ImportError'
}

export interface ImportOptions {
  /** add to a ledger that already holds pins (ids it already has are refused) */
  merge?: boolean
  /**
   * finish an import that stopped part way (a migration): records the ledger
   * holds already are skipped, not refused; the caller verifies them
   */
  resume?: boolean
  now?: Date
  /** records per transaction */
  batchSize?: number
  /** how long a re-queued pin (pinned, exported without blocks) keeps retrying its fetch */
  refetchWindowMs?: number
  onProgress?: (phase: 'checking' | 'writing', done: ImportCounts) => void
}

export interface ImportCounts {
  lines: number
  pins: number
  payments: number
  tickets: number
}

export interface ImportCheck extends ImportCounts {
  header: Record<string, unknown>
}

export interface ImportResult extends ImportCounts {
  /** pinned pins without a block list that were put back in the fetch queue */
  requeued: number
  /** pins whose block references were restored from the file */
  withBlocks: number
}

/** Up to this many bad lines are listed before the check gives up. */
const MAX_ERRORS = 10
const DEFAULT_BATCH = 1000
/** a batch also ends after this many block CIDs (pins of large DAGs) */
const MAX_BATCH_BLOCKS = 200_000
const DEFAULT_REFETCH_WINDOW_MS = 24 * 3600_000
const PROGRESS_EVERY = 10_000

/** Lines of a file, streamed. */
export function fileLines (path: string): LineSource {
  return () => createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity })
}

/** True when the ledger holds no pin, no payment and no upload ticket. */
export async function ledgerIsEmpty (target: Pick<Ledger, 'snapshot'>): Promise<boolean> {
  const at = await target.snapshot()
  try {
    for await (const _ of at.pins()) return false
    for await (const _ of at.payments()) return false
    for await (const _ of at.tickets()) return false
    return true
  } finally {
    await at.release()
  }
}

/**
 * Pass 1: reads everything, writes nothing. `target` (when the ledger exists)
 * is checked for being empty, or with `merge` for ids it already holds.
 */
export async function checkImport (source: LineSource, target: ImportTarget | undefined, opts: ImportOptions = {}): Promise<ImportCheck> {
  // --merge looks every id up in the archive too: held open for the whole pass, not opened per line
  // (each opening maps the file again and leaves ~130 bytes of lmdb-js's native memory; src/ledger/lmdb/archive.ts)
  const release = opts.merge === true ? target?.pins.holdArchive() : undefined
  try {
    return await checkLines(source, target, opts)
  } finally {
    release?.()
  }
}

async function checkLines (source: LineSource, target: ImportTarget | undefined, opts: ImportOptions): Promise<ImportCheck> {
  if (target != null && opts.merge !== true && opts.resume !== true && !(await ledgerIsEmpty(target))) {
    throw new ImportError('the ledger already holds pins, payments or upload tickets; import-ledger fills an empty ledger (use --merge to add to this one: requestids, payments and tickets it already holds are refused)')
  }
  const errors: string[] = []
  const counts: ImportCounts = { lines: 0, pins: 0, payments: 0, tickets: 0 }
  let header: Record<string, unknown> | undefined
  let end: { line: number, pins: unknown, payments: unknown, tickets: unknown } | undefined
  const bad = (line: number, message: string): void => {
    errors.push(`line ${line}: ${message}`)
    if (errors.length >= MAX_ERRORS) throw new ImportError(summary(errors, true))
  }
  // export writes each record type in ascending key order, and import relies on it
  const pinOrder = ascending('pin', 'requestid')
  const paymentOrder = ascending('payment', 'id')
  const ticketOrder = ascending('ticket', 'ticket_id')
  for await (const text of source()) {
    const n = ++counts.lines
    if (n % PROGRESS_EVERY === 0) opts.onProgress?.('checking', { ...counts })
    if (text.trim() === '') continue
    const obj = parseLine(text, n)
    if (header == null) {
      header = checkHeader(obj, n)
      continue
    }
    if (end != null) { bad(n, `a ${String(obj.type)} line after the end line (line ${end.line})`); continue }
    try {
      switch (obj.type) {
        case 'pin': {
          const { pin } = pinFromLine(obj)
          const disorder = pinOrder(pin.requestid)
          if (disorder != null) bad(n, disorder)
          if (opts.merge === true && target != null && await target.pins.known(pin.requestid)) bad(n, `pin ${pin.requestid} is already in the ledger`)
          counts.pins++
          break
        }
        case 'payment': {
          const p = paymentFromLine(obj)
          const disorder = paymentOrder(p.id)
          if (disorder != null) bad(n, disorder)
          if (opts.merge === true && target != null && await target.pins.knownPayment(p.id)) bad(n, `payment ${p.id} is already in the ledger`)
          counts.payments++
          break
        }
        case 'ticket': {
          if (header.version === 1) { bad(n, 'a ticket line in a version 1 export (tickets came with version 2)'); break }
          const t = ticketFromLine(obj)
          const disorder = ticketOrder(t.id)
          if (disorder != null) bad(n, disorder)
          if (opts.merge === true && target != null && (await target.tickets.get(t.id)) != null) bad(n, `upload ticket ${t.id} is already in the ledger`)
          counts.tickets++
          break
        }
        case 'end':
          // (version 1 end lines count no tickets: there are none)
          end = { line: n, pins: obj.pins, payments: obj.payments, tickets: header.version === 1 ? 0 : obj.tickets }
          break
        case 'header':
          bad(n, 'a second header line (were two exports concatenated?)')
          break
        default:
          bad(n, `unknown record type ${JSON.stringify(obj.type)}`)
      }
    } catch (err) {
      if (!(err instanceof LineError)) throw err
      bad(n, err.message)
    }
  }
  if (header == null) throw new ImportError('the input is empty: expected a pind ledger export (JSON Lines starting with a header line)')
  if (end == null) {
    errors.push(`the input ends after line ${counts.lines} without the end line: it is truncated (an export cut short)`)
  } else if (end.pins !== counts.pins || end.payments !== counts.payments || end.tickets !== counts.tickets) {
    errors.push(`line ${end.line}: the end line counts ${String(end.pins)} pins, ${String(end.payments)} payments and ${String(end.tickets)} tickets, but the file holds ${counts.pins}, ${counts.payments} and ${counts.tickets}`)
  }
  if (errors.length > 0) throw new ImportError(summary(errors, false))
  opts.onProgress?.('checking', { ...counts })
  return { ...counts, header }
}

function summary (errors: string[], stopped: boolean): string {
  return `the input was refused and nothing was imported:\n  ${errors.join('\n  ')}${stopped ? `\n  (stopped after ${MAX_ERRORS} errors)` : ''}`
}

/** Pass 2: writes the (checked) input in batches. */
export async function writeImport (source: LineSource, target: ImportTarget, opts: ImportOptions = {}): Promise<ImportResult> {
  const now = opts.now ?? new Date()
  const batchSize = opts.batchSize ?? DEFAULT_BATCH
  const giveUpAt = new Date(now.getTime() + (opts.refetchWindowMs ?? DEFAULT_REFETCH_WINDOW_MS)).toISOString()
  const result: ImportResult = { lines: 0, pins: 0, payments: 0, tickets: 0, requeued: 0, withBlocks: 0 }
  let pins: Array<{ pin: PinRecord, blocks?: string[] }> = []
  let payments: PaymentRecord[] = []
  let tickets: UploadTicket[] = []
  let blocks = 0
  // one batch commits while the next is parsed: at most two batches in memory, written in order
  let committing: Promise<void> | undefined
  const flush = async (): Promise<void> => {
    await committing
    if (pins.length === 0 && payments.length === 0 && tickets.length === 0) return
    const batch = { pins, payments, tickets }
    pins = []
    payments = []
    tickets = []
    blocks = 0
    committing = target.transaction(async tx => {
      await tx.importPins(batch.pins, batch.payments)
      await tx.importTickets(batch.tickets)
    }).then(() => {
      result.pins += batch.pins.length
      result.payments += batch.payments.length
      result.tickets += batch.tickets.length
      opts.onProgress?.('writing', { lines: result.lines, pins: result.pins, payments: result.payments, tickets: result.tickets })
    })
    committing.catch(() => {}) // handled: the failure is thrown where it is awaited (next flush, or the end)
  }
  let first = true
  for await (const text of source()) {
    const n = ++result.lines
    if (text.trim() === '') continue
    const obj = parseLine(text, n)
    if (first) { checkHeader(obj, n); first = false; continue }
    try {
      if (obj.type === 'pin') {
        const entry = pinFromLine(obj)
        if (entry.blocks != null) {
          result.withBlocks++
          blocks += entry.blocks.length
        } else if (entry.pin.status === 'pinned' && entry.pin.removed == null && Date.parse(entry.pin.pinnedUntil) > now.getTime()) {
          entry.pin = {
            ...entry.pin,
            status: 'queued',
            statusDetails: 'imported without its block list: queued to walk its DAG again (local blocks first, then the network)',
            fetch: { attempts: 0, giveUpAt }
          }
          result.requeued++
        }
        if (opts.resume !== true || !(await target.pins.known(entry.pin.requestid))) pins.push(entry)
      } else if (obj.type === 'payment') {
        const p = paymentFromLine(obj)
        if (opts.resume !== true || !(await target.pins.knownPayment(p.id))) payments.push(p)
      } else if (obj.type === 'ticket') {
        const t = ticketFromLine(obj)
        if (opts.resume !== true || (await target.tickets.get(t.id)) == null) tickets.push(t)
      }
    } catch (err) {
      if (err instanceof LineError) throw new ImportError(`line ${n}: ${err.message} (the input changed since it was checked?)`)
      throw err
    }
    if (pins.length + payments.length + tickets.length >= batchSize || blocks >= MAX_BATCH_BLOCKS) await flush()
  }
  await flush()
  await committing
  // an export of a ledger that leaked a chain of replacements brings the leak along: release it
  await target.pins.releaseUnheld()
  return result
}

class LineError extends Error {}

function parseLine (text: string, n: number): Record<string, unknown> {
  let obj: unknown
  try {
    obj = JSON.parse(text)
  } catch {
    throw new ImportError(`line ${n}: not JSON${n === 1 ? ' (is this a CSV export? import-ledger reads JSON Lines exports only)' : ''}`)
  }
  if (obj == null || typeof obj !== 'object' || Array.isArray(obj)) throw new ImportError(`line ${n}: not a JSON object`)
  return obj as Record<string, unknown>
}

function checkHeader (obj: Record<string, unknown>, n: number): Record<string, unknown> {
  if (obj.type !== 'header' || obj.schema !== EXPORT_SCHEMA) {
    throw new ImportError(`line ${n}: not a pind ledger export (the first line must be the header {"type":"header","schema":"${EXPORT_SCHEMA}",…})`)
  }
  if (!READABLE_VERSIONS.includes(obj.version)) {
    throw new ImportError(`line ${n}: export schema version ${JSON.stringify(obj.version)} is not supported; this pind reads versions ${READABLE_VERSIONS.join(' and ')} (use a pind that matches the exporting one)`)
  }
  return obj
}

/** Typed access to one line's fields; a wrong field is a LineError naming it. */
class Fields {
  constructor (private readonly o: Record<string, unknown>) {}

  private fail (k: string, what: string): never {
    throw new LineError(`${k} must be ${what}, not ${JSON.stringify(this.o[k]) ?? 'missing'}`)
  }

  str (k: string): string {
    const v = this.o[k]
    if (typeof v !== 'string' || v === '') this.fail(k, 'a non-empty string')
    return v
  }

  optStr (k: string): string | undefined {
    const v = this.o[k]
    if (v == null) return undefined
    if (typeof v !== 'string') this.fail(k, 'a string or null')
    return v
  }

  oneOf<T extends string> (k: string, values: readonly T[]): T {
    const v = this.o[k]
    if (!(values as readonly unknown[]).includes(v)) this.fail(k, `one of ${values.join(', ')}`)
    return v as T
  }

  int (k: string): number {
    const v = this.o[k]
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) this.fail(k, 'a whole number ≥ 0')
    return v
  }

  optInt (k: string): number | undefined {
    return this.o[k] == null ? undefined : this.int(k)
  }

  time (k: string): string {
    const v = this.str(k)
    if (Number.isNaN(Date.parse(v))) this.fail(k, 'an RFC 3339 time')
    return v
  }

  optTime (k: string): string | undefined {
    return this.o[k] == null ? undefined : this.time(k)
  }

  amount (k: string): string {
    const v = this.o[k]
    if (typeof v !== 'string' || !/^\d+$/.test(v)) this.fail(k, 'a whole number of atomic units as a string')
    return v
  }

  cid (k: string): string {
    const v = this.str(k)
    if (!isCid(v)) this.fail(k, 'a CID')
    return v
  }

  strings (k: string): string[] {
    const v = this.o[k]
    if (!Array.isArray(v) || v.some(x => typeof x !== 'string')) this.fail(k, 'an array of strings')
    return v as string[]
  }

  stringRecord (k: string): Record<string, string> {
    const v = this.o[k]
    if (v == null || typeof v !== 'object' || Array.isArray(v) || Object.values(v).some(x => typeof x !== 'string')) this.fail(k, 'an object of string values')
    return v as Record<string, string>
  }

  has (k: string): boolean {
    return this.o[k] != null
  }

  bool (k: string): boolean {
    const v = this.o[k]
    if (typeof v !== 'boolean') this.fail(k, 'true or false')
    return v
  }
}

function isCid (s: string): boolean {
  try {
    CID.parse(s)
    return true
  } catch {
    return false
  }
}

const PIN_STATES: readonly PinState[] = ['queued', 'pinning', 'pinned', 'failed']
const REMOVED_WHY = ['unpinned', 'replaced', 'expired'] as const

/** A pin line back to the PinRecord it was exported from (derived columns such as effective_status and amount_usdc are ignored). */
export function pinFromLine (o: Record<string, unknown>): { pin: PinRecord, blocks?: string[] } {
  const f = new Fields(o)
  const created = f.str('created')
  const createdUs = parseMicros(created)
  if (createdUs == null) throw new LineError(`created must be an RFC 3339 time, not ${JSON.stringify(created)}`)
  const name = f.optStr('name')
  const statusDetails = f.optStr('status_details')
  const dagSize = f.optInt('dag_size')
  const fileSize = f.optInt('raw_size')
  const maxBytes = f.optInt('max_bytes')
  const replaces = f.optStr('replaces')
  const replacedBy = f.optStr('replaced_by')
  const tx = f.optStr('settlement_tx')
  const settledAt = f.optTime('settled_at')
  const payment: PaymentInfo = {
    id: f.str('payment_id'),
    payer: f.str('payer'),
    amount: f.amount('amount'),
    network: f.str('network'),
    asset: f.str('asset'),
    ...(tx != null ? { tx } : {}),
    ...(settledAt != null ? { settledAt } : {}),
    method: f.oneOf('payment_method', ['x402', 'operator-token'] as const)
  }
  let fetch: FetchState | undefined
  if (f.has('fetch_attempts') || f.has('fetch_give_up_at')) {
    const nextAttemptAt = f.optTime('fetch_next_attempt_at')
    const lastError = f.optStr('fetch_last_error')
    fetch = {
      attempts: f.int('fetch_attempts'),
      giveUpAt: f.time('fetch_give_up_at'),
      ...(nextAttemptAt != null ? { nextAttemptAt } : {}),
      ...(lastError != null ? { lastError } : {})
    }
  }
  let removed: PinRecord['removed']
  if (f.has('removed_at') || f.has('removed_why')) removed = { at: f.time('removed_at'), why: f.oneOf('removed_why', REMOVED_WHY) }
  // (added within version 1: files of older pinds have no takedown fields)
  const takedown: PinRecord['takedown'] = f.has('takedown_at') || f.has('takedown_reason') ? { at: f.time('takedown_at'), reason: f.str('takedown_reason') } : undefined
  const pin: PinRecord = {
    requestid: f.str('requestid'),
    owner: f.str('owner'),
    cid: f.cid('cid'),
    ...(name != null ? { name } : {}),
    origins: f.strings('origins'),
    meta: f.stringRecord('meta'),
    status: f.oneOf('status', PIN_STATES),
    ...(statusDetails != null ? { statusDetails } : {}),
    created,
    createdUs,
    months: f.int('months'),
    pinnedUntil: f.time('pinned_until'),
    ...(dagSize != null ? { dagSize } : {}),
    ...(fileSize != null ? { fileSize } : {}),
    ...(maxBytes != null ? { maxBytes } : {}),
    source: f.oneOf('source', ['upload', 'pin'] as const),
    payment,
    ...(fetch != null ? { fetch } : {}),
    ...(replaces != null ? { replaces } : {}),
    ...(replacedBy != null ? { replacedBy } : {}),
    ...(removed != null ? { removed } : {}),
    ...(takedown != null ? { takedown } : {})
  }
  if (o.blocks == null) return { pin }
  const blocks = f.strings('blocks')
  for (const b of blocks) if (!isCid(b)) throw new LineError(`blocks holds ${JSON.stringify(b)}, which is not a CID`)
  return { pin, blocks }
}

export function paymentFromLine (o: Record<string, unknown>): PaymentRecord {
  const f = new Fields(o)
  const tx = f.optStr('settlement_tx')
  return {
    id: f.str('payment_id'),
    requestid: f.str('requestid'),
    purpose: f.str('purpose'),
    payer: f.str('payer'),
    amount: f.amount('amount'),
    network: f.str('network'),
    ...(tx != null ? { tx } : {}),
    at: f.time('at'),
    proof: f.str('proof')
  }
}

/** A ticket line back to the UploadTicket it was exported from (amount_usdc, derived, is ignored). */
export function ticketFromLine (o: Record<string, unknown>): UploadTicket {
  const f = new Fields(o)
  const id = f.str('ticket_id')
  // the ledger's key (tickets.ts looks up at most 64 characters)
  if (id.length > 64) throw new LineError(`ticket_id must be at most 64 characters, not ${id.length}`)
  const bytes = f.int('bytes')
  const months = f.int('months')
  if (bytes < 1) throw new LineError(`bytes must be at least 1, not ${bytes}`)
  if (months < 1) throw new LineError(`months must be at least 1, not ${months}`)
  const tx = f.optStr('settlement_tx')
  const used = f.bool('used')
  const claimedBy = f.optStr('claimed_by')
  const claimedAt = f.optTime('claimed_at')
  // (absent from exports older than the field)
  const failedBytes = f.optInt('failed_bytes') ?? 0
  if (failedBytes < 0) throw new LineError(`failed_bytes must be at least 0, not ${failedBytes}`)
  if (used !== (claimedBy != null) || (claimedBy != null) !== (claimedAt != null)) {
    throw new LineError('a used ticket has claimed_by and claimed_at, an unused one neither')
  }
  return {
    id,
    payer: f.str('payer').toLowerCase(),
    bytes,
    months,
    amount: f.amount('amount'),
    paymentId: f.str('payment_id'),
    network: f.str('network'),
    asset: f.str('asset'),
    ...(tx != null ? { tx } : {}),
    createdAt: f.time('created_at'),
    expiresAt: f.time('expires_at'),
    ...(claimedBy != null && claimedAt != null ? { claimed: { requestid: claimedBy, at: claimedAt } } : {}),
    ...(failedBytes > 0 ? { failedBytes } : {})
  }
}

/** A check that keys arrive in strictly ascending byte order: what is wrong with the next one, if anything. */
function ascending (kind: string, keyName: string): (key: string) => string | undefined {
  let prev: Buffer | undefined
  return (key) => {
    const id = Buffer.from(key, 'utf8')
    const order = prev == null ? 1 : Buffer.compare(id, prev)
    prev = id
    if (order > 0) return undefined
    return order === 0 ? `${kind} ${key} appears twice` : `${kind} ${key} is out of order (export writes ${kind}s in ascending ${keyName} order; import relies on it)`
  }
}
