/**
 * `pind export-ledger`: streams pins, payments and upload tickets as JSON Lines or CSV, to
 * stdout or a file. Runs through a running serve's admin socket (which
 * streams the export) or on a stopped data dir; either way the records are
 * never all in memory. A file is written as `<file>.partial` (mode 0600) and
 * renamed when complete, so a file with the final name is always whole.
 */
import { open, rename, rm } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { resolve } from 'node:path'
import { StringDecoder } from 'node:string_decoder'
import type { Command } from 'commander'
import { AdminCallError, openAdminStream } from '../admin/client.js'
import { EXPORT_SCHEMA, EXPORT_VERSION, ExportOptionsError, exportLedger, parseExportOptions, STATUS_CLASSES, type ExportOptions, type ExportRequest } from '../service/admin/ledger-export.js'
import { runAdmin, describeVia } from './admin-target.js'
import { configFromCli, EXIT_USAGE } from './config-from-cli.js'
import { CliError, fail, usage } from './fail.js'
import { count, progressLine } from './progress.js'

interface ExportFlags {
  format?: string
  records?: string
  output?: string
  since?: string
  until?: string
  owner?: string
  status?: string
  withBlocks?: boolean
  json?: boolean
}

export function exportLedgerCommand (program: Command): void {
  program.command('export-ledger')
    .description('stream the ledger (pins, payments, upload tickets) as JSON Lines or CSV, for accounting or to move to another instance')
    .option('--format <format>', 'jsonl (default): every pin, payment and upload ticket, with a header and an end line; csv: one record type per file')
    .option('--records <which>', 'all, pins, payments or tickets (default: all for jsonl, pins for csv)')
    .option('-o, --output <file>', 'write to this file (mode 0600, via <file>.partial renamed when complete) instead of stdout')
    .option('--since <time>', 'only records created (pins) / paid (payments) / bought (tickets) at or after this UTC date (YYYY-MM-DD) or RFC 3339 time')
    .option('--until <time>', 'only records created / paid before this date or time (exclusive)')
    .option('--owner <address>', 'only pins of this owner, payments and tickets by this payer (0x address, any case)')
    .option('--status <list>', `only pins in these states, comma-separated: ${STATUS_CLASSES.join(', ')} (payments and tickets: those of such pins)`)
    .option('--with-blocks', 'jsonl: add each pin\'s block CIDs, so import-ledger restores block references exactly')
    .option('--json', 'print the summary on stderr as JSON')
    .addHelpText('after', `
Works on a running serve (through its admin socket) or on a stopped data dir.
Progress is shown on stderr when it is a terminal. JSON Lines lines:
  {"type":"header","schema":"${EXPORT_SCHEMA}","version":${EXPORT_VERSION},"exported_at":…,"filters":{…},…}
  {"type":"pin",…}  {"type":"payment",…}  {"type":"ticket",…}  …
  {"type":"end","pins":N,"payments":M,"tickets":T}
Fields, CSV columns and the status vocabulary: see README, "export-ledger".

Examples:
  pind export-ledger > ledger.jsonl
  pind export-ledger --with-blocks -o /backup/pind-ledger.jsonl      (to move to another instance)
  pind export-ledger --format csv --since 2026-01-01 --until 2026-02-01 -o pins-january.csv
  pind export-ledger --format csv --records payments --since 2026-01-01 -o payments.csv
  pind export-ledger --owner 0xAbC… --status pinned,expired | jq -c 'select(.type=="pin")'
`)
    .action(async (o: ExportFlags, cmd: Command) => { await runExport(o, cmd) })
}

