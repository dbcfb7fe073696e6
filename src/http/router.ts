/**
 * A minimal method + path router. Patterns are literal segments, `:name`
 * parameters, or a trailing `*` that captures the rest of the path.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { NotFoundError, OperationNotAllowedError } from '../kernel/errors.js'
import type { Logger } from '../kernel/log.js'

export interface RequestContext {
  req: IncomingMessage
  res: ServerResponse
  url: URL
  params: Record<string, string>
  log: Logger
  /** set by the route for the request log line (e.g. '/pins/:requestid') */
  route: string
  /**
   * A write that turned out paid (a verified payment) or authorized (a valid
   * token that needs no payment) calls this: it then does not count against
   * its client's unpaid-write limit. Anything else does, whatever it carried.
   */
  countAsPaid(): void
}

export type Handler = (ctx: RequestContext) => Promise<void> | void

interface Route { method: string, pattern: string, segments: string[], handler: Handler, implicit?: true }

/**
 * Requests routed by their Host rather than their path (the subdomain gateway's content origins):
 * `route` answers with the handler for the request, or undefined when its host is not one of these.
 */
export interface HostRoute {
  /** the route's name in the request log and metrics */
  pattern: string
  route(req: IncomingMessage, url: URL): Handler | undefined
}

export class Router {
  private readonly routes: Route[] = []
  private hostRoute: HostRoute | undefined

  /** Routes requests by Host first (one such route at most). */
  byHost (route: HostRoute): this {
    if (this.hostRoute != null) throw new Error('a router takes one host route')
    this.hostRoute = route
    return this
  }

  /** The handler the request's Host chooses, before any path route; undefined when none does. */
  matchHost (req: IncomingMessage, url: URL): { handler: Handler, pattern: string } | undefined {
    if (this.hostRoute == null) return undefined
    const handler = this.hostRoute.route(req, url)
    return handler == null ? undefined : { handler, pattern: this.hostRoute.pattern }
  }

  add (method: string, pattern: string, handler: Handler): this {
    this.routes.push({ method, pattern, segments: split(pattern), handler })
    if (method === 'GET') this.routes.push({ method: 'HEAD', pattern, segments: split(pattern), handler, implicit: true })
    return this
  }

  /** The routes added, in order (the HEAD every GET answers too is implied, not listed). */
  list (): Array<{ method: string, pattern: string }> {
    return this.routes.filter(r => r.implicit !== true).map(r => ({ method: r.method, pattern: r.pattern }))
  }

  /** Finds the handler; throws 404 or 405 (with Allow) when none fits. */
  match (method: string, pathname: string): { handler: Handler, params: Record<string, string>, pattern: string } {
    const parts = split(pathname)
    const allowed: string[] = []
    for (const r of this.routes) {
      const params = matchSegments(r.segments, parts)
      if (params == null) continue
      if (r.method === method) return { handler: r.handler, params, pattern: r.pattern }
      allowed.push(r.method)
    }
    if (allowed.length > 0) {
      const allow = [...new Set([...allowed, 'OPTIONS'])].join(', ')
      if (method === 'OPTIONS') {
        // what this resource supports (CORS preflights are answered before routing)
        return { handler: ({ res }) => { res.writeHead(204, { allow, 'content-length': '0' }); res.end() }, params: {}, pattern: 'OPTIONS *' }
      }
      throw new OperationNotAllowedError(`${method} is not supported here; use ${allow}`, allow)
    }
    throw new NotFoundError(`no such endpoint: ${pathname}`)
  }
}

function split (path: string): string[] {
  return path.split('/').filter(s => s !== '')
}

/** a literal route's (and a miss's) parameters: none, one object for all (read only) */
const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>

/** the parameters when `parts` fit `pattern`; made only for a route that has some (a miss allocates nothing) */
function matchSegments (pattern: string[], parts: string[]): Record<string, string> | undefined {
  if (parts.length < pattern.length) {
    // only a trailing `*` may go without a part of its own
    if (pattern[parts.length] !== '*') return undefined
  }
  let params: Record<string, string> | undefined
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i] as string
    if (p === '*') {
      params ??= {}
      params['*'] = parts.slice(i).join('/')
      return params
    }
    const part = parts[i]
    if (part == null) return undefined
    if (p.charCodeAt(0) === 58 /* : */) {
      if (part === '') return undefined
      params ??= {}
      params[p.slice(1)] = part
    } else if (p !== part) {
      return undefined
    }
  }
  return parts.length === pattern.length ? params ?? NO_PARAMS : undefined
}
