/**
 * `pind export-ledger`: the ledger's pins, payments and upload tickets as JSON Lines or CSV,
 * transport-free. The CLI runs it on a stopped data dir; a running serve runs
 * it behind POST /export-ledger on its admin socket. Both stream: records are
 * read lazily and written in chunks, so memory stays flat whatever the size
 * of the ledger, and both read every record from one ledger snapshot
 * (inOneSnapshot): an export is the ledger at one instant, also while serve
 * takes payments.
 *
 * JSON Lines (schema "pind-ledger-export", version 2):
 *   {"type":"header","schema":"pind-ledger-export","version":2,"exported_at":…,"pind_version":…,"records":…,"with_blocks":…,"filters":{…}}
 *   {"type":"pin", <PIN_COLUMNS>[, "blocks":[…]]}        one per pin, ascending requestid
 *   {"type":"payment", <PAYMENT_COLUMNS>}                one per payment, ascending payment_id
 *   {"type":"ticket", <TICKET_COLUMNS>}                  one per upload ticket, ascending ticket_id
 *   {"type":"end","pins":N,"payments":M,"tickets":T}     so a truncated file is detectable
 * Every column is present on every line (null when the record has no value).
 * Version 2 added the ticket lines (a ticket is prepaid: an import that left
 * it out would lose what its payer paid for), so an older pind refuses the
 * file instead of dropping them; version 1 files (no tickets) still import.
 *
 * CSV: one record type per file, RFC 4180 (CRLF, quoted when needed), a
 * header row, the first column `schema_version` (1 on every row); origins,
 * meta as JSON text. CSV is for accounting, not for import.
 */
import { PindError } from '../../kernel/errors.js'
import { isoMicros, parseMicros } from '../../ledger/clock.js'
import type { Ledger, LedgerSnapshot } from '../../ledger/ledger.js'
import type { UploadTicket } from '../../ledger/tickets.js'
import type { FetchState, PaymentInfo, PaymentRecord, PinRecord } from '../../ledger/records.js'
import { formatUsdc } from '../../payment/pricing.js'
import { VERSION } from '../../kernel/version.js'

export const EXPORT_SCHEMA = 'pind-ledger-export'
export const EXPORT_VERSION = 2

export type ExportFormat = 'jsonl' | 'csv'
export type ExportRecords = 'all' | 'pins' | 'payments' | 'tickets'
/** What `--status` matches: a pin's stored state, or `removed` / `expired` (see pinStatusClass). */
export const STATUS_CLASSES = ['queued', 'pinning', 'pinned', 'failed', 'removed', 'expired'] as const
export type StatusClass = typeof STATUS_CLASSES[number]

/** The columns of a pin line / CSV row, in order (JSON Lines adds `type` first, and `blocks` with --with-blocks). */
export const PIN_COLUMNS = [
  'requestid', 'owner', 'cid', 'name', 'origins', 'meta', 'status', 'effective_status', 'status_details',
  'created', 'pinned_until', 'months', 'dag_size', 'raw_size', 'max_bytes', 'source',
  'removed_at', 'removed_why', 'replaces', 'replaced_by',
  'payment_id', 'payer', 'amount', 'amount_usdc', 'asset', 'network', 'settlement_tx', 'settled_at', 'payment_method',
  'fetch_attempts', 'fetch_give_up_at', 'fetch_next_attempt_at', 'fetch_last_error',
  'takedown_at', 'takedown_reason'
] as const

export const PAYMENT_COLUMNS = [
  'payment_id', 'requestid', 'purpose', 'payer', 'amount', 'amount_usdc', 'network', 'settlement_tx', 'at', 'proof'
] as const

/** An upload ticket: what it was bought for, with which payment, and whether an upload used it (`claimed_by`: the pin it made). */
export const TICKET_COLUMNS = [
  'ticket_id', 'payer', 'bytes', 'months', 'amount', 'amount_usdc', 'asset', 'network', 'payment_id', 'settlement_tx',
  'created_at', 'expires_at', 'used', 'claimed_by', 'claimed_at', 'failed_bytes'
] as const

