/**
 * The one place where a thrown error becomes an HTTP response. Known errors
 * carry their status and reason; anything else is a 500 whose details never
 * include internals (they go to the log instead).
 */
import type { ServerResponse } from 'node:http'
import { HttpError } from '../errors.js'
import type { Logger } from '../log.js'
import { sendJson } from './respond.js'

export function errorBody (reason: string, details: string): { error: { reason: string, details: string } } {
  return { error: { reason, details } }
}

export function sendError (res: ServerResponse, err: unknown, log: Logger): void {
  if (res.headersSent) {
    // too late for a status: cut the response so the client sees it failed
    log.warn('error after response started', { error: describe(err) })
    res.destroy()
    return
  }
  if (err instanceof HttpError) {
    sendJson(res, err.status, err.bodyBytes(), err.headers)
    return
  }
  log.error('internal error', { error: describe(err) })
  sendJson(res, 500, errorBody('INTERNAL_SERVER_ERROR', 'the server failed to handle this request; it has been logged'))
}

function describe (err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`
  return String(err)
}
