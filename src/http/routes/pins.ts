/**
 * /pins, the Pinning Service API: create (paid with x402, or with an
 * operator token), list, inspect, replace and remove pins. Owner endpoints
 * take a wallet token; another owner's requestid is a 404, never a 403.
 */
import type { IncomingMessage } from 'node:http'
import type { TokenService, VerifiedToken } from '../../auth/tokens.js'
import { NotFoundError } from '../../errors.js'
import type { PinRecord } from '../../ledger/records.js'
import { PAYMENT_HEADER } from '../../payment/gate.js'
import { createPin, type PinCreateDeps, type PinOutcome } from '../../service/pin-create.js'
import { parsePinRequest } from '../../service/pin-request.js'
import { renewPin } from '../../service/pin-renew.js'
import { readJson } from '../json-body.js'
import type { PinLedger } from '../../ledger/pins.js'
import { listPins, parsePinQuery } from '../../service/pin-query.js'
import { toPinStatus, type PinStatus } from '../../service/pin-status.js'
import { withDenial } from '../../service/denials.js'
import type { Refusal } from '../../service/serve-policy.js'
import type { CID } from 'multiformats/cid'
import { bearer } from '../bearer.js'
import { byteCount, DURATION_HEADER, parseMonths, PIN_SIZE_HEADER } from '../write-headers.js'
import { sendJson } from '../respond.js'
import type { Router } from '../router.js'

export interface PinRoutesDeps {
  ledger: PinLedger
  tokens: TokenService
  delegates(): string[]
  create: PinCreateDeps
  cancelFetch(requestid: string): void
  /** the client's address (rate limits' notion: X-Forwarded-For from trusted proxies only) */
  clientOf(req: IncomingMessage): string
  /** why a pin's CID is denied: its owner sees it in the PinStatus (service/denials.ts withDenial) */
  refusal?: (cid: CID) => Refusal | undefined
}

export function pinRoutes (router: Router, d: PinRoutesDeps): void {
  const shown = (status: PinStatus): PinStatus => d.refusal != null ? withDenial(status, d.refusal) : status
  router.add('GET', '/pins', async ({ req, res, url }) => {
    const { owner } = await bearer(req, d.tokens)
    const q = parsePinQuery(url.searchParams)
    const { count, results } = listPins(d.ledger, owner, q)
    const delegates = d.delegates()
    sendJson(res, 200, { count, results: results.map(p => shown(toPinStatus(p, delegates))) })
  })

  const ownPin = (owner: string, requestid: string) => {
    const pin = d.ledger.get(requestid)
    if (pin == null || pin.owner !== owner || pin.removed != null || (!d.ledger.isLive(pin) && pin.status !== 'failed')) {
      throw new NotFoundError(`no pin with requestid ${requestid.slice(0, 100)} for this owner`)
    }
    return pin
  }

  router.add('GET', '/pins/:requestid', async ({ req, res, params }) => {
    const { owner } = await bearer(req, d.tokens)
    sendJson(res, 200, shown(toPinStatus(ownPin(owner, params.requestid as string), d.delegates())))
  })

  router.add('DELETE', '/pins/:requestid', async ({ req, res, params, countAsPaid }) => {
    const { owner } = await bearer(req, d.tokens)
    const pin = ownPin(owner, params.requestid as string)
    await d.ledger.remove(pin.requestid, 'unpinned')
    d.cancelFetch(pin.requestid)
    countAsPaid()
    res.writeHead(202, { 'content-length': 0 })
    res.end()
  })

  const write = async (req: IncomingMessage, replaces?: (owner: string) => PinRecord): Promise<PinOutcome> => {
    const request = parsePinRequest(await readJson(req))
    const months = parseMonths(req.headers[DURATION_HEADER], d.create.prices.maxMonths)
    const claimedBytes = byteCount(req, PIN_SIZE_HEADER, 'X-Pin-Size must be a whole number of bytes (the size of the whole DAG)')
    // a token is optional on POST /pins (operator tokens pin without paying) and required to replace
    const auth = replaces != null || req.headers.authorization != null ? await bearer(req, d.tokens) : undefined
    const paymentHeader = req.headers[PAYMENT_HEADER]
    return await createPin({
      request,
      months,
      ...(claimedBytes != null ? { claimedBytes } : {}),
      ...(typeof paymentHeader === 'string' ? { paymentHeader } : {}),
      ...(auth != null ? { auth } : {}),
      client: d.clientOf(req),
      ...(replaces != null ? { replaces: replaces((auth as VerifiedToken).owner) } : {})
    }, d.create)
  }

  // a write answered without an error was paid for (or made with an operator token)
  router.add('POST', '/pins', async ({ req, res, countAsPaid }) => {
    const r = await write(req)
    countAsPaid()
    sendJson(res, 202, r.pin, outcomeHeaders(r))
  })

  router.add('POST', '/pins/:requestid/renew', async ({ req, res, params, countAsPaid }) => {
    const auth = await bearer(req, d.tokens)
    const months = parseMonths(req.headers[DURATION_HEADER], d.create.prices.maxMonths)
    const paymentHeader = req.headers[PAYMENT_HEADER]
    const r = await renewPin({ requestid: params.requestid as string, months, auth, ...(typeof paymentHeader === 'string' ? { paymentHeader } : {}) }, d.create)
    countAsPaid()
    sendJson(res, 200, r.pin, outcomeHeaders(r))
  })

  router.add('POST', '/pins/:requestid', async ({ req, res, params, countAsPaid }) => {
    const r = await write(req, (owner) => ownPin(owner, params.requestid as string))
    countAsPaid()
    sendJson(res, 202, r.pin, outcomeHeaders(r))
  })
}

function outcomeHeaders (r: PinOutcome): Record<string, string> {
  return {
    ...(r.settlement != null ? { 'payment-response': r.settlement } : {}),
    ...(r.location != null ? { location: r.location } : {}),
    ...(r.token != null ? { 'x-wallet-auth-token': r.token.token, 'x-wallet-auth-token-expires': r.token.expiresAt.toISOString() } : {})
  }
}