export type PinLine = { type: 'pin' } & { [K in typeof PIN_COLUMNS[number]]: unknown } & { blocks?: string[] }
export type PaymentLine = { type: 'payment' } & { [K in typeof PAYMENT_COLUMNS[number]]: unknown }
export type TicketLine = { type: 'ticket' } & { [K in typeof TICKET_COLUMNS[number]]: unknown }

// Every field of the ledger's records must be carried by the export (so import
// rebuilds them exactly): adding a field to PinRecord, PaymentInfo, FetchState
// or PaymentRecord without mapping it here fails the typecheck.
type Covered<T extends never> = T
const PIN_FIELDS = ['requestid', 'owner', 'cid', 'name', 'origins', 'meta', 'status', 'statusDetails', 'created', 'createdUs', 'months', 'pinnedUntil', 'dagSize', 'fileSize', 'maxBytes', 'source', 'payment', 'fetch', 'replaces', 'replacedBy', 'removed', 'takedown'] as const
const PAYMENT_INFO_FIELDS = ['id', 'payer', 'amount', 'network', 'asset', 'tx', 'settledAt', 'method'] as const
const FETCH_FIELDS = ['attempts', 'giveUpAt', 'nextAttemptAt', 'lastError'] as const
const PAYMENT_FIELDS = ['id', 'requestid', 'purpose', 'payer', 'amount', 'network', 'tx', 'at', 'proof'] as const
const TICKET_FIELDS = ['id', 'payer', 'bytes', 'months', 'amount', 'paymentId', 'network', 'asset', 'tx', 'createdAt', 'expiresAt', 'claimed', 'failedBytes'] as const
const CLAIM_FIELDS = ['requestid', 'at'] as const
export type AllFieldsExported = [
  Covered<Exclude<keyof PinRecord, typeof PIN_FIELDS[number]>>,
  Covered<Exclude<keyof PaymentInfo, typeof PAYMENT_INFO_FIELDS[number]>>,
  Covered<Exclude<keyof FetchState, typeof FETCH_FIELDS[number]>>,
  Covered<Exclude<keyof PaymentRecord, typeof PAYMENT_FIELDS[number]>>,
  Covered<Exclude<keyof UploadTicket, typeof TICKET_FIELDS[number]>>,
  Covered<Exclude<keyof NonNullable<UploadTicket['claimed']>, typeof CLAIM_FIELDS[number]>>
]

/** What is exported: the ledger's pins, payments and upload tickets, read from one snapshot of it. */
export type ExportSource = Pick<Ledger, 'snapshot'>

/**
 * The lines of an export, every one read from one snapshot of the ledger:
 * pins, payments and tickets of one instant, so a ticket bought or a pin
 * paid for during the export is either there with its payment or not there
 * at all, and nothing written after the export began is. The snapshot is
 * taken when the first line is asked for (an export never read holds
 * nothing) and released when the lines end, fail, or are abandoned (a
 * for await…of left early returns the generator, which runs the finally).
 *
 * Holding a snapshot for the whole export may cost the store space while
 * serve writes meanwhile (LMDB cannot reuse the pages those writes free
 * until it ends; writers are never blocked). For an admin command that runs
 * for seconds to minutes, rarely and one at a time, that is a small price
 * for an export that is the ledger at one instant — what accounting and a
 * move to another instance need.
 */
async function * inOneSnapshot (from: ExportSource, lines: (s: LedgerSnapshot) => AsyncGenerator<string>): AsyncGenerator<string> {
  const at = await from.snapshot()
  try {
    yield * lines(at)
  } finally {
    await at.release()
  }
}

/** What a caller asks for (CLI flags, the admin route's JSON body). */
export interface ExportRequest {
  format?: unknown
  records?: unknown
  since?: unknown
  until?: unknown
  owner?: unknown
  status?: unknown
  withBlocks?: unknown
}

