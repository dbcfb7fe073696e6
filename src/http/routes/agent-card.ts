import { sendJson } from '../respond.js'
import type { Router } from '../router.js'
import { operation, ref, response, schema, type Obj, type PathItems } from '../openapi-parts.js'

export function agentCardRoutes (router: Router, card: Record<string, unknown>): void {
  for (const path of ['/.well-known/agent.json', '/.well-known/agent-card.json']) {
    router.add('GET', path, ({ res }) => {
      sendJson(res, 200, card, { 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*' })
    })
  }
}

// ---- the OpenAPI description of these routes (src/http/openapi.ts) ----------

export function agentCardOperations (): PathItems {
  return {
    '/.well-known/agent.json': { get: agentCardOp('getAgentCard', '/.well-known/agent-card.json') },
    '/.well-known/agent-card.json': { get: agentCardOp('getAgentCardA2A', '/.well-known/agent.json') }
  }
}

function agentCardOp (id: string, alias: string): Obj {
  return operation('get', {
    id,
    tag: 'service',
    summary: 'A2A AgentCard',
    description: `The A2A AgentCard (protocol 0.3.0): skills, URL, and the x402 extension (network, asset, pricing) in \`capabilities.extensions\`. Same document as \`${alias}\`.`,
    responses: { 200: response('The agent card.', schema('AgentCard'), { 'Cache-Control': ref('headers', 'CacheControlPublic') }) }
  })
}
