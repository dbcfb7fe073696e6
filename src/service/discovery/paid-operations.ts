/**
 * The paid operations, as every discovery channel names them: the
 * `/.well-known/x402` list, the OpenAPI document's `x-payment-info`,
 * llms.txt and the landing page. The bazaar extension of their 402s is
 * declared beside the routes (src/http/paid-routes.ts).
 */
import type { AcceptedNetwork } from '../../kernel/accepted-network.js'
import type { PaidRoutes } from '../../payment/bazaar.js'
import { describeFormula, formatUsdc, type PriceSettings } from '../../payment/pricing.js'

export interface PaidOperation {
  key: keyof PaidRoutes
  method: 'POST'
  /** the OpenAPI path (`{param}`) */
  path: string
  /** the route with `:param` segments (the bazaar's routeTemplate), for parameterised paths */
  routeTemplate?: string
  operationId: string
  summary: string
  /** what the price is computed on, in a line */
  priceModel: string
  /** the headers it takes besides PAYMENT-SIGNATURE */
  headers: string[]
}

export const PAID_OPERATIONS: readonly PaidOperation[] = [
  { key: 'pin', method: 'POST', path: '/pins', operationId: 'addPin', summary: 'Pin a CID (IPFS Pinning Service API)', priceModel: 'the DAG size its root block declares (or X-Pin-Size when larger), per month', headers: ['X-Pin-Duration-Months', 'X-Pin-Size'] },
  { key: 'replace', method: 'POST', path: '/pins/{requestid}', routeTemplate: '/pins/:requestid', operationId: 'replacePinByRequestId', summary: 'Replace one of your pins with another CID', priceModel: 'as POST /pins, for the new CID', headers: ['Authorization', 'X-Pin-Duration-Months', 'X-Pin-Size'] },
  { key: 'renew', method: 'POST', path: '/pins/{requestid}/renew', routeTemplate: '/pins/:requestid/renew', operationId: 'renewPinByRequestId', summary: 'Add months to one of your pins', priceModel: 'the pin\'s size, per added month', headers: ['Authorization', 'X-Pin-Duration-Months'] },
  { key: 'upload', method: 'POST', path: '/upload', operationId: 'upload', summary: 'Upload a file (or a CAR, or a directory) and pin it', priceModel: 'X-Upload-Size (else Content-Length), per month', headers: ['X-Pin-Duration-Months', 'X-Upload-Size'] },
  { key: 'ticket', method: 'POST', path: '/upload/tickets', operationId: 'buyUploadTicket', summary: 'Buy a prepaid, single-use upload ticket', priceModel: 'X-Upload-Size, per month (as POST /upload)', headers: ['X-Pin-Duration-Months', 'X-Upload-Size'] }
]

/** one accepted payment network as the discovery documents name it (docs/networks.md) */
export type { AcceptedNetwork }

/** The MCP endpoint's tools (POST /mcp, src/http/mcp/tools.ts), as the discovery documents name them; `paid`: the HTTP operation it is priced as. */
export interface McpToolSummary { name: string, summary: string, paid?: PaidOperation['key'] }

export const MCP_PATH = '/mcp'

export const MCP_TOOLS: readonly McpToolSummary[] = [
  { name: 'pin_cid', summary: 'Pin a CID (as POST /pins)', paid: 'pin' },
  { name: 'upload_content', summary: 'Upload small content inline and pin it (as POST /upload)', paid: 'upload' },
  { name: 'replace_pin', summary: 'Replace one of your pins (as POST /pins/{requestid})', paid: 'replace' },
  { name: 'renew_pin', summary: 'Add months to one of your pins (as POST /pins/{requestid}/renew)', paid: 'renew' },
  { name: 'get_price_quote', summary: 'The price of pin_cid, upload_content or renew_pin, free' },
  { name: 'get_pin', summary: 'One of your pins and its status, free' },
  { name: 'list_pins', summary: 'Your pins, with the Pinning Service API filters, free' },
  { name: 'get_usage', summary: 'Your pins by status, bytes pinned and what you paid, free' },
  { name: 'delete_pin', summary: 'Remove one of your pins, free' }
]

/** what the discovery documents say about this service's payments */
export interface DiscoveryInput {
  publicUrl: string
  /** the first accepted network (or the configured one while payments are off) */
  network: string
  asset: string
  assetName: string
  payTo?: string
  /** every accepted network, the first as above; named in each document when there are several */
  accepts?: readonly AcceptedNetwork[]
  prices: PriceSettings
  uploadMaxBytes: number
  /** the subdomain gateway's content origins, `{scheme}://{cid}.ipfs.{domain}{:port}/` (--gateway-domain) */
  siteOrigin?: string
}