/** A validated request. */
export interface ExportOptions {
  format: ExportFormat
  records: ExportRecords
  withBlocks: boolean
  /** inclusive, microseconds since the epoch */
  sinceUs?: number
  /** exclusive, microseconds since the epoch */
  untilUs?: number
  since?: string
  until?: string
  /** lowercase 0x address */
  owner?: string
  status?: StatusClass[]
}

/** A bad export request: a usage error (the CLI exits 2; src/http/error-catalog.ts answers it). */
export class ExportOptionsError extends PindError {
  override name = 'ExportOptionsError'
}

export function parseExportOptions (raw: ExportRequest): ExportOptions {
  const errors: string[] = []
  const format = raw.format ?? 'jsonl'
  if (format !== 'jsonl' && format !== 'csv') errors.push(`--format must be jsonl or csv, not ${JSON.stringify(format)}`)
  const records = raw.records ?? (format === 'csv' ? 'pins' : 'all')
  if (records !== 'all' && records !== 'pins' && records !== 'payments' && records !== 'tickets') errors.push(`--records must be all, pins, payments or tickets, not ${JSON.stringify(records)}`)
  else if (format === 'csv' && records === 'all') errors.push('--format csv holds one record type per file: --records pins, payments or tickets')
  const withBlocks = raw.withBlocks === true
  if (raw.withBlocks != null && typeof raw.withBlocks !== 'boolean') errors.push('withBlocks must be a boolean')
  if (withBlocks && format === 'csv') errors.push('--with-blocks is for JSON Lines (migration), not CSV')
  const opts: ExportOptions = { format: format as ExportFormat, records: records as ExportRecords, withBlocks }
  for (const which of ['since', 'until'] as const) {
    const v = raw[which]
    if (v == null) continue
    const us = typeof v === 'string' ? parseTime(v) : undefined
    if (us == null) { errors.push(`--${which} must be a date (YYYY-MM-DD, UTC) or an RFC 3339 time, not ${JSON.stringify(v)}`); continue }
    opts[`${which}Us`] = us
    opts[which] = isoMicros(us)
  }
  if (opts.sinceUs != null && opts.untilUs != null && opts.sinceUs >= opts.untilUs) errors.push('--since must be before --until')
  if (raw.owner != null) {
    if (typeof raw.owner !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(raw.owner)) errors.push(`--owner must be a 0x address (40 hex digits), not ${JSON.stringify(raw.owner)}`)
    else opts.owner = raw.owner.toLowerCase()
  }
  if (raw.status != null) {
    const list = typeof raw.status === 'string' ? raw.status.split(',') : Array.isArray(raw.status) ? raw.status : [raw.status]
    const wanted = list.map(s => typeof s === 'string' ? s.trim().toLowerCase() : s)
    const bad = wanted.filter(s => !(STATUS_CLASSES as readonly unknown[]).includes(s))
    if (bad.length > 0 || wanted.length === 0) errors.push(`--status takes a comma-separated list of ${STATUS_CLASSES.join(', ')}${bad.length > 0 ? `; not ${bad.map(b => JSON.stringify(b)).join(', ')}` : ''}`)
    else opts.status = [...new Set(wanted as StatusClass[])]
  }
  if (errors.length > 0) throw new ExportOptionsError(errors.join('; '))
  return opts
}

/** `2026-01-31` (UTC midnight) or RFC 3339 with an offset → microseconds. */
function parseTime (s: string): number | undefined {
  if (/^\d{4}-\d{2}-\d{2}$/.test(s)) {
    const ms = Date.parse(`${s}T00:00:00Z`)
    return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== s ? undefined : ms * 1000
  }
  return parseMicros(s)
}

