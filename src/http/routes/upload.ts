import { ReplayRefusedError, UnavailableError } from '../../errors.js'
import { upload, type FileReader, type UploadDeps } from '../../service/upload.js'
import { PAYMENT_HEADER } from '../../payment/gate.js'
import { errorAnswer } from '../error-catalog.js'
import { byteCount, DURATION_HEADER, parseMonths, UPLOAD_SIZE_HEADER } from '../write-headers.js'
import { readSingleFile } from '../multipart.js'
import { answerUnread, sendJson } from '../respond.js'
import type { Router } from '../router.js'
import { failure, legalReasons, operation, paymentRequired, ref, response, schema, tokenHeaders, type Obj, type OpenApiInput, type PathItems, writesUnavailable } from '../openapi-parts.js'

/** POST /upload: multipart, one part named "file"; paid with x402. */
export function uploadRoutes (router: Router, deps: Omit<UploadDeps, 'gate'> & { gate?: UploadDeps['gate'] }): void {
  router.add('POST', '/upload', async ({ req, res, countAsPaid }) => {
    const months = parseMonths(req.headers[DURATION_HEADER], deps.prices.maxMonths)
    if (deps.gate == null) throw new UnavailableError('payments are not configured on this server (no pay-to address or facilitator); writes are disabled', 3600)
    const paymentHeader = req.headers[PAYMENT_HEADER]
    // the price is based on X-Upload-Size (the file's bytes), else on Content-Length (the whole body's)
    const fileBytes = typeof req.headers[UPLOAD_SIZE_HEADER] === 'string' ? byteCount(req, UPLOAD_SIZE_HEADER, 'X-Upload-Size must be a whole number of bytes') : undefined
    const bodyBytes = byteCount(req, 'content-length', fileBytes != null ? undefined : 'Content-Length must be a whole number of bytes')
    const file: FileReader = async (consume, limits) => await readSingleFile(req, async (f) => await consume({ name: f.filename, bytes: f.stream }), limits)
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

// ---- the OpenAPI description of this route (src/http/openapi.ts) -----------

export function uploadOperations (o: OpenApiInput): PathItems {
  return { '/upload': { post: uploadFileOp(o) } }
}

function uploadFileOp (o: OpenApiInput): Obj {
  return operation('post', {
    id: 'upload',
    tag: 'upload',
    summary: 'Upload a file and pin it (paid)',
    description: [
      `\`multipart/form-data\` with exactly one part, a file named \`file\`, of at most ${o.uploadMaxBytes} bytes. Imported as UnixFS: CIDv1, raw leaves, 1 MiB chunks, balanced DAG.`,
      'The 402 challenge is quoted on `X-Upload-Size` (the file size) when sent, else on `Content-Length` (framing included); neither → 411. The paid request may carry at most that many file bytes: the cap is enforced on the bytes streamed (413, nothing kept).',
      'Nothing is stored until the payment is settled. The same payment presented again for the same content answers 200 with the original pin (`replayed: true`) and no new token. A payment already used is known from the request head: it takes no upload slot, its body is hashed (never stored), may be at most the original file plus multipart framing, and must arrive within 10 s plus 1 s per 256 KiB of the original; a head that cannot be the same upload is refused at once and its connection closed without reading the body.'
    ].join('\n\n'),
    security: [{ x402: [] }],
    parameters: [ref('parameters', 'DurationMonths'), ref('parameters', 'UploadSize')],
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
      400: failure('The body is not multipart/form-data with one part named `file` (or is malformed or truncated, or the client aborted), X-Pin-Duration-Months, X-Upload-Size or Content-Length is malformed, or the price would exceed the service\'s maximum price.'),
      402: paymentRequired('No payment, or it is malformed, does not match the quote, was refused (`INSUFFICIENT_FUNDS` when that is the reason), could not be settled, or was already used for other content; nothing was pinned or kept.'),
      408: failure('A request re-sending a payment already used did not send its body in time (`REQUEST_TIMEOUT`); the connection is closed.'),
      411: failure('Neither X-Upload-Size nor Content-Length was sent, so the upload cannot be priced.'),
      451: legalReasons('The file (its root, or a block of it) is denied by this service. Its CID is known only once it is read, so this answers the paid request, after the payment was verified and before it is settled: the payer is not charged and nothing is kept.'),
      413: failure(`The declared size is over the limit (${o.uploadMaxBytes} bytes of file), or the file streamed (or the whole body, multipart framing included, past 64 KiB over it) is larger than the limit or than the size declared and paid for; nothing was kept.`),
      503: writesUnavailable(', as many paid uploads as the operator allows are already streaming (`SERVICE_UNAVAILABLE`, `Retry-After: 5`; the payment was not used and can be sent again), or as many re-sent used payments as are checked at once')
    }
  })
}
