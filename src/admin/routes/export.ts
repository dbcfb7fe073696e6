import type { ServerResponse } from 'node:http'
import { InvalidInputError } from '../../kernel/errors.js'
import { readJson } from '../../http/json-body.js'
import type { Router } from '../../http/router.js'
import { EXPORT_SCHEMA, EXPORT_VERSION, exportLedger, parseExportOptions, type ExportRequest } from '../../service/admin/ledger-export.js'
import type { AdminDeps } from '../deps.js'

/**
 * POST /export-ledger {format, records, since, until, owner, status, withBlocks}:
 * `pind export-ledger` inside a running serve. The export is streamed as it
 * is read from the ledger, waiting for the client whenever the socket is full
 * (flat memory), and stops as soon as the client goes away. All of it comes
 * from one read snapshot of the ledger, however slow the client and whatever
 * serve writes meanwhile (src/service/admin/ledger-export.ts). An error after
 * the first bytes cuts the response, so the client sees an incomplete export
 * (and a JSON Lines export lacks its end line).
 */
export function exportRoutes (router: Router, d: AdminDeps): void {
  router.add('POST', '/export-ledger', async ({ req, res }) => {
    const body = await readJson(req)
    if (body == null || typeof body !== 'object' || Array.isArray(body)) throw new InvalidInputError('send the export options as a JSON object')
    // a bad option is an ExportOptionsError: a bad request (src/http/error-catalog.ts)
    const opts = parseExportOptions(body as ExportRequest)
    const run = exportLedger(d.ledger, opts)
    let gone = false
    res.on('close', () => { gone = true })
    res.writeHead(200, {
      'content-type': run.contentType,
      'cache-control': 'no-store',
      'x-pind-export-schema': `${EXPORT_SCHEMA}; version=${EXPORT_VERSION}`
    })
    for await (const chunk of run.chunks) {
      if (gone) break // leaving the loop (or a throw) ends the generator, which releases its read snapshot
      // past a bounded buffer, wait for the socket (res.write's false alone would stop at every 64 KiB chunk)
      if (!res.write(chunk) && res.writableLength >= MAX_BUFFERED) await drained(res)
    }
    if (!gone) res.end()
  })
}

const MAX_BUFFERED = 1024 * 1024

/** Resolves when the response can take more, or when the client has gone. */
async function drained (res: ServerResponse): Promise<void> {
  await new Promise<void>(resolve => {
    const done = (): void => {
      res.off('drain', done)
      res.off('close', done)
      resolve()
    }
    res.on('drain', done)
    res.on('close', done)
  })
}