/**
 * The class a pin falls in for `--status` (and the `effective_status`
 * column), exactly one per pin: `removed` when it was unpinned, replaced or
 * swept as expired; else `failed` when it failed; else `expired` when its
 * pinned_until has passed (the sweeper has not marked it yet); else its state
 * (queued, pinning, pinned).
 */
export function pinStatusClass (pin: PinRecord, nowMs: number): StatusClass {
  if (pin.removed != null) return 'removed'
  if (pin.status === 'failed') return 'failed'
  if (Date.parse(pin.pinnedUntil) <= nowMs) return 'expired'
  return pin.status
}

export interface ExportStats {
  pins: number
  payments: number
  tickets: number
}

export interface ExportRun {
  /** counts of what has been produced so far (read it for progress; final after the last chunk) */
  stats: ExportStats
  /** content type of the output */
  contentType: string
  /** text chunks of about `chunkBytes` each; the last one ends the document */
  chunks: AsyncGenerator<string, void, undefined>
}

const CHUNK_BYTES = 64 * 1024

/** Starts an export; nothing is read until `chunks` is iterated, and all of it from one snapshot of the ledger (inOneSnapshot). Stopping the iteration early, or a failure, releases the snapshot. */
export function exportLedger (from: ExportSource, opts: ExportOptions, now: Date = new Date(), chunkBytes = CHUNK_BYTES): ExportRun {
  const stats: ExportStats = { pins: 0, payments: 0, tickets: 0 }
  const lines = inOneSnapshot(from, (s) => opts.format === 'csv' ? csvLines(s, opts, stats, now) : jsonLines(s, opts, stats, now))
  return {
    stats,
    contentType: opts.format === 'csv' ? 'text/csv; charset=utf-8; header=present' : 'application/x-ndjson; charset=utf-8',
    chunks: chunked(lines, chunkBytes)
  }
}

async function * chunked (lines: AsyncIterable<string>, chunkBytes: number): AsyncGenerator<string, void, undefined> {
  let parts: string[] = []
  let size = 0
  for await (const line of lines) {
    parts.push(line)
    size += line.length
    if (size >= chunkBytes) {
      yield parts.join('')
      parts = []
      size = 0
    }
  }
  if (parts.length > 0) yield parts.join('')
}

export function exportHeader (opts: ExportOptions, now: Date): Record<string, unknown> {
  return {
    type: 'header',
    schema: EXPORT_SCHEMA,
    version: EXPORT_VERSION,
    exported_at: now.toISOString(),
    pind_version: VERSION,
    records: opts.records,
    with_blocks: opts.withBlocks,
    filters: {
      since: opts.since ?? null,
      until: opts.until ?? null,
      owner: opts.owner ?? null,
      status: opts.status ?? null
    }
  }
}

async function * jsonLines (r: LedgerSnapshot, opts: ExportOptions, stats: ExportStats, now: Date): AsyncGenerator<string> {
  yield JSON.stringify(exportHeader(opts, now)) + '\n'
  const nowMs = now.getTime()
  if (opts.records === 'all' || opts.records === 'pins') {
    for await (const pin of selectPins(r, opts, nowMs)) {
      const line: PinLine = pinLine(pin, nowMs)
      if (opts.withBlocks) line.blocks = await r.blocksOf(pin.requestid)
      stats.pins++
      yield JSON.stringify(line) + '\n'
    }
  }
  if (opts.records === 'all' || opts.records === 'payments') {
    for await (const p of selectPayments(r, opts, nowMs)) {
      stats.payments++
      yield JSON.stringify(paymentLine(p)) + '\n'
    }
  }
  if (opts.records === 'all' || opts.records === 'tickets') {
    for await (const t of selectTickets(r, opts, nowMs)) {
      stats.tickets++
      yield JSON.stringify(ticketLine(t)) + '\n'
    }
  }
  yield JSON.stringify({ type: 'end', pins: stats.pins, payments: stats.payments, tickets: stats.tickets }) + '\n'
}

