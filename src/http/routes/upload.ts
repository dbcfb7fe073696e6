import { ReplayRefusedError, UnavailableError } from '../../errors.js'
import { parseMonths, DURATION_HEADER } from '../../service/terms.js'
import { upload, type UploadDeps } from '../../service/upload.js'
import { PAYMENT_HEADER } from '../../payment/gate.js'
import { errorAnswer } from '../error-catalog.js'
import { answerUnread, sendJson } from '../respond.js'
import type { Router } from '../router.js'

/** POST /upload: multipart, one part named "file"; paid with x402. */
export function uploadRoutes (router: Router, deps: Omit<UploadDeps, 'gate'> & { gate?: UploadDeps['gate'] }): void {
  router.add('POST', '/upload', async ({ req, res, countAsPaid }) => {
    const months = parseMonths(req.headers[DURATION_HEADER], deps.prices.maxMonths)
    if (deps.gate == null) throw new UnavailableError('payments are not configured on this server (no pay-to address or facilitator); writes are disabled', 3600)
    const paymentHeader = req.headers[PAYMENT_HEADER]
    let r
    try {
      r = await upload(req, months, typeof paymentHeader === 'string' ? paymentHeader : undefined, { ...deps, gate: deps.gate })
    } catch (err) {
      if (err instanceof ReplayRefusedError) { answerUnread(req, res, errorAnswer(err)); return }
      throw err
    }
    countAsPaid() // answered without an error: it was paid
    sendJson(res, r.status, r.body, r.headers)
  })
}
