import type { HealthReport } from '../../service/health/health.js'
import type { ReadyReport } from '../../service/health/readiness.js'
import { ShuttingDownError } from '../../kernel/errors.js'
import { JsonText, sendJson } from '../respond.js'
import type { Router } from '../router.js'
import { operation, response, schema, type Obj, type PathItems } from '../openapi-parts.js'

/** GET /health: liveness (ledger, blockstore, libp2p). GET /ready: and paid writes can work (for load balancers). */
export function healthRoutes (router: Router, check: () => Promise<HealthReport>, ready?: () => Promise<ReadyReport>, draining?: () => boolean): void {
  // a passing report is given again while nothing in it changes (service/health/health.ts): serialized once
  let last: { report: HealthReport, body: JsonText } | undefined
  router.add('GET', '/health', async ({ res }) => {
    const report = await check()
    if (last?.report !== report) last = { report, body: new JsonText(JSON.stringify(report)) }
    sendJson(res, report.status === 'ok' ? 200 : 503, last.body)
  })
  if (ready != null) {
    router.add('GET', '/ready', async ({ res }) => {
      // a stop has begun: the balancer takes this front end out while it still serves what it is sent
      if (draining?.() === true) throw new ShuttingDownError('draining: this front end is stopping; it still serves requests until it closes', 5)
      const report = await ready()
      sendJson(res, report.status === 'ready' ? 200 : 503, report)
    })
  }
}

// ---- the OpenAPI description of these routes (src/http/openapi.ts) ----------

export function healthOperations (): PathItems {
  return { '/health': { get: healthOp() }, '/ready': { get: readyOp() } }
}

function healthOp (): Obj {
  return operation('get', {
    id: 'getHealth',
    tag: 'service',
    summary: 'Liveness with real checks',
    description: 'The ledger answers a read, the block store takes a write (a file in blocks/, or an object in the S3 bucket; with S3 the local staging folder too), libp2p is started. A 503 names the failing check. Answers within about a second: a check still running after 0.75 s is answered with its last outcome (it fails once it has run for 5 s), so a block store that stopped answering never holds the answer.',
    responses: {
      200: response('Every check passed.', schema('Health')),
      503: response('A check failed (`status: failing`; the failing check carries `error`, a short public message: the error itself is logged), or the server is starting or shutting down (a Failure).', { anyOf: [schema('Health'), schema('Failure')] })
    }
  })
}

function readyOp (): Obj {
  return operation('get', {
    id: 'getReady',
    tag: 'service',
    summary: 'Readiness for load balancers: alive and able to take paid writes',
    description: 'The health checks plus `payments`, whose `state` is `ready`, `low-balance` (works; the settler needs gas soon), `starting`, `no-pay-to`, `no-facilitator`, `unreachable` (the RPC or facilitator does not answer), `unfunded` (the settler cannot pay gas) or `asset-misconfigured`. A node whose payments cannot work is alive (`/health` 200) but not ready (503).',
    responses: {
      200: response('Every check passed, payments included.', schema('Ready')),
      503: response('A check failed (`status: not-ready`; the failing check carries `error`), or the server is draining before a stop (a Failure whose `details` begin `draining`: still serving every other request) or shutting down (a Failure).', { anyOf: [schema('Ready'), schema('Failure')] })
    }
  })
}