async function * csvLines (r: LedgerSnapshot, opts: ExportOptions, stats: ExportStats, now: Date): AsyncGenerator<string> {
  const nowMs = now.getTime()
  const version = String(EXPORT_VERSION)
  if (opts.records === 'pins') {
    yield csvRow(['schema_version', ...PIN_COLUMNS])
    for await (const pin of selectPins(r, opts, nowMs)) {
      const line = pinLine(pin, nowMs)
      stats.pins++
      yield csvRow([version, ...PIN_COLUMNS.map(c => c === 'name' ? formulaSafe(line.name) : line[c])])
    }
  } else if (opts.records === 'payments') {
    yield csvRow(['schema_version', ...PAYMENT_COLUMNS])
    for await (const p of selectPayments(r, opts, nowMs)) {
      const line = paymentLine(p)
      stats.payments++
      yield csvRow([version, ...PAYMENT_COLUMNS.map(c => line[c])])
    }
  } else {
    yield csvRow(['schema_version', ...TICKET_COLUMNS])
    for await (const t of selectTickets(r, opts, nowMs)) {
      const line = ticketLine(t)
      stats.tickets++
      yield csvRow([version, ...TICKET_COLUMNS.map(c => line[c])])
    }
  }
}

async function * selectPins (r: LedgerSnapshot, opts: ExportOptions, nowMs: number): AsyncGenerator<PinRecord> {
  for await (const pin of r.pins()) {
    if (opts.sinceUs != null && pin.createdUs < opts.sinceUs) continue
    if (opts.untilUs != null && pin.createdUs >= opts.untilUs) continue
    if (opts.owner != null && pin.owner.toLowerCase() !== opts.owner) continue
    if (opts.status != null && !opts.status.includes(pinStatusClass(pin, nowMs))) continue
    yield pin
  }
}

/** Payments filter on `at` (since/until), the payer (owner) and, with --status, the class of the pin they paid for (a ticket's: the pin its upload made). */
async function * selectPayments (r: LedgerSnapshot, opts: ExportOptions, nowMs: number): AsyncGenerator<PaymentRecord> {
  for await (const p of r.payments()) {
    if (opts.sinceUs != null || opts.untilUs != null) {
      const at = parseMicros(p.at) ?? 0
      if (opts.sinceUs != null && at < opts.sinceUs) continue
      if (opts.untilUs != null && at >= opts.untilUs) continue
    }
    if (opts.owner != null && p.payer.toLowerCase() !== opts.owner) continue
    if (opts.status != null) {
      const requestid = p.purpose.startsWith('ticket:') ? (await r.ticket(p.requestid))?.claimed?.requestid : p.requestid
      const pin = requestid != null ? await r.pin(requestid) : undefined
      if (pin == null || !opts.status.includes(pinStatusClass(pin, nowMs))) continue
    }
    yield p
  }
}

/** Tickets filter on when they were bought (since/until), the payer (owner) and, with --status, the class of the pin their upload made (an unused ticket has none). */
async function * selectTickets (r: LedgerSnapshot, opts: ExportOptions, nowMs: number): AsyncGenerator<UploadTicket> {
  for await (const t of r.tickets()) {
    if (opts.sinceUs != null || opts.untilUs != null) {
      const at = parseMicros(t.createdAt) ?? 0
      if (opts.sinceUs != null && at < opts.sinceUs) continue
      if (opts.untilUs != null && at >= opts.untilUs) continue
    }
    if (opts.owner != null && t.payer.toLowerCase() !== opts.owner) continue
    if (opts.status != null) {
      const pin = t.claimed != null ? await r.pin(t.claimed.requestid) : undefined
      if (pin == null || !opts.status.includes(pinStatusClass(pin, nowMs))) continue
    }
    yield t
  }
}

