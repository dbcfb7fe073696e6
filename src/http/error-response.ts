/**
 * The one place where a thrown error becomes an HTTP response, through the
 * error catalog (./error-catalog.ts). Known errors carry their status and
 * reason; anything else is a 500 whose details never include internals
 * (they go to the log instead).
 */
import type { ServerResponse } from 'node:http'
import type { Logger } from '../kernel/log.js'
import { errorAnswer } from './error-catalog.js'
import { sendAnswer } from './respond.js'

export { errorBody } from './error-catalog.js'

export function sendError (res: ServerResponse, err: unknown, log: Logger): void {
  if (res.headersSent) {
    // too late for a status: cut the response so the client sees it failed
    log.warn('error after response started', { error: describe(err) })
    res.destroy()
    return
  }
  const a = errorAnswer(err)
  if (a.fault === true) log.error('internal error', { error: describe(err) })
  sendAnswer(res, a)
}

function describe (err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`
  return String(err)
}
