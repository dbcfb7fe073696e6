/**
 * x402's `bazaar` discovery extension (spec: extensions-bazaar.md), declared
 * with @x402/extensions' own helpers: each paid route says how it is called
 * (method, body type, the JSON Schema of its body, its headers, an output
 * example) so that a bazaar-aware facilitator can catalogue it. A route's
 * declaration is built once at start; the per-request part (the method, and
 * for a parameterised route its `routeTemplate` and `pathParams`) is added by
 * the library's enrichDeclaration, once per challenge the gate builds (the
 * gate keeps built challenges: see gate.ts).
 */
import { bazaarResourceServerExtension, declareDiscoveryExtension } from '@x402/extensions/bazaar'

export type Json = Record<string, unknown>

/** what a paid route declares */
export interface PaidRouteSpec {
  /** a stable name (pin, replace, renew, upload, ticket) */
  key: string
  method: 'POST'
  /** the route, `:param` for each parameter (e.g. /pins/:requestid) */
  route: string
  bodyType: 'json' | 'form-data'
  /** an example body, and the JSON Schema of the body (its `examples` are requests pind accepts) */
  body: Json
  bodySchema: Json
  /** example header values, and a JSON Schema per header */
  headers: Record<string, string>
  headerSchemas: Record<string, Json>
  /** headers every request must send */
  requiredHeaders?: string[]
  output: { example: Json }
}

/**
 * One paid route's bazaar declaration; `extensionsFor(path)` gives the
 * `extensions` of a 402 for a request to `path` (the same object for every
 * request to a static route).
 */
export class PaidRoute {
  readonly key: string
  readonly method: string
  readonly route: string
  /** `{ bazaar: … }` as declared, before the request's method and path are added */
  readonly declared: Json
  private readonly dynamic: boolean
  private staticExtensions: Json | undefined

  constructor (s: PaidRouteSpec) {
    this.key = s.key
    this.method = s.method
    this.route = s.route
    this.dynamic = s.route.includes(':')
    const declared = declareDiscoveryExtension({
      bodyType: s.bodyType,
      input: s.body,
      inputSchema: s.bodySchema,
      output: { example: s.output.example }
    }) as unknown as { bazaar: { info: { input: Json }, schema: { properties: { input: { properties: Json, required: string[] } } } } }
    // the helper declares no headers: they go into the info and its schema alike (the schema forbids unknown input fields)
    const b = declared.bazaar
    b.info.input.headers = s.headers
    b.schema.properties.input.properties.headers = {
      type: 'object',
      properties: s.headerSchemas,
      ...(s.requiredHeaders != null && s.requiredHeaders.length > 0 ? { required: s.requiredHeaders } : {}),
      additionalProperties: { type: 'string' }
    }
    if (s.requiredHeaders != null && s.requiredHeaders.length > 0) b.schema.properties.input.required.push('headers')
    this.declared = declared
  }

  /** the `extensions` of a 402 for a request to `path` (the route's path with its parameters filled in) */
  extensionsFor (path: string): Json {
    if (!this.dynamic && this.staticExtensions != null) return this.staticExtensions
    const context = { method: this.method, routePattern: this.route, adapter: { getPath: () => path } }
    const enriched = { bazaar: bazaarResourceServerExtension.enrichDeclaration?.(this.declared.bazaar, context) ?? this.declared.bazaar }
    if (!this.dynamic) this.staticExtensions = enriched
    return enriched
  }
}

/** the paid routes' declarations, by route */
export interface PaidRoutes {
  pin: PaidRoute
  replace: PaidRoute
  renew: PaidRoute
  upload: PaidRoute
  ticket: PaidRoute
}
