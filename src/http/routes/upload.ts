import type { TokenService } from '../../auth/tokens.js'
import { InvalidInputError, NotFoundError, ReplayRefusedError, UnavailableError } from '../../kernel/errors.js'
import type { Ledger } from '../../ledger/ledger.js'
import type { UploadTickets } from '../../ledger/tickets.js'
import { MAX_DIRECTORY_FILES } from '../../ipfs/directory-import.js'
import { UNIXFS_PROFILE } from '../../ipfs/import.js'
import { CAR_TYPE, upload, type FileReader, type UploadDeps } from '../../service/uploads/upload.js'
import { buyTicket, ticketBody, type TicketBuyDeps } from '../../service/uploads/upload-ticket.js'
import { uploadWithTicket, type TicketUploadDeps } from '../../service/uploads/ticket-upload.js'
import { bearer } from '../bearer.js'
import { PAYMENT_HEADER } from '../../payment/gate.js'
import { errorAnswer } from '../error-catalog.js'
import { byteCount, DURATION_HEADER, parseMonths, UPLOAD_SIZE_HEADER } from '../write-headers.js'
import { readFiles, readSingleFile, type UploadedFile } from '../multipart.js'
import { answerUnread, sendJson } from '../respond.js'
import type { Router } from '../router.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { failure, legalReasons, operation, paymentRequired, ref, response, schema, tokenHeaders, type Obj, type OpenApiInput, type PathItems, unauthorized, writesUnavailable } from '../openapi-parts.js'

/** the header naming the prepaid ticket an upload uses */
export const TICKET_HEADER = 'x-upload-ticket'

/** what the ticket routes need besides the upload's own deps */
export interface TicketRouteDeps {
  tickets: Pick<UploadTickets, 'check' | 'get' | 'noteFailed'>
  /** where a ticket and its payment, or its claim and the pin it makes, are written in one transaction */
  records: Pick<Ledger, 'transaction'>
  direct: TicketUploadDeps['direct']
  journals?: TicketUploadDeps['journals']
  discard: TicketUploadDeps['discard']
  retries: number
  onLeftover?: TicketUploadDeps['onLeftover']
  /** verifies the payer's wallet token (Authorization: Bearer) */
  verifier: TokenService
  /** seconds a ticket can be used after its purchase */
  validitySeconds: number
}

/**
 * POST /upload: multipart, one part named "file"; paid with x402, or with a
 * prepaid ticket (X-Upload-Ticket and the payer's wallet token).
 * POST /upload/tickets: buys such a ticket (x402, settled at once);
 * GET /upload/tickets/{ticket}: the payer's view of it.
 */
/** what POST /upload and the ticket routes are given */
export type UploadRouteDeps = Omit<UploadDeps, 'gate'> & { gate?: UploadDeps['gate'], ticket?: TicketRouteDeps }