async function runExport (o: ExportFlags, cmd: Command): Promise<void> {
  const config = configFromCli(cmd, 'admin')
  const request: ExportRequest = {
    ...(o.format != null ? { format: o.format } : {}),
    ...(o.records != null ? { records: o.records } : {}),
    ...(o.since != null ? { since: o.since } : {}),
    ...(o.until != null ? { until: o.until } : {}),
    ...(o.owner != null ? { owner: o.owner } : {}),
    ...(o.status != null ? { status: o.status } : {}),
    ...(o.withBlocks === true ? { withBlocks: true } : {})
  }
  let opts: ExportOptions
  try {
    opts = parseExportOptions(request)
  } catch (err) {
    if (!(err instanceof ExportOptionsError)) throw err
    usage('export-ledger', err.message)
  }
  const started = performance.now()
  // not while the export itself goes to the terminal
  const bar = progressLine('export-ledger', { enabled: o.output != null || process.stdout.isTTY !== true })
  const progress = {
    show: (records: number): void => { bar.update(`${count(records)} records (${count(Math.round(records / Math.max(0.001, (performance.now() - started) / 1000)))}/s)`) },
    clear: (): void => { bar.done() }
  }
  const interrupt = new AbortController()
  const onSignal = (): void => { interrupt.abort(new CliError('interrupted')) }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  let out: Output | undefined
  try {
    const r = await runAdmin(config, 'export-ledger', {
      viaServe: async (socket) => {
        const stream = await openAdminStream(socket, '/export-ledger', request, interrupt.signal)
        try {
          out = await Output.open(o.output)
          const counter = new StreamCounter(opts)
          for await (const chunk of stream.body) {
            counter.push(chunk)
            await out.write(chunk)
            progress.show(counter.records())
          }
          return counter.finish()
        } finally {
          await stream.close()
        }
      },
      locally: async ({ core }) => {
        out = await Output.open(o.output)
        const run = exportLedger(core.ledger, opts)
        for await (const chunk of run.chunks) {
          if (interrupt.signal.aborted) throw interrupt.signal.reason
          await out.write(chunk)
          progress.show(run.stats.pins + run.stats.payments + run.stats.tickets)
        }
        return { ...run.stats }
      }
    })
    await out?.finish()
    progress.clear()
    const seconds = Math.round((performance.now() - started) / 10) / 100
    const summary = {
      schema: EXPORT_SCHEMA,
      version: EXPORT_VERSION,
      format: opts.format,
      records: opts.records,
      pins: r.result.pins,
      payments: r.result.payments,
      tickets: r.result.tickets,
      bytes: out?.bytes ?? 0,
      output: o.output != null ? resolve(o.output) : null,
      seconds,
      via: r.how.via,
      ...(r.how.via === 'serve' ? { pid: r.how.pid } : {})
    }
    const where = describeVia(r.how, config.dataDir)
    if (o.json === true) process.stderr.write(JSON.stringify(summary) + '\n')
    else {
      const what = opts.records === 'all'
        ? `${summary.pins} pins, ${summary.payments} payments and ${summary.tickets} upload tickets`
        : opts.records === 'pins' ? `${summary.pins} pins` : opts.records === 'payments' ? `${summary.payments} payments` : `${summary.tickets} upload tickets`
      process.stderr.write(`pind export-ledger: exported ${what} (${opts.format}, schema version ${EXPORT_VERSION}, ${summary.bytes} bytes) to ${summary.output ?? 'stdout'} in ${seconds} s, ${where}\n`)
    }
  } catch (err) {
    progress.clear()
    await out?.abort()
    fail('export-ledger', explain(err))
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

/** the export's own failures, as the operator should read them */
function explain (err: unknown): unknown {
  const e = err as Error & { code?: string }
  if (err instanceof AdminCallError && err.status === 400) return new CliError(err.message, EXIT_USAGE)
  if (err instanceof AdminCallError || err instanceof CliError) return err
  if (e.name === 'AbortError' || e.code === 'UND_ERR_ABORTED') return new CliError('interrupted')
  if (e.code === 'UND_ERR_SOCKET' || e.name === 'SocketError') return new CliError(`the running serve ended the export early (${e.message}); nothing was kept`)
  return err
}

class OutputError extends CliError {}

/** stdout, or a file written as `<file>.partial` and renamed into place when complete. */
class Output {
  bytes = 0
  private error: Error | undefined
  private inFlight: Promise<void> | undefined

  private constructor (private readonly path: string | undefined, private readonly fh: FileHandle | undefined) {
    if (fh == null) process.stdout.on('error', (err) => { this.error ??= err })
  }

  static async open (path: string | undefined): Promise<Output> {
    if (path == null) return new Output(undefined, undefined)
    const partial = `${path}.partial`
    try {
      const fh = await open(partial, 'w', 0o600)
      await fh.chmod(0o600) // an old .partial keeps its mode otherwise
      return new Output(path, fh)
    } catch (err) {
      throw new OutputError(`cannot write ${partial}: ${(err as Error).message}`)
    }
  }

  /**
   * A file write runs while the caller produces the next chunk: at most one
   * write is in flight (so memory stays at about two chunks), in order.
   */
  async write (chunk: string | Buffer): Promise<void> {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk
    this.bytes += buf.length
    if (this.fh != null) {
      await this.inFlight
      this.inFlight = this.fh.write(buf).then(() => {})
      return
    }
    if (this.error != null) throw this.outputClosed()
    if (!process.stdout.write(buf)) {
      await new Promise<void>((resolve) => {
        const done = (): void => { process.stdout.off('drain', done); process.stdout.off('error', done); resolve() }
        process.stdout.on('drain', done)
        process.stdout.on('error', done)
      })
      if (this.error != null) throw this.outputClosed()
    }
  }

  private outputClosed (): OutputError {
    return new OutputError(`stdout was closed before the export finished (${this.error?.message ?? ''})`)
  }

  async finish (): Promise<void> {
    if (this.fh == null || this.path == null) return
    await this.inFlight
    await this.fh.sync()
    await this.fh.close()
    await rename(`${this.path}.partial`, this.path)
  }

  async abort (): Promise<void> {
    if (this.fh == null) return
    await this.inFlight?.catch(() => {})
    await this.fh.close().catch(() => {})
    await rm(`${this.path as string}.partial`, { force: true })
  }
}

/**
 * Counts records in an export streamed by serve (for progress) and checks
 * it is whole: a JSON Lines export must end with its end line, whose counts
 * are the result; CSV rows are counted outside quoted cells.
 */
class StreamCounter {
  private readonly decoder = new StringDecoder('utf8')
  private lines = 0
  private partial = ''
  private last = ''
  private inQuotes = false

  constructor (private readonly opts: ExportOptions) {}

  push (chunk: Buffer): void {
    const text = this.decoder.write(chunk)
    if (this.opts.format === 'csv') {
      const re = /["\n]/g
      let m: RegExpExecArray | null
      while ((m = re.exec(text)) != null) {
        if (m[0] === '"') this.inQuotes = !this.inQuotes
        else if (!this.inQuotes) this.lines++
      }
      return
    }
    const lastNl = text.lastIndexOf('\n')
    if (lastNl < 0) {
      this.partial += text
      return
    }
    for (let i = text.indexOf('\n'); i >= 0 && i <= lastNl; i = text.indexOf('\n', i + 1)) this.lines++
    const prevNl = text.lastIndexOf('\n', lastNl - 1)
    this.last = prevNl >= 0 ? text.slice(prevNl + 1, lastNl) : this.partial + text.slice(0, lastNl)
    this.partial = text.slice(lastNl + 1)
  }

  /** records so far (lines less the header) */
  records (): number {
    return Math.max(0, this.lines - 1)
  }

  finish (): { pins: number, payments: number, tickets: number } {
    if (this.opts.format === 'csv') {
      const n = this.records()
      return { pins: this.opts.records === 'pins' ? n : 0, payments: this.opts.records === 'payments' ? n : 0, tickets: this.opts.records === 'tickets' ? n : 0 }
    }
    let end: { type?: unknown, pins?: unknown, payments?: unknown, tickets?: unknown } = {}
    try { end = JSON.parse(this.last) } catch {}
    if (this.partial.trim() !== '' || end.type !== 'end' || typeof end.pins !== 'number' || typeof end.payments !== 'number' || typeof end.tickets !== 'number') {
      throw new CliError('the export from the running serve ended without its end line (was serve stopped?); nothing was kept')
    }
    return { pins: end.pins, payments: end.payments, tickets: end.tickets }
  }
}
