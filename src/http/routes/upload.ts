import { ReplayRefusedError, UnavailableError } from '../../errors.js'
import { upload, type FileReader, type UploadDeps } from '../../service/upload.js'
import { PAYMENT_HEADER } from '../../payment/gate.js'
import { errorAnswer } from '../error-catalog.js'
import { byteCount, DURATION_HEADER, parseMonths, UPLOAD_SIZE_HEADER } from '../write-headers.js'
import { readSingleFile } from '../multipart.js'
import { answerUnread, sendJson } from '../respond.js'
import type { Router } from '../router.js'

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