export function pinLine (pin: PinRecord, nowMs: number): PinLine {
  const pay = pin.payment
  return {
    type: 'pin',
    requestid: pin.requestid,
    owner: pin.owner,
    cid: pin.cid,
    name: pin.name ?? null,
    origins: pin.origins,
    meta: pin.meta,
    status: pin.status,
    effective_status: pinStatusClass(pin, nowMs),
    status_details: pin.statusDetails ?? null,
    created: pin.created,
    pinned_until: pin.pinnedUntil,
    months: pin.months,
    dag_size: pin.dagSize ?? null,
    raw_size: pin.fileSize ?? null,
    max_bytes: pin.maxBytes ?? null,
    source: pin.source,
    removed_at: pin.removed?.at ?? null,
    removed_why: pin.removed?.why ?? null,
    replaces: pin.replaces ?? null,
    replaced_by: pin.replacedBy ?? null,
    payment_id: pay.id,
    payer: pay.payer,
    amount: pay.amount,
    amount_usdc: usdc(pay.amount),
    asset: pay.asset,
    network: pay.network,
    settlement_tx: pay.tx ?? null,
    settled_at: pay.settledAt ?? null,
    payment_method: pay.method,
    fetch_attempts: pin.fetch?.attempts ?? null,
    fetch_give_up_at: pin.fetch?.giveUpAt ?? null,
    fetch_next_attempt_at: pin.fetch?.nextAttemptAt ?? null,
    fetch_last_error: pin.fetch?.lastError ?? null,
    takedown_at: pin.takedown?.at ?? null,
    takedown_reason: pin.takedown?.reason ?? null
  }
}

export function paymentLine (p: PaymentRecord): PaymentLine {
  return {
    type: 'payment',
    payment_id: p.id,
    requestid: p.requestid,
    purpose: p.purpose,
    payer: p.payer,
    amount: p.amount,
    amount_usdc: usdc(p.amount),
    network: p.network,
    settlement_tx: p.tx ?? null,
    at: p.at,
    proof: p.proof
  }
}

export function ticketLine (t: UploadTicket): TicketLine {
  return {
    type: 'ticket',
    ticket_id: t.id,
    payer: t.payer,
    bytes: t.bytes,
    months: t.months,
    amount: t.amount,
    amount_usdc: usdc(t.amount),
    asset: t.asset,
    network: t.network,
    payment_id: t.paymentId,
    settlement_tx: t.tx ?? null,
    created_at: t.createdAt,
    expires_at: t.expiresAt,
    used: t.claimed != null,
    claimed_by: t.claimed?.requestid ?? null,
    claimed_at: t.claimed?.at ?? null,
    failed_bytes: t.failedBytes ?? 0
  }
}

/** Atomic units (6 decimals) as a USDC decimal string, as formatUsdc does, without a BigInt per record. */
function usdc (amount: string): string | null {
  if (!/^\d+$/.test(amount)) return /^-\d+$/.test(amount) ? formatUsdc(BigInt(amount)) : null
  const digits = amount.length > 7 ? amount.replace(/^0+(?=\d{7})/, '') : amount.padStart(7, '0')
  return `${digits.slice(0, -6)}.${digits.slice(-6)}`
}

/** One CSV record (RFC 4180): CRLF-terminated, a field quoted when it holds a quote, comma, CR or LF. */
export function csvRow (cells: readonly unknown[]): string {
  let out = ''
  for (let i = 0; i < cells.length; i++) {
    if (i > 0) out += ','
    out += csvCell(cells[i])
  }
  return out + '\r\n'
}

function csvCell (v: unknown): string {
  if (v == null) return ''
  const s = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v)
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s
}

/**
 * Pin names are chosen by whoever pays: in CSV, a name that a spreadsheet
 * would run as a formula (starting with = + - @ or a tab/CR) gets a leading
 * apostrophe (OWASP's CSV-injection advice). JSON Lines keeps names verbatim.
 */
function formulaSafe (name: unknown): unknown {
  return typeof name === 'string' && /^[=+\-@\t\r]/.test(name) ? `'${name}` : name
}
