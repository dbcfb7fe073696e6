/**
 * The owner side of the Pinning Service API: list, inspect and remove your
 * pins with a wallet token. Another owner's requestid is a 404, never a 403.
 */
import type { TokenService } from '../../auth/tokens.js'
import { HttpError, notFound } from '../../errors.js'
import type { PinLedger } from '../../ledger/pins.js'
import { listPins, parsePinQuery } from '../../service/pin-query.js'
import { toPinStatus } from '../../service/pin-status.js'
import { isLive } from '../../ledger/records.js'
import { bearer } from '../bearer.js'
import { sendJson } from '../respond.js'
import type { Router } from '../router.js'

export interface PinRoutesDeps {
  ledger: PinLedger
  tokens: TokenService
  delegates(): string[]
}

export function pinRoutes (router: Router, d: PinRoutesDeps): void {
  router.add('GET', '/pins', async ({ req, res, url }) => {
    const { owner } = await bearer(req, d.tokens)
    const q = parsePinQuery(url.searchParams)
    const { count, results } = listPins(d.ledger, owner, q)
    const delegates = d.delegates()
    sendJson(res, 200, { count, results: results.map(p => toPinStatus(p, delegates)) })
  })

  const ownPin = (owner: string, requestid: string) => {
    const pin = d.ledger.get(requestid)
    if (pin == null || pin.owner !== owner || pin.removed != null || (!isLive(pin) && pin.status !== 'failed')) {
      throw notFound(`no pin with requestid ${requestid.slice(0, 100)} for this owner`)
    }
    return pin
  }

  router.add('GET', '/pins/:requestid', async ({ req, res, params }) => {
    const { owner } = await bearer(req, d.tokens)
    sendJson(res, 200, toPinStatus(ownPin(owner, params.requestid as string), d.delegates()))
  })

  router.add('DELETE', '/pins/:requestid', async ({ req, res, params }) => {
    const { owner } = await bearer(req, d.tokens)
    const pin = ownPin(owner, params.requestid as string)
    await d.ledger.remove(pin.requestid, 'unpinned')
    res.writeHead(202, { 'content-length': 0 })
    res.end()
  })

  const notYet = (): never => {
    throw new HttpError(501, 'NOT_IMPLEMENTED', 'pinning by CID (POST /pins) is not available in this version yet; upload files with POST /upload')
  }
  router.add('POST', '/pins', notYet)
  router.add('POST', '/pins/:requestid', notYet)
}
