import client from 'prom-client'
import { describe, expect, it } from 'vitest'
import { RequestTally } from '../../../src/metrics/request-tally.js'

const BOUNDS = [0.001, 0.01, 0.1, 1]

describe('request tally', () => {
  it('shows what prom-client\'s own counter and histogram would for the same requests', async () => {
    const ours = new client.Registry()
    const tally = new RequestTally(BOUNDS)
    for (const m of tally.metrics()) ours.registerMetric(m)
    const theirs = new client.Registry()
    const count = new client.Counter({ name: 'pind_http_requests_total', help: 'HTTP requests by method, route pattern and status', labelNames: ['method', 'route', 'status'], registers: [theirs] })
    const time = new client.Histogram({ name: 'pind_http_request_duration_seconds', help: 'HTTP request duration', labelNames: ['method', 'route'], buckets: BOUNDS, registers: [theirs] })
    const requests: Array<[string, string, number, number]> = [
      ['GET', '/health', 200, 0.0004], ['GET', '/health', 200, 0.001], ['GET', '/health', 503, 0.2],
      ['POST', '/pins', 402, 0.003], ['POST', '/pins', 202, 5], ['GET', '', 404, 0.01], ['GET', '/pins/:id', 200, 0.05]
    ]
    for (const [method, route, status, seconds] of requests) {
      tally.add(method, route, status, seconds)
      const r = route === '' ? 'unmatched' : route
      count.inc({ method, route: r, status: String(status) })
      time.observe({ method, route: r }, seconds)
    }
    expect(await ours.metrics()).toBe(await theirs.metrics())
    expect(await ours.metrics()).toContain('pind_http_request_duration_seconds_bucket{le="0.001",method="GET",route="/health"} 2')
  })
})