/** the links every discovery document gives, by name */
export function discoveryLinks (publicUrl: string): Record<'landing' | 'openapi' | 'agentCard' | 'llmsTxt' | 'x402', string> {
  return {
    landing: `${publicUrl}/`,
    openapi: `${publicUrl}/openapi.json`,
    agentCard: `${publicUrl}/.well-known/agent-card.json`,
    llmsTxt: `${publicUrl}/llms.txt`,
    x402: `${publicUrl}/.well-known/x402`
  }
}

/** the price model of every paid operation: the OpenAPI `x-payment-info`, and each entry of /.well-known/x402 */
export function paymentInfo (op: PaidOperation, d: Pick<DiscoveryInput, 'network' | 'asset' | 'payTo' | 'prices' | 'accepts'>): Record<string, unknown> {
  return {
    protocol: 'x402',
    x402Version: 2,
    scheme: 'exact',
    network: d.network,
    asset: d.asset,
    ...(d.payTo != null ? { payTo: d.payTo } : {}),
    // several networks: each (network, asset, payTo, EIP-712 domain); the price is the same number of atomic units in each
    ...(d.accepts != null && d.accepts.length > 1 ? { accepts: acceptsList(d.accepts) } : {}),
    price: {
      model: 'bytes-months',
      basis: op.priceModel,
      formula: describeFormula(d.prices),
      ratePerGbMonth: d.prices.rate.toString(),
      minimum: d.prices.minimum.toString(),
      maximum: d.prices.maximum.toString(),
      unit: 'atomic units of the asset (10^-6 USDC)',
      minimumUsdc: formatUsdc(d.prices.minimum),
      maxMonths: d.prices.maxMonths
    }
  }
}

/** the accepted networks as x402 names a requirement's terms (amount aside) */
export function acceptsList (accepts: readonly AcceptedNetwork[]): Array<Record<string, unknown>> {
  return accepts.map(a => ({ scheme: 'exact', network: a.network, asset: a.asset, payTo: a.payTo, extra: { name: a.assetName, version: a.assetVersion } }))
}

/** the accepted networks in words: `eip155:167000` (asset `0x…` to `0x…`), … */
export function networksInWords (d: Pick<DiscoveryInput, 'network' | 'asset' | 'assetName' | 'payTo' | 'accepts'>, code: (s: string) => string = s => `\`${s}\``): string {
  const all = d.accepts != null && d.accepts.length > 0 ? d.accepts : [{ network: d.network, asset: d.asset, assetName: d.assetName, payTo: d.payTo }]
  return all.map(a => `network ${code(a.network)}, asset ${code(a.asset)} (${a.assetName}, 6 decimals)${a.payTo != null ? `, paid to ${code(a.payTo)}` : ''}`).join('; or ')
}

/** GET /.well-known/x402: the paid resources */
export function x402Resources (d: DiscoveryInput): Record<string, unknown> {
  const url = d.publicUrl
  return {
    version: 1,
    x402Version: 2,
    resources: PAID_OPERATIONS.filter(op => op.routeTemplate == null).map(op => `${url}${op.path}`),
    items: PAID_OPERATIONS.map(op => ({
      method: op.method,
      resource: `${url}${op.path}`,
      ...(op.routeTemplate != null ? { routeTemplate: op.routeTemplate } : {}),
      operationId: op.operationId,
      description: op.summary,
      headers: op.headers,
      payment: paymentInfo(op, d)
    })),
    mcp: {
      endpoint: `${url}${MCP_PATH}`,
      transport: 'streamable-http',
      tools: MCP_TOOLS.map(t => {
        const op = t.paid != null ? PAID_OPERATIONS.find(o => o.key === t.paid) : undefined
        return { tool: t.name, description: t.summary, ...(op != null ? { payment: paymentInfo(op, d) } : {}) }
      }),
      instructions: 'x402 over MCP: a paid tool called without payment answers isError with the PaymentRequired in structuredContent; call it again with the PaymentPayload in _meta["x402/payment"]. Each 402-equivalent carries the bazaar extension with input.type "mcp".'
    },
    instructions: `Send the request without payment: the 402 carries the terms in PAYMENT-REQUIRED (base64 JSON, x402 v2, with the bazaar extension describing the request) and in its JSON body${d.accepts != null && d.accepts.length > 1 ? `; its accepts list one entry per network (${d.accepts.map(a => a.network).join(', ')}): pay on any one` : ''}. Sign an EIP-3009 authorization of exactly that amount and retry with PAYMENT-SIGNATURE. Details: ${url}/llms.txt`,
    links: discoveryLinks(url)
  }
}