export function uploadRoutes (router: Router, deps: UploadRouteDeps): void {
  const ticketDeps = deps.ticket
  if (ticketDeps != null) ticketRoutes(router, deps, ticketDeps)
  router.add('POST', '/upload', async ({ req, res, url, countAsPaid }) => {
    const ticket = req.headers[TICKET_HEADER]
    if (ticket != null && ticketDeps != null) {
      await ticketUpload(req, res, url, typeof ticket === 'string' ? ticket : '', deps, ticketDeps)
      countAsPaid() // answered without an error: it was paid (by its ticket)
      return
    }
    const months = parseMonths(req.headers[DURATION_HEADER], deps.prices.maxMonths)
    if (deps.gate == null) throw new UnavailableError('payments are not configured on this server (no pay-to address or facilitator); writes are disabled', 3600)
    const paymentHeader = req.headers[PAYMENT_HEADER]
    // the price is based on X-Upload-Size (the file's bytes), else on Content-Length (the whole body's)
    const fileBytes = typeof req.headers[UPLOAD_SIZE_HEADER] === 'string' ? byteCount(req, UPLOAD_SIZE_HEADER, 'X-Upload-Size must be a whole number of bytes') : undefined
    const bodyBytes = byteCount(req, 'content-length', fileBytes != null ? undefined : 'Content-Length must be a whole number of bytes')
    const file = fileReader(req, url)
    let r
    try {
      r = await upload({
        months,
        ...(typeof paymentHeader === 'string' ? { payment: paymentHeader } : {}),
        ...(fileBytes != null ? { fileBytes } : {}),
        ...(bodyBytes != null ? { bodyBytes } : {}),
        file
      }, { ...deps, gate: deps.gate })
    } catch (err) {
      // a used payment sent again and refused: its body is not read
      if (err instanceof ReplayRefusedError) { answerUnread(req, res, errorAnswer(err)); return }
      throw err
    }
    countAsPaid() // answered without an error: it was paid
    if (r.replayed) {
      sendJson(res, 200, r.result)
      return
    }
    sendJson(res, 201, r.result, {
      ...(r.settlement != null ? { 'payment-response': r.settlement } : {}),
      ...(r.token != null ? { 'x-wallet-auth-token': r.token.token, 'x-wallet-auth-token-expires': r.token.expiresAt.toISOString() } : {}),
      ...(r.location != null ? { location: r.location } : {})
    })
  })
}

/**
 * The request's one file part; a CAR when the part says so (its content type
 * application/vnd.ipld.car) or the request does (`?format=car`).
 */
function fileReader (req: IncomingMessage, url: URL): FileReader {
  const format = url.searchParams.get('format')
  if (format === 'directory') {
    return async (consume, limits) => await readFiles(req, async (parts) => await consume({ directory: pathsOf(parts) }), { ...limits, maxFiles: MAX_DIRECTORY_FILES })
  }
  if (format != null && format !== 'car') throw new InvalidInputError('format may be car (the file part is a CAR whose DAG is pinned as it is) or directory (every file part, named by its path, in one directory); without it the one file part is imported as UnixFS')
  return async (consume, limits) => await readSingleFile(req, async (f) => await consume({ name: f.filename, type: format === 'car' ? CAR_TYPE : f.mimeType, bytes: f.stream }), limits)
}

async function * pathsOf (parts: AsyncIterable<UploadedFile>): AsyncGenerator<{ path: string, bytes: AsyncIterable<Uint8Array> }> {
  for await (const p of parts) yield { path: p.filename, bytes: p.stream }
}

/** POST /upload with X-Upload-Ticket: the upload the ticket paid for (no payment header). */
async function ticketUpload (req: IncomingMessage, res: ServerResponse, url: URL, ticket: string, deps: Parameters<typeof uploadRoutes>[1], t: TicketRouteDeps): Promise<void> {
  if (req.headers[PAYMENT_HEADER] != null) throw new InvalidInputError('send either a payment or X-Upload-Ticket, not both')
  if (!UUID.test(ticket.trim())) throw new InvalidInputError('X-Upload-Ticket must be the id of a ticket bought with POST /upload/tickets')
  const { owner } = await bearer(req, t.verifier)
  const file = fileReader(req, url)
  const r = await uploadWithTicket({ ticket: ticket.trim().toLowerCase(), owner, file }, {
    ledger: deps.ledger, tickets: t.tickets, records: t.records, direct: t.direct, slots: deps.slots, publicUrl: deps.publicUrl, log: deps.log,
    discard: t.discard, retries: t.retries,
    ...(deps.siteUrl != null ? { siteUrl: deps.siteUrl } : {}),
    ...(t.journals != null ? { journals: t.journals } : {}),
    ...(t.onLeftover != null ? { onLeftover: t.onLeftover } : {}),
    ...(deps.refusal != null ? { refusal: deps.refusal } : {}),
    ...(deps.storage != null ? { storage: deps.storage } : {})
  })
  sendJson(res, 201, r.result, r.location != null ? { location: r.location } : {})
}

