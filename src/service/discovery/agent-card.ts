/**
 * The A2A AgentCard (protocol 0.3.0) that lets agents discover pind: what it
 * does (skills), where (url), and how it is paid (the x402 extension in
 * capabilities.extensions). No secret is ever part of it.
 */
import { z } from 'zod/v4'
import { describeFormula, formatUsdc, type PriceSettings } from '../../payment/pricing.js'
import { VERSION } from '../../kernel/version.js'
import { UNIXFS_PROFILE } from '../../ipfs/import.js'
import { PIN_PRICING_RULE } from '../pins/pin-create.js'
import { acceptsList, discoveryLinks, MCP_PATH, MCP_TOOLS, PAID_OPERATIONS, type AcceptedNetwork } from './paid-operations.js'

export const A2A_PROTOCOL_VERSION = '0.3.0'
export const X402_A2A_EXTENSION = 'https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2'

const strings = z.array(z.string())

const Skill = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  tags: strings.optional(),
  examples: strings.optional(),
  inputModes: strings.optional(),
  outputModes: strings.optional()
})

/** the agent card, loosely (OpenAPI: AgentCard, derived from this) */
export const AgentCard = z.looseObject({
  protocolVersion: z.string().meta({ examples: [A2A_PROTOCOL_VERSION] }),
  name: z.string(),
  description: z.string().optional(),
  url: z.url(),
  version: z.string(),
  documentationUrl: z.url().optional(),
  capabilities: z.record(z.string(), z.unknown()).meta({ description: 'extensions holds the x402 extension with network, asset and pricing' }),
  securitySchemes: z.record(z.string(), z.unknown()).optional(),
  skills: z.array(Skill)
}).meta({ description: 'A2A AgentCard (loosely described; see the A2A protocol 0.3.0)' })

export interface AgentCardInput {
  publicUrl: string
  network: string
  asset: string
  assetName: string
  assetVersion: string
  payTo?: string
  /** every accepted network (the first as above): listed in the x402 extension when there are several */
  accepts?: readonly AcceptedNetwork[]
  prices: PriceSettings
  uploadMaxBytes: number
  /** the subdomain gateway's content origins, `{scheme}://{cid}.ipfs.{domain}{:port}/` (--gateway-domain) */
  siteOrigin?: string
  /** how the node is reachable on the IPFS network */
  p2p?: { peerId: string, multiaddrs: string[], routing: string[], provideStrategy: string }
}

