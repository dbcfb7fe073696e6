import { sendJson } from '../respond.js'
import type { Router } from '../router.js'

export function agentCardRoutes (router: Router, card: Record<string, unknown>): void {
  for (const path of ['/.well-known/agent.json', '/.well-known/agent-card.json']) {
    router.add('GET', path, ({ res }) => {
      sendJson(res, 200, card, { 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*' })
    })
  }
}