function ticketRoutes (router: Router, deps: Parameters<typeof uploadRoutes>[1], t: TicketRouteDeps): void {
  router.add('POST', '/upload/tickets', async ({ req, res, countAsPaid }) => {
    const months = parseMonths(req.headers[DURATION_HEADER], deps.prices.maxMonths)
    if (deps.gate == null) throw new UnavailableError('payments are not configured on this server (no pay-to address or facilitator); writes are disabled', 3600)
    const paymentHeader = req.headers[PAYMENT_HEADER]
    const fileBytes = byteCount(req, UPLOAD_SIZE_HEADER, 'X-Upload-Size must be a whole number of bytes')
    const d: TicketBuyDeps = {
      ledger: deps.ledger, tickets: t.tickets, records: t.records, gate: deps.gate, tokens: deps.tokens, once: deps.once, prices: deps.prices,
      uploadMaxBytes: deps.uploadMaxBytes, validitySeconds: t.validitySeconds, publicUrl: deps.publicUrl, network: deps.network, asset: deps.asset, log: deps.log,
      ...(deps.storage != null ? { storage: deps.storage } : {}),
      ...(deps.openNotes != null ? { openNotes: deps.openNotes } : {}),
      ...(deps.paidRoutes != null ? { paidRoutes: deps.paidRoutes } : {})
    }
    const r = await buyTicket({ months, ...(fileBytes != null ? { fileBytes } : {}), ...(typeof paymentHeader === 'string' ? { payment: paymentHeader } : {}) }, d)
    countAsPaid()
    sendJson(res, r.replayed ? 200 : 201, r.result, {
      location: r.location,
      ...(r.settlement != null ? { 'payment-response': r.settlement } : {}),
      ...(r.token != null ? { 'x-wallet-auth-token': r.token.token, 'x-wallet-auth-token-expires': r.token.expiresAt.toISOString() } : {})
    })
  })
  router.add('GET', '/upload/tickets/:ticket', async ({ req, res, params }) => {
    const { owner } = await bearer(req, t.verifier)
    const id = String(params.ticket ?? '').toLowerCase()
    const ticket = UUID.test(id) ? await t.tickets.get(id) : undefined
    // another wallet's ticket is not found either (as another owner's pin)
    if (ticket == null || ticket.payer !== owner.toLowerCase()) throw new NotFoundError('no such upload ticket for this wallet')
    sendJson(res, 200, ticketBody(ticket, deps.publicUrl))
  })
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

// ---- the OpenAPI description of this route (src/http/openapi.ts) -----------

export function uploadOperations (o: OpenApiInput): PathItems {
  return {
    '/upload': { post: uploadFileOp(o) },
    '/upload/tickets': { post: buyTicketOp(o) },
    '/upload/tickets/{ticket}': { get: ticketOp() }
  }
}

const ticketParameter = (): Obj => ({ name: 'X-Upload-Ticket', in: 'header', required: false, description: 'Upload with a prepaid ticket (`POST /upload/tickets`) instead of a payment: send the ticket\'s id here and the payer\'s wallet token as `Authorization: Bearer`, and no `PAYMENT-SIGNATURE`.', schema: { type: 'string', format: 'uuid' } })

function buyTicketOp (o: OpenApiInput): Obj {
  return operation('post', {
    id: 'buyUploadTicket',
    tag: 'upload',
    summary: 'Buy a prepaid, single-use upload ticket (paid)',
    description: [
      `No body. Quoted exactly as \`POST /upload\` is for a file of \`X-Upload-Size\` bytes (required, at most ${o.uploadMaxBytes}) and \`X-Pin-Duration-Months\`: the same price. Paid with x402 and **settled at once**; the 201 carries the ticket, \`PAYMENT-RESPONSE\` and a wallet token.`,
      'The ticket lets its payer\'s wallet (its wallet token, not the ticket id alone) upload one file of up to that many bytes with `POST /upload` and `X-Upload-Ticket`, before `expiresAt` (the operator\'s `--upload-ticket-validity`, 30 days by default). As no settlement waits for the body, that upload\'s blocks go to the block store while the body arrives. An upload that fails (too large, client gone, denied content, storage unreachable) does not use the ticket.',
      'The same payment sent again answers 200 with the same ticket and no token.'
    ].join('\n\n'),
    security: [{ x402: [] }],
    parameters: [ref('parameters', 'DurationMonths'), ref('parameters', 'UploadSize')],
    responses: {
      200: response('The same payment sent again: its ticket, no token.', schema('UploadTicket'), { Location: ref('headers', 'Location') }),
      201: response('The ticket, paid and settled.', schema('UploadTicket'), {
        Location: ref('headers', 'Location'),
        'PAYMENT-RESPONSE': ref('headers', 'PaymentResponse'),
        ...tokenHeaders()
      }),
      400: failure('X-Pin-Duration-Months or X-Upload-Size is malformed, or the price would exceed the service\'s maximum price.'),
      402: paymentRequired('No payment, or it is malformed, does not match the quote, was refused, could not be settled, or was already used for another request; no ticket was issued.'),
      411: failure('X-Upload-Size was not sent: a ticket is priced on it.'),
      413: failure(`X-Upload-Size is over the limit (${o.uploadMaxBytes} bytes of file).`),
      503: writesUnavailable(', or the block storage is unreachable (no ticket is sold then; the payment was not used)')
    }
  })
}

function ticketOp (): Obj {
  return operation('get', {
    id: 'getUploadTicket',
    tag: 'upload',
    summary: 'An upload ticket of the caller\'s wallet',
    description: 'Whether it was used, and until when it can be. Another wallet\'s ticket is not found (404).',
    security: [{ bearer: [] }],
    parameters: [{ name: 'ticket', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
    responses: {
      200: response('The ticket.', schema('UploadTicket')),
      401: unauthorized('No bearer token, or an invalid one.'),
      404: failure('No such ticket for this wallet.')
    }
  })
}

function uploadFileOp (o: OpenApiInput): Obj {
  return operation('post', {
    id: 'upload',
    tag: 'upload',
    summary: 'Upload a file and pin it (paid)',
    description: [
      `\`multipart/form-data\` with exactly one part, a file named \`file\`, of at most ${o.uploadMaxBytes} bytes. Imported as UnixFS with IPIP-499's \`${UNIXFS_PROFILE}\` CID profile (CIDv1, raw leaves, 1 MiB chunks, balanced DAG of up to 1024 links per node, a one-chunk file its raw leaf): any implementation of the profile computes the same CID before paying.`,
      'A **CAR** (CARv1 or CARv2) as the part, with content type `application/vnd.ipld.car` or `?format=car`, is pinned as the DAG it holds: it must name exactly one root and hold the root\'s whole DAG; every block is hash-checked against its CID as it streams (codecs dag-pb, raw, dag-cbor, dag-json, json; sha2-256 or sha2-512; identity CIDs need no block), a block is at most 2 MiB, blocks sent twice are kept once and blocks the root does not reach are not kept. Priced, limited and pinned as a file on the CAR\'s bytes; the pin is the root. A CAR that is truncated, has a block that does not match its CID, misses a block of the DAG or does not hold its root is refused (400, naming the first bad or missing CID) before the payment settles: nothing is charged or kept.',
      'The 402 challenge is quoted on `X-Upload-Size` (the file size) when sent, else on `Content-Length` (framing included); neither → 411. The paid request may carry at most that many file bytes: the cap is enforced on the bytes streamed (413, nothing kept).',
      'With `X-Upload-Ticket` (a prepaid ticket, `POST /upload/tickets`) and the payer\'s wallet token instead of a payment, the file may carry up to the ticket\'s bytes (413 past them, the ticket still usable) and its blocks go to the block store while the body arrives; claiming the ticket and recording the pin are one transaction, so a ticket makes one pin. Another wallet\'s token answers 403, an unknown ticket 404, a used one (or one another upload is using right now) 409, an expired one 410. A failed upload leaves the ticket usable; the 201 carries no `PAYMENT-RESPONSE` and no token (the caller has one).',
      'Paid per request, nothing is stored until the payment is settled. The same payment presented again for the same content answers 200 with the original pin (`replayed: true`) and no new token. A payment already used is known from the request head: it takes no upload slot, its body is hashed (never stored), may be at most the original file plus multipart framing, and must arrive within 10 s plus 1 s per 256 KiB of the original; a head that cannot be the same upload is refused at once and its connection closed without reading the body.'
    ].join('\n\n'),
    security: [{ x402: [] }, { bearer: [] }],
    parameters: [ref('parameters', 'DurationMonths'), ref('parameters', 'UploadSize'), ticketParameter(), { name: 'format', in: 'query', required: false, description: `\`car\`: the file part is a CAR whose DAG is pinned as it is (as its content type \`application/vnd.ipld.car\` says too). \`directory\`: every part named \`file\` (1 to ${MAX_DIRECTORY_FILES}), each part's filename its relative path, becomes one UnixFS directory (the same profile; HAMT-sharded above 256 KiB of estimated block bytes), pinned by its root; the response lists each file's CID. Paths: \`/\`-separated, relative, no empty, \`.\` or \`..\` segment, none twice, none both a file and a directory (400 otherwise). The byte limit counts all files.`, schema: { type: 'string', enum: ['car', 'directory'] } }],
    requestBody: {
      required: true,
      content: {
        'multipart/form-data': {
          schema: schema('UploadRequest'),
          encoding: { file: { contentType: '*/*' } }
        }
      }
    },
    responses: {
      200: response('A retry with a payment already settled for this very content: the original pin, `replayed: true`, no token (get one with Sign-In with Ethereum).', schema('UploadResult')),
      201: response('Pinned (`status: pinned`).', schema('UploadResult'), {
        Location: ref('headers', 'Location'),
        'PAYMENT-RESPONSE': ref('headers', 'PaymentResponse'),
        ...tokenHeaders()
      }),
      400: failure('The body is not multipart/form-data with one part named `file` (or is malformed or truncated, or the client aborted), X-Pin-Duration-Months, X-Upload-Size or Content-Length is malformed, the price would exceed the service\'s maximum price, or a CAR cannot be pinned (the details name the problem and the first bad or missing CID).'),
      401: unauthorized('With X-Upload-Ticket: no bearer token, or an invalid one.'),
      403: failure('With X-Upload-Ticket: the ticket was bought by another wallet.'),
      404: failure('With X-Upload-Ticket: no such ticket.'),
      409: failure('With X-Upload-Ticket: the ticket was used already, or another upload is using it right now.'),
      410: failure('With X-Upload-Ticket: the ticket has expired.'),
      402: paymentRequired('No payment (and no X-Upload-Ticket), or it is malformed, does not match the quote, was refused (`INSUFFICIENT_FUNDS` when that is the reason), could not be settled, or was already used for other content; nothing was pinned or kept.'),
      408: failure('A request re-sending a payment already used did not send its body in time (`REQUEST_TIMEOUT`); the connection is closed.'),
      411: failure('Neither X-Upload-Size nor Content-Length was sent, so the upload cannot be priced.'),
      451: legalReasons('The file (its root, or a block of it) is denied by this service. Its CID is known only once it is read, so this answers the paid request, after the payment was verified and before it is settled: the payer is not charged and nothing is kept.'),
      413: failure(`The declared size is over the limit (${o.uploadMaxBytes} bytes of file), or the file streamed (or the whole body, multipart framing included, past 64 KiB over it) is larger than the limit or than the size declared and paid for; nothing was kept.`),
      503: writesUnavailable(', as many paid uploads as the operator allows are already streaming (`SERVICE_UNAVAILABLE`, `Retry-After: 5`; the payment was not used and can be sent again), or as many re-sent used payments as are checked at once')
    }
  })
}