export function buildAgentCard (c: AgentCardInput): z.output<typeof AgentCard> {
  const url = c.publicUrl
  return {
    protocolVersion: A2A_PROTOCOL_VERSION,
    name: 'pind',
    description: 'Paid IPFS pinning for agents: pin a CID or upload a file, pay per request in USDC over x402 (no account, no API key), fetch content back from the gateway. Pins follow the IPFS Pinning Service API v1.0.0.',
    url,
    preferredTransport: 'HTTP+JSON',
    version: VERSION,
    documentationUrl: `${url}/openapi.json`,
    provider: { organization: 'pind operator', url },
    capabilities: {
      streaming: false,
      pushNotifications: false,
      stateTransitionHistory: false,
      extensions: [{
        uri: X402_A2A_EXTENSION,
        description: `Write calls (${PAID_OPERATIONS.map(op => `${op.method} ${op.path}`).join(', ')}) are paid per request with x402 v2: answer the 402 challenge in the PAYMENT-REQUIRED header (it carries the bazaar discovery extension) and retry with PAYMENT-SIGNATURE. The paid resources: params.discovery.x402.`,
        required: true,
        params: {
          x402Version: 2,
          scheme: 'exact',
          network: c.network,
          asset: c.asset,
          assetName: c.assetName,
          assetVersion: c.assetVersion,
          assetDecimals: 6,
          ...(c.payTo != null ? { payTo: c.payTo } : {}),
          // several networks: each with its asset, payee and EIP-712 domain (the same price in each asset's atomic units)
          ...(c.accepts != null && c.accepts.length > 1 ? { accepts: acceptsList(c.accepts) } : {}),
          pricing: {
            formula: describeFormula(c.prices),
            ratePerGbMonth: c.prices.rate.toString(),
            minimum: c.prices.minimum.toString(),
            maximum: c.prices.maximum.toString(),
            unit: 'atomic USDC (10^-6)',
            minimumUsd: formatUsdc(c.prices.minimum),
            maxMonths: c.prices.maxMonths,
            durationHeader: 'X-Pin-Duration-Months',
            pinsByCid: PIN_PRICING_RULE
          },
          // where the rest is described: for people, for language models, as OpenAPI, as an x402 resource list
          discovery: discoveryLinks(url)
        }
      }]
    },
    securitySchemes: {
      walletToken: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'The x-wallet-auth-token returned by any paid write; owner endpoints (GET/DELETE /pins) need it.'
      }
    },
    defaultInputModes: ['application/json', 'multipart/form-data'],
    defaultOutputModes: ['application/json', 'application/octet-stream'],
    skills: [
      {
        id: 'pin-by-cid',
        name: 'Pin a CID',
        description: `POST ${url}/pins with {"cid": "..."} (IPFS Pinning Service API). Paid via x402; the content is fetched in the background from the given origins${c.p2p != null && !c.p2p.routing.includes('none') ? ' and from providers found on the IPFS network (origins are optional)' : ' (origins are needed: this node does not search the IPFS network)'}.`,
        tags: ['ipfs', 'pinning', 'x402', 'storage'],
        examples: [`POST /pins {"cid":"bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi","name":"site"} with header X-Pin-Duration-Months: 6`],
        inputModes: ['application/json'],
        outputModes: ['application/json']
      },
      {
        id: 'upload',
        name: 'Upload and pin a file',
        description: `POST ${url}/upload as multipart/form-data with one part named "file" (at most ${c.uploadMaxBytes} bytes). Files are imported with the ${UNIXFS_PROFILE} CID profile (IPIP-499: CIDv1, raw leaves, 1 MiB chunks, balanced, 1024 links per node), so the CID can be computed before paying; a CAR (part type application/vnd.ipld.car) is pinned as the DAG it holds. Paid via x402; answers with the CID, a gateway URL and a wallet token.`,
        tags: ['ipfs', 'upload', 'x402', 'storage'],
        examples: ['curl -F file=@report.pdf -H "X-Pin-Duration-Months: 12" <url>/upload (with an x402 client)'],
        inputModes: ['multipart/form-data'],
        outputModes: ['application/json']
      },
      {
        id: 'retrieve',
        name: 'Retrieve content',
        description: `GET ${url}/ipfs/{cid}[/path] — free, with Range and ETag support; ?format=raw|car for verifiable (trustless) responses.${c.siteOrigin != null ? ` Websites: a directory upload is served at ${c.siteOrigin} (CIDv1 base32; an origin of its own, index.html, _redirects), where /ipfs/{cid} on the gateway domain redirects.` : ''}`,
        tags: ['ipfs', 'gateway', 'retrieval'],
        examples: ['GET /ipfs/bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'],
        inputModes: ['text/plain'],
        outputModes: ['application/octet-stream', 'application/vnd.ipld.car', 'application/vnd.ipld.raw']
      },
      ...(c.p2p != null ? [ipfsSkill(c.p2p)] : []),
      {
        id: 'mcp',
        name: 'MCP tools',
        description: `${url}${MCP_PATH}: an MCP server (streamable HTTP, stateless) with the same operations as tools: ${MCP_TOOLS.map(t => t.name).join(', ')}. Paid tools are paid per call with x402's MCP transport (PaymentRequired in the result's structuredContent, the payment in _meta["x402/payment"]).`,
        tags: ['mcp', 'ipfs', 'pinning', 'x402'],
        examples: [`{"mcpServers":{"pind":{"url":"${url}${MCP_PATH}"}}}`],
        inputModes: ['application/json'],
        outputModes: ['application/json']
      },
      {
        id: 'manage-pins',
        name: 'Manage pins',
        description: 'List (GET /pins with cid, name, status, before/after, limit, meta filters), inspect (GET /pins/{requestid}), replace (POST /pins/{requestid}) and remove (DELETE /pins/{requestid}) your pins with the wallet token as Bearer credential.',
        tags: ['ipfs', 'pinning', 'management'],
        examples: ['GET /pins?status=pinned&limit=50 with Authorization: Bearer <x-wallet-auth-token>'],
        inputModes: ['application/json'],
        outputModes: ['application/json']
      }
    ]
  }
}

/** How other IPFS nodes reach what is pinned here. */
function ipfsSkill (p: NonNullable<AgentCardInput['p2p']>): z.output<typeof Skill> {
  const announced = p.routing.includes('dht')
  return {
    id: 'ipfs-network',
    name: 'Fetch pinned content over IPFS',
    description: announced
      ? `Every live pin (${p.provideStrategy === 'all' ? 'each of its blocks' : 'its root CID'}) is announced on the public IPFS DHT (Amino, /ipfs/kad/1.0.0) by peer ${p.peerId}: any IPFS node (Kubo, Helia, a public gateway) finds it by CID and fetches it over bitswap. Direct addresses: ${p.multiaddrs.join(', ') || '(none)'}.`
      : `Pinned content is not announced on the IPFS DHT. Fetch it from this service's gateway (GET /ipfs/{cid}) or over bitswap from peer ${p.peerId} at ${p.multiaddrs.join(', ') || '(no address)'} (the delegates in each PinStatus).`,
    tags: ['ipfs', 'bitswap', 'dht', 'retrieval'],
    examples: [`ipfs routing findprovs <cid>${announced ? '' : ' (finds nothing: routing is off on this node)'}`, `ipfs swarm connect ${p.multiaddrs[0] ?? `/ip4/<host>/tcp/4001/p2p/${p.peerId}`}`],
    inputModes: ['text/plain'],
    outputModes: ['application/vnd.ipld.raw']
  }
}
